"""`turnscope load`'s latency tables in the terminal: reply latency and barge-in yield
percentiles, and reply latency over the run, each figure over the run's budget in red."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from turnscope.cli.console import out
from turnscope.load.report import LoadReport, Percentiles


def _ms(v: float | None, budget_ms: int | None = None) -> Text:
    if v is None:
        return Text("-")
    over = budget_ms is not None and v > budget_ms
    return Text(f"{v:.0f}", style="bold red" if over else "")


def _budget(r: LoadReport) -> str:
    """The title's budget, short enough not to wrap over the table (load.json says whose)."""
    return "" if r.latency_budget_ms is None else f"; budget {r.latency_budget_ms}"


def latency_tables(r: LoadReport) -> None:
    """Reply latency and barge-in yield percentiles, and reply latency over the run."""
    t = Table(title=f"latency (ms{_budget(r)})", title_justify="left")
    for col in ("", "n", "p50", "p90", "p99", "max"):
        t.add_column(col, justify="right" if col else "left")
    budget = r.latency_budget_ms
    rows: list[tuple[str, Percentiles, int | None]] = [("reply", r.latency_ms, budget)]
    if r.latency_on_time_ms is not None and r.latency_on_time_ms.n < r.latency_ms.n:
        rows.append(("reply, caller audio on time", r.latency_on_time_ms, budget))
    rows.append(("barge-in yield", r.barge_in_yield_ms, None))
    if r.caller_llm_ms is not None:  # the caller's own LLM: not the agent's latency
        rows.append(("caller's LLM answer", r.caller_llm_ms, None))
    for name, p, held_to in rows:
        t.add_row(name, str(p.n), *(_ms(v, held_to) for v in (p.p50, p.p90, p.p99, p.max)))
    out.print(t)
    if len(r.latency_over_time) > 1:
        w = Table(title="reply latency over the run (ms)", title_justify="left")
        for col in ("span", "calls up", "replies", "p50", "p90", "p99"):
            w.add_column(col, justify="right")
        for x in r.latency_over_time:
            p = x.latency_ms
            w.add_row(f"{x.start_s:.0f}-{x.end_s:.0f} s", str(x.calls_up), str(p.n),
                      *(_ms(v, budget) for v in (p.p50, p.p90, p.p99)))  # fmt: skip
        out.print(w)
