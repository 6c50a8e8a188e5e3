"""Scoring: the temporal verifier (unchanged semantics), bench suites, WER, reports."""

from turnscope.errors import BenchError
from turnscope.scoring.suites.bench import run_bench
from turnscope.scoring.verifier import score_voice_episode

__all__ = ["BenchError", "run_bench", "score_voice_episode"]
