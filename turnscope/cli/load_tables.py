"""`turnscope load`'s aggregate in the terminal: latency percentiles (and over the run), what
was placed and completed, failures by kind, the harness's own health, calls per loop or node."""

from __future__ import annotations

from rich.table import Table

from turnscope.capture.player import LATE_MS
from turnscope.cli.console import out, say, warn_line
from turnscope.cli.load_latency import latency_tables
from turnscope.cli.narrow import fits
from turnscope.load.hops import (
    HopsReport,
    growth_line,
    levels_cell,
    not_separable_line,
    sources_text,
)
from turnscope.load.report import (
    LoadReport,
    degraded_calls_line,
    late_frames_line,
    missed_barge_ins_line,
    verdicts_line,
)
from turnscope.scoring.voice_wer import voice_line


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f}"


def hop_table(r: LoadReport) -> None:
    """Each reply's hops across calls: percentiles, the median by calls up, which grew most;
    on a terminal too narrow for the medians by calls up, those a line per hop under it."""
    h = r.hops
    if h is None:
        return
    table = _hops(h, by_calls_up=True)
    narrow = not fits(out, table)
    out.print(_hops(h, by_calls_up=False) if narrow else table)
    for x in h.hops if narrow else []:
        say(f"{x.name}, p50 by calls up (replies): {levels_cell(x)}", markup=False)
    growth = growth_line(h)
    if growth is not None:
        say(growth)
    if h.calls_without:
        say(f"{h.calls_without} completed call(s) have no hops (load.json: calls[].hops_missing)")
    if h.replies_without:
        say(f"{h.replies_without} repl{'y' if h.replies_without == 1 else 'ies'} of calls with "
            "hops could not be split (load.json: calls[].replies[].no_hops says why)")  # fmt: skip


def _hops(h: HopsReport, *, by_calls_up: bool) -> Table:
    t = Table(title=f"reply latency by hop (ms; {h.replies} replies of {h.calls} calls, "
              f"split by {sources_text(h)})", title_justify="left")  # fmt: skip
    levels = ["p50 by calls up (replies)"] if by_calls_up else []
    for col in ("hop", "n", "p50", "p90", "p99", "max", *levels):
        t.add_column(col, justify="left" if col.startswith(("hop", "p50 by")) else "right")
    for x in h.hops:
        p = x.ms
        t.add_row(x.name, str(p.n), _ms(p.p50), _ms(p.p90), _ms(p.p99), _ms(p.max),
                  *([levels_cell(x)] if by_calls_up else []))  # fmt: skip
    u = h.unaccounted_ms
    t.add_row("unaccounted (every reply's last hop)", str(u.n), _ms(u.p50), _ms(u.p90),
              _ms(u.p99), _ms(u.max), *([""] if by_calls_up else []))  # fmt: skip
    return t


def voice_lines(r: LoadReport) -> None:
    """Each caller voice as the project's ASR heard it: what the caller's own voice may explain
    of the agent's mishearing."""
    for v in r.voices:
        out.print(voice_line(v), soft_wrap=True)


def failure_lines(r: LoadReport) -> list[str]:
    """Failures by status and kind, each kind with its first call's reason."""
    lines = []
    for status, kinds in r.failures.items():
        counts = ", ".join(f"{k} {n}" for k, n in kinds.items())
        lines.append(f"{status.replace('_', ' ')}: {counts}")
        for kind, why in r.failure_reasons.get(status, {}).items():
            lines.append(f"  {kind}, the first call's reason: {why}")
    return lines


def print_load(r: LoadReport) -> None:
    """The terminal tables: latency, by hop, over time, failures, the harness."""
    latency_tables(r)
    hop_table(r)
    if r.otlp is not None:
        got = r.otlp.received
        say(f"otlp: {got.batches} batches, {got.spans} spans received at {r.otlp.endpoint} "
            f"(refused {got.refused_batches}, not kept {got.dropped_spans})")  # fmt: skip
        for line in [*r.otlp.problems, not_separable_line(r.calls)]:
            if line:
                warn_line(line)
    h = r.harness
    barge = f"barge-ins {r.barge_ins_exercised} of {r.barge_ins_planned} planned exercised; "
    out.print(
        f"{r.placed} of {len(r.calls)} calls placed, {r.completed} completed, {r.passed} "
        f"passed; {barge if r.barge_ins_planned else ''}unanswered turns {r.unanswered_turns}",
        soft_wrap=True,
    )
    if (line := missed_barge_ins_line(r)) is not None:  # never a silent pass
        warn_line(line)
    voice_lines(r)
    for line in [verdicts_line(r), *failure_lines(r), degraded_calls_line(r)]:
        if line:
            out.print(line, soft_wrap=True, markup=False)
    out.print(
        f"harness: at most {h.max_calls_up} calls up; placed up to "
        f"{h.placement_lag_max_s or 0:.2f} s late ({h.calls_placed_late} late); caller frames "
        f"> {LATE_MS:.0f} ms late {h.caller_late_frames} (worst "
        f"{_ms(h.caller_max_send_lag_ms)} ms); agent frames lost {h.agent_lost_frames}",
        soft_wrap=True,
    )
    if (line := late_frames_line(h)) is not None:
        warn_line(line)
    nodes: dict[str, int] = {}
    for worker, n in r.per_worker.items():  # a Ray worker is NODE#k
        nodes[worker.split("#")[0]] = nodes.get(worker.split("#")[0], 0) + n
    per = "; ".join(
        f"{k} {v}" for k, v in (nodes if len(nodes) < len(r.per_worker) else r.per_worker).items()
    )
    what = "node" if len(nodes) < len(r.per_worker) else "loop"
    say(f"calls per {what} ({r.where}): {per}")
