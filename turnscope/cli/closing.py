"""The lines a run ends with (call, replay, demo): which ASR model transcribed it, and where its
report is (the last line, so that it is what a terminal leaves in view)."""

from __future__ import annotations

from pathlib import Path

from turnscope.cli.console import say

BUNDLED = "tiny.en"  # asr/model.py's DEFAULT_MODEL (not imported: it pulls in the ASR stack)


def asr_line(model: str) -> str:
    """``ASR tiny.en (bundled); a larger one: --model PATH``, or the model given."""
    if model == BUNDLED:
        return (
            f"ASR {BUNDLED} (bundled, the smallest: a word it gets wrong may be the model's); "
            "a larger one: --model PATH"
        )
    return f"ASR {model}"


def say_asr(model: str) -> None:
    say(asr_line(model), markup=False)


def say_report(outdir: Path) -> None:
    """``report: PATH/report.html`` when the run wrote one (else where the run is)."""
    page = outdir / "report.html"
    if page.is_file():
        say(f"report: {page}", markup=False)
    else:
        say(f"run: {outdir} (no report.html: see report-error.txt there)", markup=False)
