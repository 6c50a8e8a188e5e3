"""Scoring: the temporal verifier (unchanged semantics), bench suites, WER, reports.

The names below load on first use, so importing one scoring module (the CLI's ``score``) does
not import the bench suites too.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

_WHERE = {
    "BenchError": "turnscope.errors",
    "run_bench": "turnscope.scoring.suites.bench",
    "score_voice_episode": "turnscope.scoring.verifier",
}
__all__ = sorted(_WHERE)


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_WHERE[name]), name)
