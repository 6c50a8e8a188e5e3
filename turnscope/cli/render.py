"""Rich renderings of verifier and bench results for the terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from turnscope.scoring.exercise import Exercise
from turnscope.scoring.outcome import Outcome
from turnscope.scoring.suites.scorecard_page import scorecard_note
from turnscope.scoring.verifier import COMPONENTS, PASS_FLOOR, failed_floors
from turnscope.use_cases.scorecard_files import scorecard_html, write_scorecard_page

__all__ = [
    "outcome_table",
    "score_cell",
    "scorecard_html",  # the page's, for the tests that read it beside the tables
    "scorecard_table",
    "verdict_table",
    "write_scorecard_page",
]


def _verdict_text(passed: bool) -> Text:
    return Text("PASS", style="bold green") if passed else Text("FAIL", style="bold red")


def verdict_table(
    scored: Mapping[str, Any],
    *,
    title: str = "verdict",
    exercise: Mapping[str, Exercise] | None = None,
    failures: Sequence[str] = (),
    failing: Mapping[str, str] | None = None,
    degraded: bool = False,
) -> Group:
    """The sub-scores against their floors (a failing one says why: ``failing``), what was
    not exercised, then the verdict, the failing floors and any other reason it failed; on
    ``degraded`` evidence the verdict line says it is not one to trust."""
    result = scored["result"]
    table = Table(title=title, title_justify="left")
    table.add_column("dimension")
    table.add_column("score", justify="right")
    table.add_column(f"floor {PASS_FLOOR}")
    components = result.get("components") or {}
    unexercised = []
    for name in COMPONENTS:
        if name not in components:
            continue
        ok = result["pass_fail"].get(f"{name}_floor")
        evidence = (exercise or {}).get(name)
        note = evidence.note() if evidence else ""
        if evidence is not None and not evidence.exercised:
            unexercised.append(name)
            cell: Text | str = Text(note, "yellow")
        elif not ok:
            why = "; ".join(w for w in ((failing or {}).get(name), note) if w)
            cell = Text("FAILED" + (f": {why}" if why else ""), "red")
        else:
            cell = "met" + (f" ({note})" if note else "")
        table.add_row(name, f"{components[name]:.3f}", cell)
    passed = bool(result["pass_fail"].get("voice")) and not failures
    failed = failed_floors(result)
    line = Text.assemble(
        "verdict: ",
        _verdict_text(passed),
        f"  scalar {result['scalar']:.3f}",
        f"  failed floor: {', '.join(failed)}" if failed else "",
        f"  ({'; '.join(failures) if failures else result['explanation']})",
    )
    if passed and unexercised:
        line.append(f"  not exercised: {', '.join(unexercised)}", style="yellow")
    if degraded:  # a pass or a fail on evidence the run itself says is degraded
        line.append("  on degraded evidence, not to be trusted (why: below)", style="bold yellow")
    return Group(table, line)


def outcome_table(outcome: Outcome, *, title: str = "verdict", degraded: bool = False) -> Group:
    """``verdict_table`` of an outcome: its verifier result, exercise and failures."""
    return verdict_table(outcome.verifier, title=title, exercise=outcome.exercise,
                         failures=outcome.failures, failing=outcome.failing,
                         degraded=degraded)  # fmt: skip


def score_cell(value: float | None, note: str = "") -> Text | str:
    """A score as a table cell: its note (yellow, e.g. "not exercised") where it has one."""
    if note:
        return Text(note, "yellow")
    return "-" if value is None else f"{value:.3f}"


def scorecard_table(card: Mapping[str, Any]) -> Table:
    """Tags as rows, dimensions as columns (WER: lower is better)."""
    dims = card["dimensions"]
    table = Table(title="scorecard (per tag)", title_justify="left")
    table.add_column("tag", overflow="fold")
    table.add_column("scored/void", justify="right")
    for d in dims:
        table.add_column(
            d + (" (lower=better)" if d in card.get("lower_is_better", []) else ""), justify="right"
        )
    for tag, row in card["tags"].items():
        c = card["counts"][tag]
        cells = [score_cell(row.get(d), scorecard_note(card, tag, d)) for d in dims]
        table.add_row(tag, f"{c['scored']}/{c['void']}", *cells)
    return table
