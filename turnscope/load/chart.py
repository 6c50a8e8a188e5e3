"""load.html's chart: reply latency p50 / p90 / p99 per span of the run, with a latency axis
(ms and s ticks), a time axis, the scenario's latency budget as a labelled line, and the calls up
on their own axis. p99 is drawn wide and pale under p90 (dashed, square marks) so that where the
two meet both still show."""

from __future__ import annotations

from dataclasses import dataclass

from turnscope.load.report import LoadReport
from turnscope.scoring.report.axis import ms_label, s_label, ticks

W, H = 760, 300
LEFT, RIGHT, TOP, BOTTOM = 64, 70, 28, 48


@dataclass(frozen=True)
class Series:
    key: str
    colour: str
    width: float
    dash: str  # SVG stroke-dasharray, "" for solid
    mark: str  # circle | square | diamond
    dx: float  # its marks set this far beside the span's middle (px): equal values stay apart


# Drawn in this order: p99 first, wide and pale, so p90 on top of it stays visible; the marks
# side by side, so percentiles that are equal (few replies in a span) still show each one.
SERIES = (
    Series("p99", "#e8a0a0", 6.0, "", "circle", 8.0),
    Series("p90", "#dd6b20", 2.0, "6 3", "square", 0.0),
    Series("p50", "#2b6cb0", 2.0, "", "diamond", -8.0),
)


def _marker(kind: str, x: float, y: float, colour: str, key: str) -> str:
    attrs = f'fill="{colour}" data-series="{key}"'
    if kind == "square":
        return f'<rect x="{x - 3.5:.1f}" y="{y - 3.5:.1f}" width="7" height="7" {attrs}/>'
    if kind == "diamond":
        corners = ((0, -4.5), (4.5, 0), (0, 4.5), (-4.5, 0))
        pts = " ".join(f"{x + dx:.1f},{y + dy:.1f}" for dx, dy in corners)
        return f'<polygon points="{pts}" {attrs}/>'
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="5" {attrs}/>'


def chart(r: LoadReport, budget_ms: float, budget_source: str = "") -> str:
    """The SVG (and its legend), or a line saying no reply was timed."""
    w = [x for x in r.latency_over_time if x.latency_ms.n]
    if not w:
        return "<p>no reply was timed</p>"
    highest = max(max(x.latency_ms.p99 or 0, x.latency_ms.p90 or 0) for x in w)
    y_ticks = ticks(max(highest, budget_ms) * 1.08 or 1.0)
    top = y_ticks[-1]
    end = r.latency_over_time[-1].end_s or 1.0
    x_ticks = ticks(end, 6)
    right = x_ticks[-1]
    most = max(x.calls_up for x in r.latency_over_time) or 1
    up_ticks = ticks(most, min(most, 4))
    up_top = up_ticks[-1]
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    def px(t: float) -> float:
        return LEFT + pw * t / right

    def py(v: float, scale: float) -> float:
        return TOP + ph - ph * v / scale

    out = [
        f'<svg class="chart" width="{W}" height="{H}" viewBox="0 0 {W} {H}" role="img" '
        'aria-label="reply latency percentiles over the run" font-size="11" '
        'font-family="sans-serif">',
        f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="#fff" stroke="#bbb"/>',
        '<g class="y-axis">',
    ]
    for v in y_ticks:
        y = py(v, top)
        out.append(f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" '
                   'stroke="#eee"/>' if v else "")  # fmt: skip
        out.append(f'<text class="tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
                   f"{ms_label(v)}</text>")  # fmt: skip
    out.append(
        f'<text class="axis-title" transform="translate(14 {TOP + ph / 2:.0f}) rotate(-90)" '
        'text-anchor="middle">reply latency</text></g><g class="x-axis">'
    )
    for t in x_ticks:
        x = px(t)
        out.append(f'<line x1="{x:.1f}" y1="{TOP + ph}" x2="{x:.1f}" y2="{TOP + ph + 4}" '
                   'stroke="#888"/>')  # fmt: skip
        out.append(f'<text class="tick" x="{x:.1f}" y="{TOP + ph + 16}" text-anchor="middle">'
                   f"{s_label(t)}</text>")  # fmt: skip
    out.append(
        f'<text class="axis-title" x="{LEFT + pw / 2:.0f}" y="{H - 8}" text-anchor="middle">'
        'time into the run</text></g><g class="up-axis">'
    )
    for u in up_ticks:
        y = py(u, up_top)
        out.append(f'<text class="tick" x="{LEFT + pw + 6}" y="{y + 4:.1f}" fill="#777">'
                   f"{u:g}</text>")  # fmt: skip
    out.append(
        f'<text class="axis-title" transform="translate({W - 12} {TOP + ph / 2:.0f}) '
        'rotate(90)" text-anchor="middle" fill="#777">calls up (grey, dotted)</text></g>'
    )
    ups = " ".join(
        f"{px((x.start_s + x.end_s) / 2):.1f},{py(x.calls_up, up_top):.1f}"
        for x in r.latency_over_time
    )
    out.append(f'<polyline class="calls-up" points="{ups}" fill="none" stroke="#999" '
               'stroke-dasharray="2 3"/>')  # fmt: skip
    by = py(budget_ms, top)
    label = f"budget {ms_label(budget_ms)}" + (f" ({budget_source})" if budget_source else "")
    out.append(
        f'<g class="budget" data-budget-ms="{budget_ms:g}"><line x1="{LEFT}" y1="{by:.1f}" '
        f'x2="{LEFT + pw}" y2="{by:.1f}" stroke="#c53030" stroke-width="1.5" '
        f'stroke-dasharray="8 4"/><text x="{LEFT + 6}" y="{by - 5:.1f}" fill="#c53030">'
        f"{label}</text></g>"
    )
    for s in SERIES:
        pts = [
            (px((x.start_s + x.end_s) / 2), py(getattr(x.latency_ms, s.key) or 0, top)) for x in w
        ]
        dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
        out.append(
            f'<g class="series" data-series="{s.key}"><polyline points="'
            + " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            + f'" fill="none" stroke="{s.colour}" stroke-width="{s.width}"{dash} '
            'stroke-linejoin="round"/>'
            + "".join(_marker(s.mark, x + s.dx, y, s.colour, s.key) for x, y in pts)
            + "</g>"
        )
    legend = " ".join(
        f'<span class="key" style="color:{s.colour}">&#9632; {s.key}</span>' for s in SERIES[::-1]
    )
    return (
        "".join(out)
        + f'</svg><p class="legend">{legend} <span style="color:#999">&#8943; calls up</span> '
        f'<span style="color:#c53030">- - {label}</span></p>'
    )
