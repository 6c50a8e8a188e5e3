"""Bench suites: suites, run_bench, fixtures, per-tag scorecards, the CI gate."""
