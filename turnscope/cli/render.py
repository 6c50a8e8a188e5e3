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
