"""`turnscope fixture add`: turn a captured call into a recorded fixture, so a miss found once
can never silently return (``turnscope.use_cases.fixture_add``)."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.console import say
from turnscope.scoring.suites.defaults import TAGS

app = typer.Typer(help="Manage suite fixtures.", no_args_is_help=True)


@app.command("add", short_help="Add a run's call to a suite as a fixture (audio, reference).")
def add(
    bundle: Path = typer.Argument(..., help="A run folder (bundle) from call, replay or demo."),
    suite: Path = typer.Option(..., "--suite", help="The suite JSON to add the fixture to."),
    tags: str = typer.Option(..., "--tags", help=f"Comma-separated, from: {', '.join(TAGS)}."),
    task_id: str | None = typer.Option(None, "--id", help="Task id (default: the bundle name)."),
    reference: Path | None = typer.Option(
        None,
        "--reference",
        help="What was really said, for WER (default: the reference the run was scored with: a "
        "replay's --reference, a scenario's lines; without one, WER is not measured).",
    ),
    keep_degraded: bool = typer.Option(
        False,
        "--keep-degraded",
        help="Add a run whose evidence is degraded (interrupted, lost audio, a failed caller) "
        "as it is; without it such a run is refused.",
    ),
) -> int:
    """Copy the call's audio next to the suite, with its WER reference and contract, as a task.

    The WER reference is never the ASR's own transcript: it is --reference, else the one the run
    was scored with; a run that had none makes a fixture whose WER is not measured (said so).
    """
    from turnscope.use_cases.fixture_add import add_fixture

    tag_list = [t.strip() for t in tags.split(",") if t.strip()]
    added = add_fixture(bundle, suite, tag_list, task_id=task_id, reference=reference,
                        keep_degraded=keep_degraded)  # fmt: skip
    tid = added.task_id
    say(f"added task {tid!r} to {suite} ({added.audio}, tags {', '.join(added.tags)})")
    if added.reference_source is not None:
        say(f"WER reference: {added.reference_source}")
    else:
        say(
            f"no WER reference for {tid!r}: the run had none (only the ASR's own transcript), so "
            "its WER is not measured; give what was said with --reference FILE"
        )
    return 0


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="fixture")
