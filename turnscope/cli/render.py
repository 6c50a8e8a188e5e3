"""Rich renderings of verifier and bench results for the terminal."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from turnscope.scoring.verifier import COMPONENTS, PASS_FLOOR, failed_floors


def _verdict_text(passed: bool) -> Text:
    return Text("PASS", style="bold green") if passed else Text("FAIL", style="bold red")


def verdict_table(scored: Mapping[str, Any], *, title: str = "verdict") -> Group:
    """The four sub-scores with their floors, then the verdict and the failing floors."""
    result = scored["result"]
    table = Table(title=title, title_justify="left")
    table.add_column("dimension")
    table.add_column("score", justify="right")
    table.add_column(f"floor {PASS_FLOOR}")
    components = result.get("components") or {}
    for name in COMPONENTS:
        if name not in components:
            continue
        ok = result["pass_fail"].get(f"{name}_floor")
        table.add_row(name, f"{components[name]:.3f}", "met" if ok else Text("FAILED", "red"))
    passed = bool(result["pass_fail"].get("voice"))
    failed = failed_floors(result)
    line = Text.assemble(
        "verdict: ",
        _verdict_text(passed),
        f"  scalar {result['scalar']:.3f}",
        f"  failed floor: {', '.join(failed)}" if failed else "",
        f"  ({result['explanation']})",
    )
    return Group(table, line)


def bench_table(result: Mapping[str, Any]) -> Group:
    """One row per task and the aggregate line."""
    table = Table(
        title=f"{result['dataset_name']} v{result['dataset_version']}", title_justify="left"
    )
    table.add_column("task")
    for name in COMPONENTS:
        table.add_column(name, justify="right")
    table.add_column("verdict")
    table.add_column("evidence")
    for row in result["per_task"]:
        comps = row["result"].get("components") or {}
        cells = [f"{comps[n]:.3f}" if n in comps else "-" for n in COMPONENTS]
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
    table.add_column("tag")
    table.add_column("scored/void", justify="right")
    for d in dims:
        table.add_column(
            d + (" (lower=better)" if d in card.get("lower_is_better", []) else ""), justify="right"
        )
    for tag, row in card["tags"].items():
        c = card["counts"][tag]
        cells = [f"{row[d]:.3f}" if d in row else "-" for d in dims]
        table.add_row(tag, f"{c['scored']}/{c['void']}", *cells)
    return table


def scorecard_html(card: Mapping[str, Any]) -> str:
    """A small self-contained HTML page of the scorecard."""
    from html import escape

    dims = card["dimensions"]
    head = "".join(f"<th>{escape(d)}</th>" for d in dims)
    rows = []
    for tag, row in card["tags"].items():
        c = card["counts"][tag]
        cells = []
        for d in dims:
            v = row.get(d)
            bad = v is not None and (
                (d in card.get("lower_is_better", []) and v > 0.5)
                or (d not in card.get("lower_is_better", []) and v < 0.75)
            )
            cells.append(
                f"<td class='{'bad' if bad else 'ok'}'>"
                + ("-" if v is None else f"{v:.3f}")
                + "</td>"
            )
        rows.append(
            f"<tr><th>{escape(tag)}</th><td>{c['scored']}/{c['void']}</td>"
            + "".join(cells)
            + "</tr>"
        )
    name = escape(str((card.get("suite") or {}).get("name") or "suite"))
    return (
        "<!doctype html><meta charset='utf-8'><title>turnscope scorecard</title>"
        "<style>body{font:14px system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}"
        ".bad{background:#fdd}.ok{background:#efe}</style>"
        f"<h1>Scorecard: {name}</h1><table><tr><th>tag</th><th>scored/void</th>{head}</tr>"
        + "".join(rows)
        + "</table><p>WER: lower is better. Floors: 0.75 (WER ceiling 0.5).</p>"
    )
