"""load.html: the aggregate report as one self-contained page (tables, the chart of the latency
percentiles over the run against the scenario's budget, every call linked to its report.html)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from turnscope.load.chart import chart
from turnscope.load.hops import growth_line, levels_cell, sources_text
from turnscope.load.record import CALLS, CallRecord
from turnscope.load.report import (
    LoadReport,
    Percentiles,
    degraded_calls_line,
    missed_barge_ins_line,
    verdicts_line,
)
from turnscope.scoring.report.table_page import TABLE_CSS, Mark
from turnscope.scoring.stats import median
from turnscope.scoring.verifier import DEFAULT_MAX_LATENCY_MS
from turnscope.scoring.voice_wer import voice_line

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Scenario


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} ms"


class Raw(str):
    """A cell's markup, put in as it is (a link)."""


class Marked(str):
    """A cell's text and how it is coloured (over the budget, failed, late)."""

    mark: Mark

    def __new__(cls, text: str, mark: Mark) -> Marked:
        cell = super().__new__(cls, text)
        cell.mark = mark
        return cell


def _marked(text: str, mark: Mark | None) -> str:
    return text if mark is None else Marked(text, mark)


def _verdict(c: CallRecord) -> str:
    """A call's verdict cell: pass, or fail and on what; - for a call that did not complete."""
    if c.passed is None or c.status != "completed":
        return "-"
    if c.passed:
        return Marked("pass", Mark.PASS)
    return Marked("fail: " + (", ".join(c.failed_floors) or "see its report"), Mark.FAILED)


def _words(c: str) -> bool:
    """A cell of words (a verdict, a worker, a link), not a figure nor empty ("-", "")."""
    return isinstance(c, Raw) or (c not in ("", "-") and not c[0].isdigit())


def _cell(c: str, tag: str, left: bool) -> str:
    body = c if isinstance(c, Raw) else escape(c)
    classes = [c.mark.value] if isinstance(c, Marked) else []
    classes += ["l"] if left else []
    attr = f" class='{' '.join(classes)}'" if classes else ""
    return f"<{tag}{attr}>{body}</{tag}>"


def _row(cells: Sequence[str], left: Sequence[bool], tag: str = "td") -> str:
    return "<tr>" + "".join(_cell(c, tag, x) for c, x in zip(cells, left, strict=True)) + "</tr>"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table whose columns of words are on the left and of figures on the right, heading
    and all."""
    if not rows:
        return "<p>none</p>"
    left = [any(_words(r[i]) for r in rows) for i in range(len(head))]
    return "<table>" + _row(head, left, "th") + "".join(_row(r, left) for r in rows) + "</table>"


def _over(v: float | None, budget_ms: float | None) -> str:
    """A latency figure, red when it is over the budget."""
    late = v is not None and budget_ms is not None and v > budget_ms
    return _marked(_ms(v), Mark.FAIL if late else None)


def _pct(name: str, p: Percentiles, budget_ms: float | None = None) -> list[str]:
    return [name, str(p.n), *(_over(v, budget_ms) for v in (p.p50, p.p90, p.p99, p.max))]


def _count(n: int) -> str:
    """A count of things gone wrong (late, lost), amber when there are any."""
    return _marked(str(n), Mark.NOTE if n else None)


def _hops(r: LoadReport) -> list[str]:
    """The hop section: each hop's percentiles and median by calls up (none: no section)."""
    h = r.hops
    if h is None:
        return []
    rows = [[*_pct(x.name, x.ms), levels_cell(x)] for x in h.hops]
    rows.append([*_pct("unaccounted (every reply's last hop)", h.unaccounted_ms), ""])
    growth = growth_line(h)
    grew = f" {escape(growth[0].upper() + growth[1:])}." if growth else ""
    without = f" {h.calls_without} completed call(s) have no hops." if h.calls_without else ""
    return [
        "<h2>Latency by hop</h2>",
        f"<p>{h.replies} replies of {h.calls} calls split by the agent's own events "
        f"({sources_text(h)}); "
        f"the hops of a reply sum to its latency.{grew}{without}</p>",
        _table(["hop", "n", "p50", "p90", "p99", "max", "p50 (ms) by calls up (replies)"], rows),
    ]


