"""`turnscope gate`: fail CI when a dimension drops on any tag; pin baselines on purpose
(``turnscope.use_cases.gate_run``)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from turnscope.cli.console import out, say
from turnscope.cli.options import number
from turnscope.errors import InputError
from turnscope.scoring.suites.defaults import DEFAULT_TOLERANCE

if TYPE_CHECKING:
    from turnscope.scoring.suites.gate import GateResult


def parse_floors(pairs: list[str]) -> dict[str, float]:
    """``DIMENSION=NUMBER`` overrides of the floors: a known dimension, a finite value in its
    range (0..1; WER's ceiling 0 or more)."""
    from turnscope.scoring.suites.gate import DEFAULT_FLOORS
    from turnscope.scoring.suites.scorecard import LOWER_IS_BETTER
    from turnscope.scoring.suites.turn_taking_gate import is_limit, limit_problem

    floors = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not sep or not math.isfinite(number):
            raise InputError(f"--floor {pair!r}: expected DIMENSION=NUMBER (e.g. latency=0.8)")
        if is_limit(name):  # a turn-taking metric, METRIC or METRIC@TAG
            if problem := limit_problem(name, number):
                raise InputError(f"--floor {pair!r}: {problem}")
            floors[name] = number
            continue
        if name not in DEFAULT_FLOORS:
            known = ", ".join(DEFAULT_FLOORS)
            raise InputError(f"--floor {pair!r}: no dimension {name!r} (one of {known})")
        high = math.inf if name in LOWER_IS_BETTER else 1.0
        if not 0.0 <= number <= high:
            raise InputError(f"--floor {pair!r}: {name}'s floor must be between 0 and {high:g}")
        floors[name] = number
    return floors


def gate_cmd(
    scorecard: Path = typer.Argument(..., help="The run's scorecard (or its bench result JSON)."),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        help="Pinned baseline scorecard (without: floors, task verdicts and exercise only).",
    ),
    tolerance: float | None = typer.Option(
        None,
        "--tolerance",
        help=f"Allowed drop against --baseline (default {DEFAULT_TOLERANCE}).",
        callback=number(0, 1),
    ),
    floor: list[str] = typer.Option([], "--floor", help="Override a floor: DIMENSION=NUMBER."),
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML here."),
    update_baseline: bool = typer.Option(
        False, "--update-baseline", help="Pin this run as the new baseline (on purpose)."
    ),
    keep_worst: bool = typer.Option(
        False, "--keep-worst", help="With --update-baseline: keep the baseline's worse values."
    ),
) -> int:
    """Exit 1 when a task failed its verdict or a floor, or any dimension on any tag is below
    its floor or worse than the baseline (the failing tasks are named, with or without a
    baseline); exit 0 otherwise.

    In CI, run `turnscope bench SUITE -o out/bench.json --no-fail` (failing tasks are recorded,
    the step passes) and then this command on out/bench.scorecard.json with --junit: the gate
    is the step that fails, and junit.xml is written either way.
    """
    from turnscope.use_cases.gate_run import check_gate, pin_baseline

    if baseline is None and (update_baseline or tolerance is not None):
        flag = "--update-baseline" if update_baseline else "--tolerance"  # said, not ignored
        raise InputError(f"{flag} needs --baseline FILE (the scorecard this run is held to)")
    if keep_worst and not update_baseline:
        raise InputError("--keep-worst needs --update-baseline (it is how a run is pinned)")
    tolerance = DEFAULT_TOLERANCE if tolerance is None else tolerance
    if update_baseline and baseline is not None:
        moved = pin_baseline(scorecard, baseline, tolerance=tolerance, floors=parse_floors(floor),
                             junit=junit, keep_worst=keep_worst).moved()  # fmt: skip
        for c in moved:
            say(c.change())
        kept = ", the worse of each value kept" if keep_worst else ""
        say(f"pinned {baseline} as the new baseline{kept}")
        return 0
    run = check_gate(scorecard, baseline=baseline, tolerance=tolerance, floors=parse_floors(floor),
                     junit=junit)  # fmt: skip
    if run.page_problem:
        say(run.page_problem)
    return show_verdict(run.verdict)


def show_verdict(verdict: GateResult) -> int:
    """Every cell that moved, every failure, and the closing line; the exit code."""
    from rich.text import Text

    def fail(line: str) -> None:
        out.print(Text(line, style="bold red"), soft_wrap=True)

    moved = verdict.moved()
    for tag, why in sorted(verdict.not_compared.items()):
        say(f"{tag}: its means not compared with the baseline: {why}")
    for c in sorted(moved, key=lambda c: (c.tag, c.dim)):  # as the page: a drop never green
        style = "bold red" if not c.passed else ("yellow" if c.worse else "green")
        out.print(Text(c.change(), style=style))
    failed = [c for c in verdict.cells if not c.passed]
    for c in failed:
        fail(f"FAIL {c.dim} on {c.tag}: " + "; ".join(c.failures))
    for problem in verdict.problems:
        fail(f"FAIL {problem}")
    bad_tasks = verdict.failed_tasks()
    for t in bad_tasks:
        tags = f" ({', '.join(t.tags)})" if t.tags else ""
        fail(f"FAIL task {t.task_id}{tags}: {t.detail()}")
    cells = len(verdict.cells)
    if not cells:
        say("gate FAILED: every task is void, so nothing was checked")
        return 1
    n = len(verdict.tasks)
    checked = f"{cells} dimension x tag checks" + (
        f" and {n} task{'s' if n != 1 else ''}" if n else ""
    )
    if verdict.passed:
        say(f"gate passed: {checked}, {len(moved)} moved")
        return 0
    named = f"; failed task(s): {', '.join(t.task_id for t in bad_tasks)}" if bad_tasks else ""
    say(f"gate FAILED: {len(failed) + len(verdict.problems) + len(bad_tasks)} of {checked}{named}")
    return 1


def register(app: typer.Typer) -> None:
    from turnscope.cli.examples import CI_EPILOG

    app.command(
        "gate", epilog=CI_EPILOG, short_help="Hold a scorecard to its floors and a pinned baseline."
    )(gate_cmd)
