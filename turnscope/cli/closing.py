"""The lines a run ends with (call, replay, demo): the verdict, what the script exercised, the
latency split, which ASR model transcribed it, and where its report is (the last line, so that
it is what a terminal leaves in view)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from turnscope.cli.console import fail_line, out, say, warn_line
from turnscope.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from turnscope.runner import RunOutput
    from turnscope.use_cases.call_run import CallRun

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


def report_call(call: CallRun, *, model: str) -> int:
    """Print the verdict, what the script exercised, how the call ended, the ASR model and
    (last) the report's path; the exit code."""
    from turnscope.cli.render import outcome_table
    from turnscope.use_cases.call_run import call_summary

    run = call.run
    for w in run.result.warnings:
        warn_line(w)
    out.print(outcome_table(run.outcome, degraded=bool(call.degraded)))
    s = call_summary(run, call.script)
    if s.exercised:
        say("; ".join(f"{e.exercised} of {e.planned} planned {e.kind.replace('_', '-')} "
                      "exercised" for e in s.exercised))  # fmt: skip
    if s.latency_split is not None:
        x = s.latency_split
        out.print(
            f"latency split ({x.source}, {x.split} of {x.replies} replies, median): "
            + " / ".join(f"{k} {v:.0f}" for k, v in x.medians.items())
            + " ms",
            soft_wrap=True,
        )
    say(f"{s.turns} turns, {s.backchannels} backchannels, {s.seconds:.1f} s of call; "
        f"wrote {run.outdir}")  # fmt: skip
    return _closing_lines(run, model, call.degraded)


def report_replay(run: RunOutput, *, model: str) -> int:
    """Print a replay's verdict, its WER, what was heard, the ASR model and (last) the report's
    path; the exit code."""
    from turnscope.cli.render import outcome_table

    r = run.result
    for w in r.warnings:
        warn_line(w)
    if r.channels_alike is None:  # else not scored: the degraded line says why
        out.print(outcome_table(run.outcome, degraded=bool(r.degraded)))
    if run.outcome.wer is not None and r.channels_alike is None:
        w = run.outcome.wer
        parts = [f"{ch} {s.wer:.3f}" for ch, s in w.per_channel.items() if s.wer is not None]
        overall = "-" if w.overall.wer is None else f"{w.overall.wer:.3f}"
        say(f"WER {overall} ({', '.join(parts)}; {w.overall.reference_words} reference words)")
    say(
        f"{len(r.assembly.turns)} turns, {len(r.assembly.backchannels)} backchannels, "
        f"{r.audio_ms / 1000:.1f} s of audio in {r.wall_s:.1f} s; wrote {run.outdir}"
    )
    return _closing_lines(run, model, r.degraded)


def _closing_lines(run: RunOutput, model: str, degraded: list[str]) -> int:
    """The ASR model, any degraded evidence, the report's path (last); the exit code."""
    say_asr(model)
    if degraded:
        fail_line("degraded evidence: " + "; ".join(degraded))
    say_report(run.outdir)
    if degraded:
        return ExitCode.INCOMPLETE
    return 0 if run.outcome.passed else 1