def _barge_ins(r: LoadReport) -> str:
    """The barge-ins planned and exercised, when the scenario planned any."""
    if not r.barge_ins_planned:
        return ""
    return f"barge-ins planned {r.barge_ins_planned}, exercised {r.barge_ins_exercised}; "


def _missed(r: LoadReport) -> str:
    """The barge-in line's class: amber when a completed call's planned barge-in was not
    exercised (as the terminal's warning)."""
    return f" class='{Mark.NOTE.value}'" if missed_barge_ins_line(r) is not None else ""


def budget_of(scenario: Scenario) -> tuple[int, str]:
    """The scenario's latency budget (its task's ``max_latency_ms``, else the verifier's
    default) and where it came from."""
    from turnscope.actors.caller.scenario_contract import scenario_task

    budget = ((scenario_task(scenario) or {}).get("budgets") or {}).get("max_latency_ms")
    if budget:
        return int(budget), "the scenario's"
    return DEFAULT_MAX_LATENCY_MS, "the verifier's default"


def _bundle(bundle: str | None, here: Path | None) -> Raw | str:
    """The call's bundle as a link to its report.html (relative to the page when its folder is
    known, and found under it when the run's folder has moved); a URL or nothing as text."""
    if not bundle:
        return "-"
    if "://" in bundle:
        return bundle
    moved = here / CALLS / Path(bundle).name if here is not None else None
    report = (moved if moved is not None and moved.is_dir() else Path(bundle)) / "report.html"
    href = (
        Path(os.path.relpath(report, here)).as_posix()
        if here is not None
        else report.as_uri()
        if report.is_absolute()
        else report.as_posix()
    )
    return Raw(f"<a href='{escape(href)}'>{escape(Path(bundle).name)}</a>")


