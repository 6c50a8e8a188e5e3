"""`turnscope demo`: a real call against the bundled reference agent, on 127.0.0.1
(``turnscope.use_cases.demo``)."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.closing import report_call
from turnscope.cli.console import fail_line, out, say
from turnscope.cli.exit_codes import ExitCode
from turnscope.cli.options import PipelineOptions
from turnscope.errors import CallSetupError


def demo(
    output: Path | None = typer.Option(None, "-o", "--output", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Replace the run already in the -o folder."),
    scenario: Path | None = typer.Option(
        None,
        "--scenario",
        help="Scenario YAML, or a shipped scenario's name (default: refund-call).",
    ),
    signaling: str = typer.Option("smallwebrtc", "--signaling", help="smallwebrtc or whip."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live turn view."),
) -> int:
    """Start the reference agent, call it with the refund scenario (one barge-in), score it."""
    from turnscope.use_cases.demo import demo as run_demo

    settings = PipelineOptions().settings()

    def listening(base: str) -> None:
        say(f"reference agent listening on {base}; calling it ({signaling})")

    try:
        call = run_demo(outdir=output, force=force, scenario=scenario, signaling=signaling,
                        settings=settings, console=None if quiet else out,
                        on_listening=listening)  # fmt: skip
    except CallSetupError as exc:
        fail_line(f"the demo call could not be set up: {exc}")
        return ExitCode.INCOMPLETE
    return report_call(call, model=settings.asr.model)


def register(app: typer.Typer) -> None:
    app.command(
        "demo", short_help="Call the bundled reference agent and score the call (start here)."
    )(demo)
