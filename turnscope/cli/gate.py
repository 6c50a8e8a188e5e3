"""`turnscope gate`: fail CI when a dimension drops on any tag; pin baselines on purpose."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import typer
from rich.text import Text

from turnscope.cli.console import out, say
from turnscope.cli.options import number
from turnscope.errors import InputError

# turnscope.scoring.suites.gate.DEFAULT_TOLERANCE, without importing the scoring stack for
# --help (tests/test_cli_basics.py checks the two agree)
DEFAULT_TOLERANCE = 0.05


def load_scorecard(path: Path) -> dict[str, Any]:
    """A scorecard JSON, or the bench result it was written beside."""
    from turnscope.jsonio import SCORECARD_LIMITS, read_json

    data = read_json(path, what="scorecard file", limits=SCORECARD_LIMITS)
    if isinstance(data, dict) and data.get("kind") == "turnscope.scorecard.v1":
        return data
    sibling = path.with_suffix(".scorecard.json")
    if sibling.exists():
        return load_scorecard(sibling)
    raise InputError(
        "not a turnscope scorecard (kind turnscope.scorecard.v1)",
        path=path,
        fix="pass the .scorecard.json that `turnscope bench` wrote",
    )


def _suite_of(card: dict[str, Any]) -> str:
    suite = card.get("suite") or {}
    return f"{suite.get('name')!s} v{suite.get('version')!s}" if suite else "an unnamed suite"


def same_suite(card: dict[str, Any], pinned: dict[str, Any], run: Path, baseline: Path) -> None:
    """A baseline is only comparable with a run of the same suite and scorecard version."""
    if card.get("kind") != pinned.get("kind"):
        raise InputError(
            f"the baseline is a {pinned.get('kind')!r} scorecard, this run's ({run}) a "
            f"{card.get('kind')!r} one",
            path=baseline,
            fix="re-pin the baseline with this version (--update-baseline)",
        )
    if card.get("suite") and pinned.get("suite") and card["suite"] != pinned["suite"]:
        raise InputError(
            f"the baseline is of {_suite_of(pinned)}, this run ({run}) of {_suite_of(card)}",
            path=baseline,
            fix="gate each suite against its own baseline",
        )


def parse_floors(pairs: list[str]) -> dict[str, float]:
    """``DIMENSION=NUMBER`` overrides of the floors: a known dimension, a finite value in its
    range (0..1; WER's ceiling 0 or more)."""
    from turnscope.scoring.suites.gate import DEFAULT_FLOORS
    from turnscope.scoring.suites.scorecard import LOWER_IS_BETTER

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
        if name not in DEFAULT_FLOORS:
            known = ", ".join(DEFAULT_FLOORS)
            raise InputError(f"--floor {pair!r}: no dimension {name!r} (one of {known})")
        high = math.inf if name in LOWER_IS_BETTER else 1.0
        if not 0.0 <= number <= high:
            raise InputError(f"--floor {pair!r}: {name}'s floor must be between 0 and {high:g}")
        floors[name] = number
    return floors


def gate_cmd(
    result: Path = typer.Argument(..., help="The run's scorecard (or its bench result JSON)."),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        help="Pinned baseline scorecard (without: floors, task verdicts and exercise only).",
    ),
    tolerance: float = typer.Option(
        DEFAULT_TOLERANCE, "--tolerance", help="Allowed drop.", callback=number(0, 1)
    ),
    floor: list[str] = typer.Option([], "--floor", help="Override a floor: DIMENSION=NUMBER."),
    junit: Path | None = typer.Option(None, "--junit", help="Write JUnit XML here."),
    update_baseline: bool = typer.Option(
        False, "--update-baseline", help="Pin this run as the new baseline (on purpose)."
    ),
) -> int:
    """Exit 1 when a task failed its verdict or a floor, or any dimension on any tag is below
    its floor or worse than the baseline (the failing tasks are named, with or without a
    baseline); exit 0 otherwise.

    In CI, run `turnscope bench SUITE -o out/bench.json --no-fail` (failing tasks are recorded,
    the step passes) and then this command on out/bench.scorecard.json with --junit: the gate
    is the step that fails, and junit.xml is written either way.
    """
    from turnscope.jsonio import write_json, write_text
    from turnscope.outdir import output_file
    from turnscope.scoring.suites.gate import broken_cells, gate, junit_xml

    output_file(junit, "--junit")
    card = load_scorecard(result)
    if update_baseline and baseline is None:
        raise InputError("--update-baseline needs --baseline FILE (where to pin this run)")
    if update_baseline and baseline is not None:
        broken = broken_cells(card)
        if broken:
            raise InputError(
                f"will not pin cells that are not numbers: {', '.join(broken[:5])}",
                path=result,
                fix="fix the run that wrote this scorecard, then pin it",
            )
        previous = load_scorecard(baseline) if baseline.exists() else None
        if previous is not None:
            same_suite(card, previous, result, baseline)
        verdict = gate(card, previous, tolerance=tolerance, floors=parse_floors(floor))
        for c in verdict.moved():
            say(f"{c.dim} on {c.tag}: {c.baseline:.3f} -> {c.value:.3f} ({c.delta:+.3f})")
        pinned = {k: v for k, v in card.items() if k not in ("tasks", "runs")}
        write_json(baseline, pinned)
        say(f"pinned {baseline} as the new baseline")
        return 0
    pinned_card = load_scorecard(baseline) if baseline is not None else None
    if pinned_card is not None and baseline is not None:
        same_suite(card, pinned_card, result, baseline)
    verdict = gate(card, pinned_card, tolerance=tolerance, floors=parse_floors(floor))
    if baseline is not None:  # the page beside the scorecard shows what changed
        from turnscope.cli.render import gated_scorecard_page

        unwritten = gated_scorecard_page(
            result, card, baseline, floors=parse_floors(floor), tolerance=tolerance
        )
        if unwritten:
            say(unwritten)
    moved = verdict.moved()
    for c in sorted(moved, key=lambda c: (c.tag, c.dim)):
        style = "green" if c.passed else "bold red"
        out.print(
            Text(
                f"{c.dim} on {c.tag}: {c.baseline:.3f} -> {c.value:.3f} ({c.delta:+.3f})",
                style=style,
            )
        )
    failed = [c for c in verdict.cells if not c.passed]
    for c in failed:
        out.print(
            Text(f"FAIL {c.dim} on {c.tag}: " + "; ".join(c.failures), style="bold red"),
            soft_wrap=True,
        )
    for problem in verdict.problems:
        out.print(Text(f"FAIL {problem}", style="bold red"), soft_wrap=True)
    bad_tasks = verdict.failed_tasks()
    for t in bad_tasks:
        tags = f" ({', '.join(t.tags)})" if t.tags else ""
        out.print(
            Text(f"FAIL task {t.task_id}{tags}: " + "; ".join(t.failures), style="bold red"),
            soft_wrap=True,
        )
    if junit is not None:
        write_text(junit, junit_xml(verdict))
    cells = len(verdict.cells)
    if not cells:
        say("gate FAILED: every task is void, so nothing was checked")
        return 1
    checked = f"{cells} dimension x tag checks" + (
        f" and {len(verdict.tasks)} tasks" if verdict.tasks else ""
    )
    if verdict.passed:
        say(f"gate passed: {checked}, {len(moved)} moved")
        return 0
    named = f"; failed task(s): {', '.join(t.task_id for t in bad_tasks)}" if bad_tasks else ""
    say(f"gate FAILED: {len(failed) + len(verdict.problems) + len(bad_tasks)} of {checked}{named}")
    return 1


def register(app: typer.Typer) -> None:
    from turnscope.cli.bench import CI_EPILOG

    app.command("gate", epilog=CI_EPILOG)(gate_cmd)
