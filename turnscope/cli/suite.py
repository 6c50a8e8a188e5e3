"""`turnscope suite init`: a minimal voice suite to add fixtures to, and what to do next."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from turnscope.cli.console import say
from turnscope.errors import InputError
from turnscope.use_cases.checks import PLAIN_ID

app = typer.Typer(help="Create voice suites.", no_args_is_help=True)

# scoring.suites.suite.SUITE_KIND, without importing the scoring stack for --help
# (tests/test_cli_suite.py checks the two agree).
SUITE_KIND = "agent-learning.bench-suite.v1"


def template(name: str) -> dict[str, Any]:
    """A suite with every key bench needs and no task yet; ``_example_task`` (ignored: JSON
    has no comments) shows a task's shape, to copy into ``tasks``."""
    return {
        "kind": SUITE_KIND,
        "control": "voice",
        "modality": "voice",
        "name": name,
        "version": "1",
        "description": f"{name}: calls to my voice agent that must keep passing.",
        "tasks": [],
        "_comment": (
            "Add tasks with `turnscope fixture add RUN --suite THIS --tags TAG` (a run folder of "
            "call, replay or demo), or by copying _example_task into tasks and editing it (it "
            "calls the shipped refund-call scenario live: bench THIS --agent URL). Paths are "
            "relative to this file. turnscope ignores keys that start with '_'."
        ),
        "_example_task": {
            "id": "refund-call",
            "instruction": "The caller asks for a refund; the agent states the 30 day window "
            "and yields when interrupted.",
            "budgets": {"max_latency_ms": 1200},
            "required_content": ["refund", "30"],
            "fixture": {
                "source": "recorded",
                "audio": "refund-call.yaml",
                "tags": ["conversational"],
            },
        },
    }


def suite_path(name: str) -> tuple[Path, str]:
    """``my-suite`` -> ``my-suite.json`` here; a path ending in .json as given; and the
    suite's name."""
    path = Path(name if name.endswith(".json") else f"{name}.json")
    if not PLAIN_ID.match(path.stem):
        raise InputError(
            f"{path.stem!r} is not a plain suite name (letters, digits, '.', '_' and '-')",
            fix="e.g. turnscope suite init my-suite",
        )
    return path, path.stem


@app.command("init", short_help="Write a minimal voice suite to add fixtures to.")
def init(
    name: str = typer.Argument(
        ..., help="The suite's name (writes NAME.json here), or the path of the JSON to write."
    ),
    force: bool = typer.Option(False, "--force", help="Replace a file already there."),
) -> int:
    """Write a minimal voice suite (kind, control, name, version, no tasks, an example task to
    copy) and print how to add a first task and bench it."""
    from turnscope.jsonio import write_json

    path, stem = suite_path(name)
    if path.exists() and not force:
        raise InputError("already exists", path=path, fix="pick another name, or pass --force")
    write_json(path, template(stem))
    say(f"wrote {path}: voice suite {stem!r} version 1, no tasks yet", markup=False)
    say("next:", markup=False)
    say("  1. record a call: turnscope demo -o runs/demo  (or turnscope call URL --scenario "
        "refund-call -o runs/first)", markup=False)  # fmt: skip
    say(f"  2. keep it as a task: turnscope fixture add runs/demo --suite {path} --tags "
        "conversational", markup=False)  # fmt: skip
    say(f"  3. bench it: turnscope bench {path}", markup=False)
    return 0


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="suite")
