"""load.html: the aggregate report as one self-contained page (tables and an SVG chart of the
latency percentiles over the run, beside the calls up)."""

from __future__ import annotations

from html import escape

from turnscope.load.report import LoadReport, Percentiles
from turnscope.scoring.stats import median

CHART_W, CHART_H, PAD = 720, 220, 40
SERIES = (("p50", "#2b6cb0"), ("p90", "#dd6b20"), ("p99", "#c53030"))


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.0f} ms"


def _row(cells: list[str], tag: str = "td") -> str:
    return "<tr>" + "".join(f"<{tag}>{escape(c)}</{tag}>" for c in cells) + "</tr>"


def _table(head: list[str], rows: list[list[str]]) -> str:
    return (
        "<table>" + _row(head, "th") + "".join(_row(r) for r in rows) + "</table>"
        if rows
        else "<p>none</p>"
    )


def _pct(name: str, p: Percentiles) -> list[str]:
    return [name, str(p.n), _ms(p.p50), _ms(p.p90), _ms(p.p99), _ms(p.max)]


def _chart(r: LoadReport) -> str:
    w = [x for x in r.latency_over_time if x.latency_ms.n]
    if not w:
        return "<p>no reply was timed</p>"
    top = max(x.latency_ms.p99 or 0 for x in w) * 1.1 or 1.0
    most = max(x.calls_up for x in r.latency_over_time) or 1
    end = r.latency_over_time[-1].end_s or 1.0

    def xy(t: float, v: float, scale: float) -> str:
        x = PAD + (CHART_W - 2 * PAD) * t / end
        y = CHART_H - PAD - (CHART_H - 2 * PAD) * v / scale
        return f"{x:.1f},{y:.1f}"

    parts = [
        f'<svg width="{CHART_W}" height="{CHART_H}" role="img" '
        'aria-label="reply latency percentiles over the run">',
        f'<rect x="{PAD}" y="{PAD}" width="{CHART_W - 2 * PAD}" height="{CHART_H - 2 * PAD}" '
        'fill="none" stroke="#ccc"/>',
    ]
    ups = " ".join(xy((x.start_s + x.end_s) / 2, x.calls_up, most) for x in r.latency_over_time)
    parts.append(f'<polyline points="{ups}" fill="none" stroke="#999" stroke-dasharray="4 3"/>')
    for key, colour in SERIES:
        pts = " ".join(xy((x.start_s + x.end_s) / 2, getattr(x.latency_ms, key), top) for x in w)
        parts.append(f'<polyline points="{pts}" fill="none" stroke="{colour}" stroke-width="2"/>')
    parts.append(f'<text x="{PAD}" y="{PAD - 8}" font-size="12">{top:.0f} ms</text>')
    parts.append(
        f'<text x="{CHART_W - PAD}" y="{PAD - 8}" font-size="12" text-anchor="end">'
        f"{most} calls up (dashed)</text>"
    )
    parts.append(
        f'<text x="{CHART_W - PAD}" y="{CHART_H - 12}" font-size="12" text-anchor="end">'
        f"{end:.0f} s</text>"
    )
    legend = " ".join(f'<span style="color:{c}">{k}</span>' for k, c in SERIES)
    return "".join(parts) + f"</svg><p>{legend}</p>"


def render(r: LoadReport) -> str:
    """The page."""
    h = r.harness
    verdict = "DEGRADED" if r.degraded else ("FAILED" if r.failed else "OK")
    failures = [
        [status.replace("_", " "), kind, str(n)]
        for status, kinds in r.failures.items()
        for kind, n in kinds.items()
    ]
    windows = [
        [f"{x.start_s:.0f}-{x.end_s:.0f} s", str(x.calls_up), *_pct("", x.latency_ms)[1:5]]
        for x in r.latency_over_time
    ]
    calls = [
        [
            str(c.slot + 1) + (f".{c.attempt}" if c.attempt > 1 else ""),
            c.worker,
            c.status.replace("_", " ") + (f" ({c.kind})" if c.kind else ""),
            f"{c.planned_s:.1f} s",
            "-" if c.placement_lag_s is None else f"{c.placement_lag_s * 1000:.0f} ms",
            "-" if not c.replies else f"{median(x.latency_ms for x in c.replies):.0f} ms",
            str(c.unanswered),
            "-" if c.caller_max_send_lag_ms is None else f"{c.caller_max_send_lag_ms:.0f} ms",
            c.bundle or "-",
        ]
        for c in r.calls
    ]
    body = [
        f"<h1>Load: {escape(r.scenario)} against {escape(r.target)}</h1>",
        f"<p class='v'>{verdict}</p>",
        f"<p>{r.plan.calls} callers at {r.plan.rate:g}/s"
        + (f" for {r.plan.duration_s:g} s" if r.plan.duration_s else "")
        + f" over {r.transport}, {r.loops} event loop(s) on {escape(r.where)}; "
        f"{r.placed} calls placed, {r.completed} completed, {r.passed} passed, "
        f"{r.wall_s:.0f} s.</p>",
    ]
    if r.degraded:
        body.append("<ul>" + "".join(f"<li>{escape(d)}</li>" for d in r.degraded) + "</ul>")
    body += [
        "<h2>Latency (caller turn end to agent reply)</h2>",
        _table(
            ["", "n", "p50", "p90", "p99", "max"],
            [
                _pct("reply latency", r.latency_ms),
                *(
                    [_pct("reply latency, caller audio on time", r.latency_on_time_ms)]
                    if r.latency_on_time_ms is not None
                    else []
                ),
                _pct("barge-in yield", r.barge_in_yield_ms),
            ],
        ),
        f"<p>barge-ins planned {r.barge_ins_planned}, exercised {r.barge_ins_exercised}; "
        f"unanswered caller turns {r.unanswered_turns} in {r.calls_with_unanswered} call(s)</p>",
        "<h2>Over the run</h2>",
        _chart(r),
        _table(["span", "calls up", "replies", "p50", "p90", "p99"], windows),
        "<h2>Failures by kind</h2>",
        _table(["status", "kind", "calls"], failures),
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
                    str(h.calls_placed_late),
                    _ms(h.caller_max_send_lag_ms),
                    str(h.caller_late_frames),
                    str(h.calls_caller_audio_late),
                    str(h.agent_lost_frames),
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
                "planned",
                "placed late by",
                "latency p50",
                "unanswered",
                "caller send lag",
                "bundle",
            ],
            calls,
        ),
    ]
    style = (
        "body{font-family:sans-serif;margin:2em;max-width:1100px}table{border-collapse:collapse;"
        "margin:.5em 0}td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}"
        ".v{font-size:1.4em;font-weight:bold}"
    )
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>turnscope load</title>"
        f"<style>{style}</style></head><body>{''.join(body)}</body></html>\n"
    )
