"""Runs spread over a Ray cluster with the pipeline that runs locally (`bench --ray`).

``cluster.py`` reaches (or starts) Ray quietly and offline; ``fixtures.py`` keeps one fixture
worker per share of each node's CPUs, each with its Whisper model loaded once, and hands them
the suite's fixtures, retrying a fixture whose worker died.
"""
