"""`turnscope doctor`: a table of what the machine lacks, which feature needs it, and the fix."""

from __future__ import annotations

import json
from typing import Any

import typer
from rich.table import Table
from rich.text import Text

from turnscope.cli.console import out, say


def doctor(
    as_json: bool = typer.Option(False, "--json", help="Print the findings as JSON."),
    show_all: bool = typer.Option(False, "--all", help="Also list the checks that passed."),
) -> int:
    """Check the environment; exit 1 when something a default feature needs is missing."""
    from turnscope.doctor import run_checks

    findings = run_checks()
    blocking = [f for f in findings if not f.ok and f.check.default]
    if as_json:
        out.print_json(json.dumps({"ok": not blocking, "checks": [row(f) for f in findings]}))
        return 1 if blocking else 0
    missing = [f for f in findings if not f.ok]
    if missing or show_all:
        out.print(table(findings, show_all))
    # Fix commands go on lines of their own so they can be copied whole.
    for f in missing:
        say(f"fix {f.check.name}: {f.check.fix}", markup=False)
    say(
        f"{len(findings) - len(missing)}/{len(findings)} checks ok; "
        + (
            f"{len(blocking)} missing for default features"
            if blocking
            else "everything the default features need is present"
        )
    )
    return 1 if blocking else 0


def row(f: Any) -> dict[str, Any]:
    """A finding as `doctor --json` prints it."""
    return {
        "check": f.check.name,
        "ok": f.ok,
        "problem": f.problem,
        "class": f.check.problem_class,
        "feature": f.check.feature,
        "default_feature": f.check.default,
        "fix": f.check.fix,
    }


def table(findings: list[Any], show_all: bool) -> Table:
    """The findings that failed (every one with ``show_all``): check, status, needed by."""
    t = Table(title="turnscope doctor", title_justify="left")
    for col in ("check", "status", "needed by"):
        t.add_column(col, overflow="fold")
    for f in findings:
        if f.ok and not show_all:
            continue
        status = (
            Text("ok", "green")
            if f.ok
            else Text(
                f"{f.check.problem_class}: {f.problem}", "red" if f.check.default else "yellow"
            )
        )
        needed = f.check.feature + ("" if f.check.default else " (optional)")
        t.add_row(f.check.name, status, needed)
    return t


def register(app: typer.Typer) -> None:
    app.command("doctor", short_help="Check this machine has what turnscope needs.")(doctor)
