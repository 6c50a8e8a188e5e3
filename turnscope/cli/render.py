"""Rich renderings of verifier and bench results for the terminal."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from turnscope.scoring.exercise import NOT_EXERCISED, Exercise
from turnscope.scoring.outcome import Outcome
from turnscope.scoring.suites.scorecard_page import scorecard_note
from turnscope.scoring.verifier import COMPONENTS, PASS_FLOOR, failed_floors


def _verdict_text(passed: bool) -> Text:
    return Text("PASS", style="bold green") if passed else Text("FAIL", style="bold red")


def verdict_table(
    scored: Mapping[str, Any],
    *,
    title: str = "verdict",
    exercise: Mapping[str, Exercise] | None = None,
    failures: Sequence[str] = (),
) -> Group:
    """The four sub-scores with their floors, what the call did not exercise, then the verdict,
    the failing floors and any other reason it failed."""
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
            cell = Text("FAILED" + (f" ({note})" if note else ""), "red")
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
    return Group(table, line)


def outcome_table(outcome: Outcome, *, title: str = "verdict") -> Group:
    """``verdict_table`` of an outcome: its verifier result, exercise and failures."""
    return verdict_table(
        outcome.verifier, title=title, exercise=outcome.exercise, failures=outcome.failures
    )


def _cell(value: float | None, note: str = "") -> Text | str:
    if note:
        return Text(note, "yellow")
    return "-" if value is None else f"{value:.3f}"


def bench_table(
    result: Mapping[str, Any],
    exercise: Mapping[str, Mapping[str, Mapping[str, Any]]] | None = None,
) -> Group:
    """One row per task and the aggregate line; a dimension a task did not exercise (its
    ``exercise`` entry, {task_id: {dim: Exercise.to_dict()}}) reads "not exercised"."""
    table = Table(
        title=f"{result['dataset_name']} v{result['dataset_version']}", title_justify="left"
    )
    # Names wrap rather than being cut short ("refund-c…"): a narrow terminal still says which.
    table.add_column("task", overflow="fold")
    for name in COMPONENTS:
        table.add_column(name, justify="right")
    table.add_column("verdict")
    table.add_column("evidence", overflow="fold")
    for row in result["per_task"]:
        comps = row["result"].get("components") or {}
        seen = (exercise or {}).get(row["task_id"]) or {}
        cells = [
            _cell(
                comps.get(n),
                NOT_EXERCISED if n in comps and seen.get(n, {}).get("exercised") is False else "",
            )
            for n in COMPONENTS
        ]
        verdict = row["verdict"]
        style = {"pass": "green", "fail": "red"}.get(verdict, "yellow")
        table.add_row(row["task_id"], *cells, Text(verdict, style), row["evidence_class"])
    agg = result["aggregate"]
    line = Text(
        f"{agg['passed']}/{agg['scored']} scored tasks passed, {agg['void']} void, "
        f"pass_rate {agg['pass_rate']:.3f}, mean_score {agg['mean_score']:.3f}"
    )
    return Group(table, line)


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
        cells = [_cell(row.get(d), scorecard_note(card, tag, d)) for d in dims]
        table.add_row(tag, f"{c['scored']}/{c['void']}", *cells)
    return table


def scorecard_html(
    card: Mapping[str, Any],
    *,
    baseline: Mapping[str, Any] | None = None,
    baseline_name: str = "",
    here: Path | None = None,
    floors: Mapping[str, float] | None = None,
    tolerance: float | None = None,
) -> str:
    """The scorecard page (scoring/suites/scorecard_page.py): tags, tasks, the baseline."""
    from turnscope.scoring.suites.scorecard_page import DEFAULT_TOLERANCE, page

    return page(
        card,
        baseline=baseline,
        baseline_name=baseline_name,
        here=here,
        floors=floors,
        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
    )


def write_scorecard_page(
    card_path: Path,
    card: Mapping[str, Any],
    baseline_path: Path | None = None,
    *,
    floors: Mapping[str, float] | None = None,
    tolerance: float | None = None,
) -> Path:
    """``card_path``'s page beside it (``.html``), against ``baseline_path`` when given, else a
    baseline pinned next to it (``baseline.scorecard.json``) when there is one."""
    from turnscope.errors import TurnscopeError
    from turnscope.jsonio import SCORECARD_LIMITS, read_json, write_text
    from turnscope.scoring.suites.scorecard_page import pinned_beside

    where = baseline_path or pinned_beside(card_path)
    try:
        base = (
            read_json(where, what="baseline scorecard", limits=SCORECARD_LIMITS) if where else None
        )
    except TurnscopeError:
        if baseline_path is not None:
            raise
        base = None  # a broken file beside the scorecard: `turnscope gate` says what is wrong
    if base is not None and (not isinstance(base, dict) or base.get("suite") != card.get("suite")):
        base = None  # another suite's (the gate says so): no change to show against it
    html_path = card_path.with_suffix(".html")
    write_text(
        html_path,
        scorecard_html(
            card,
            baseline=base,
            baseline_name=str(where) if base is not None else "",
            here=html_path.parent,
            floors=floors,
            tolerance=tolerance,
        ),
    )
    return html_path


def gated_scorecard_page(
    result: Path,
    card: Mapping[str, Any],
    baseline_path: Path,
    *,
    floors: Mapping[str, float],
    tolerance: float,
) -> str | None:
    """`turnscope gate --baseline`: the scorecard's page written again with what changed
    against the baseline; None, or one line on why it could not be."""
    from turnscope.errors import OutputError

    card_path = result
    if (
        not result.name.endswith("scorecard.json")
        and result.with_suffix(".scorecard.json").exists()
    ):
        card_path = result.with_suffix(".scorecard.json")  # the bench result's scorecard
    try:
        write_scorecard_page(card_path, card, baseline_path, floors=floors, tolerance=tolerance)
    except OutputError as exc:
        return f"the scorecard page was not updated: {exc}"
    return None