def render(
    r: LoadReport,
    *,
    budget_ms: float | None = None,
    budget_source: str | None = None,
    here: Path | None = None,
) -> str:
    """The page; ``budget_ms``: the latency budget drawn on the chart and marked in the
    tables (default: the report's own, else the verifier's); ``here``: the page's folder,
    which the calls' links to their report.html are relative to."""
    if budget_ms is None:
        budget_ms = r.latency_budget_ms or DEFAULT_MAX_LATENCY_MS
        budget_source = r.latency_budget_source if r.latency_budget_ms else "the verifier's default"
    budget_source = budget_source or ""
    h = r.harness
    # A run whose calls all completed but failed their verdicts is no OK (the exit code is 1).
    verdict, mark = (
        ("DEGRADED", Mark.VOID)
        if r.degraded
        else ("FAILED", Mark.FAILED)
        if r.failed or r.verdicts_failed
        else ("OK", Mark.PASS)
    )
    failures = [
        [status.replace("_", " "), kind, str(n), r.failure_reasons.get(status, {}).get(kind, "")]
        for status, kinds in r.failures.items()
        for kind, n in kinds.items()
    ]
    windows = [
        [
            f"{x.start_s:.0f}-{x.end_s:.0f} s",
            str(x.calls_up),
            *_pct("", x.latency_ms, budget_ms)[1:5],
        ]
        for x in r.latency_over_time
    ]
    calls = [
        [
            str(c.slot + 1) + (f".{c.attempt}" if c.attempt > 1 else ""),
            c.worker,
            _marked(
                c.status.replace("_", " ") + (f" ({c.kind})" if c.kind else ""),
                None if c.status == "completed" else Mark.FAIL,
            ),
            _verdict(c),
            f"{c.planned_s:.1f} s",
            "-" if c.placement_lag_s is None else f"{c.placement_lag_s * 1000:.0f} ms",
            _over(median(x.latency_ms for x in c.replies) if c.replies else None, budget_ms),
            _count(c.unanswered),
            "-" if c.caller_max_send_lag_ms is None else f"{c.caller_max_send_lag_ms:.0f} ms",
            _marked(", ".join(c.degraded_codes), Mark.NOTE)
            if c.degraded_codes
            else ("whole" if c.status == "completed" else "-"),
            _bundle(c.bundle, here),
        ]
        for c in r.calls
    ]
    body = [
        f"<h1>Load: {escape(r.scenario)} against {escape(r.target)}</h1>",
        f"<p class='v {mark.value}'>{verdict}</p>",
        f"<p>{r.plan.calls} callers at {r.plan.rate:g}/s"
        + (f" for {r.plan.duration_s:g} s" if r.plan.duration_s else "")
        + f" over {r.transport}, {r.loops} event loop(s) on {escape(r.where)}; "
        f"{r.placed} calls placed, {r.completed} completed, {r.passed} passed, "
        f"{r.wall_s:.0f} s.</p>",
    ]
    if r.degraded:
        body.append("<ul>" + "".join(f"<li>{escape(d)}</li>" for d in r.degraded) + "</ul>")
    for line in (verdicts_line(r), degraded_calls_line(r)):
        if line is not None:
            body.append(f"<p>{escape(line, quote=False)}</p>")
    if r.warnings:  # the run's own warnings, as load.json keeps them and the terminal said them
        body.append(
            "<p>Warnings:</p><ul>"
            + "".join(f"<li>{escape(w, quote=False)}</li>" for w in r.warnings)
            + "</ul>"
        )
    body += [
        "<h2>Latency (caller turn end to agent reply)</h2>",
        f"<p class='meta'>budget {budget_ms:.0f} ms"
        + (f" ({escape(budget_source)})" if budget_source else "")
        + ": a figure over it is red</p>",
        _table(
            ["", "n", "p50", "p90", "p99", "max"],
            [
                _pct("reply latency", r.latency_ms, budget_ms),
                *(
                    [_pct("reply latency, caller audio on time", r.latency_on_time_ms, budget_ms)]
                    if r.latency_on_time_ms is not None
                    else []
                ),
                _pct("barge-in yield", r.barge_in_yield_ms),
                *(
                    [_pct("the caller's LLM answer (not the agent's)", r.caller_llm_ms)]
                    if r.caller_llm_ms is not None
                    else []
                ),
            ],
        ),
        f"<p{_missed(r)}>{_barge_ins(r)}unanswered caller turns {r.unanswered_turns}"
        + (f" in {r.calls_with_unanswered} call(s)" if r.unanswered_turns else "")
        + "</p>",
        *(
            f"<p>{escape(voice_line(v), quote=False)}: what the voice itself may explain of the "
            "agent's misunderstanding</p>"
            for v in r.voices
        ),
        *_hops(r),
        "<h2>Over the run</h2>",
        chart(r, budget_ms, budget_source),
        # no reply timed: the chart already says so (a "none" under it said it twice)
        _table(["span", "calls up", "replies", "p50", "p90", "p99"], windows) if windows else "",
        "<h2>Calls not set up or dropped, by kind</h2>",
        _table(["status", "kind", "calls", "the first call's reason"], failures),
        "<h2>The harness</h2>",
        _table(
            [
                "placement lag max",
                "placed late",
                "caller send lag max",
                "caller frames late",
                "calls with late caller audio",
                "agent frames lost",
                "most calls up",
            ],
            [
                [
                    "-" if h.placement_lag_max_s is None else f"{h.placement_lag_max_s:.2f} s",
                    _count(h.calls_placed_late),
                    _ms(h.caller_max_send_lag_ms),
                    _count(h.caller_late_frames),
                    _count(h.calls_caller_audio_late),
                    _count(h.agent_lost_frames),
                    str(h.max_calls_up),
                ]
            ],
        ),
        "<h2>Calls</h2>",
        _table(
            [
                "call",
                "worker",
                "status",
                "verdict",
                "planned",
                "placed late by",
                "latency p50",
                "unanswered",
                "caller send lag",
                "evidence",
                "bundle",
            ],
            calls,
        ),
    ]
    style = TABLE_CSS + (
        # a figure and its unit on one line ("546 ms", not "546" over "ms"); names on the left
        "td{white-space:nowrap}td:first-child,td:last-child{white-space:normal}"
        ".v{font-size:1.6em;margin:.3em 0}p.note{display:inline-block;padding:2px 6px;margin:0}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>turnscope load</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )
