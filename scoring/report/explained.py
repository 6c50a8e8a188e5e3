"""The latency breakdown in report.html: per reply a stacked bar (endpointing, processing,
delivery), the parts that carry the one-way estimate hatched, each bar playing the reply."""

from __future__ import annotations

from turnscope.scoring.report.axis import ms_label, ticks
from turnscope.scoring.report.markup import e
from turnscope.scoring.report.model import ReportModel
from turnscope.scoring.report.timeline import clock

PARTS = (("endpointing", "#2563eb"), ("processing", "#d97706"), ("delivery", "#7c3aed"))
CSS = """
.split{display:flex;height:16px;min-width:2px;border-radius:3px;overflow:hidden;cursor:pointer}
.split i{display:block;height:16px}
.split i.est{background-image:repeating-linear-gradient(45deg,rgba(255,255,255,.45) 0 3px,
 transparent 3px 7px)}
[data-t]{cursor:pointer}
.track,.axis{position:relative}.axis{height:30px;font-size:11px;color:#555;font-weight:normal}
.axis span{position:absolute;top:14px;transform:translateX(-50%);white-space:nowrap}
.axis span.first{transform:none}.axis span.last{transform:translateX(-100%)}
.track .budget-mark{position:absolute;top:-3px;bottom:-3px;border-left:2px dashed #c53030}
.axis span.budget-label{color:#c53030;top:0}
.track .grid{position:absolute;top:0;bottom:0;border-left:1px solid rgba(0,0,0,.08)}
"""


def breakdown(m: ReportModel) -> str:
    """The section, or nothing when the agent told nothing."""
    b = m.latency_breakdown
    if not b:
        return ""
    turns = {t.index: t for t in m.turns}
    replies = b.get("replies") or []
    longest = max([r.get("latency_ms", 0) for r in replies] + [1])
    scale = ticks(max(longest, m.max_latency_ms) * 1.05)
    top = scale[-1]
    budget_at = 100 * m.max_latency_ms / top
    head = (
        '<section id="latency"><h2>Why each reply took as long as it did</h2><div class="meta">'
        "From the caller's speech end to the agent's first sound: endpointing (the agent "
        "deciding the caller had finished), processing (from that decision to starting to "
        "speak), delivery "
        f"(transport, jitter buffer, playout). Source: {e(b.get('source') or '?')}. "
        f"{e(b.get('note') or '')}. Hatched: includes the estimate.</div>"
    )
    if not b.get("reliable", True):
        head += f'<div class="box warn">Unreliable: {e("; ".join(b.get("reasons") or []))}</div>'
    legend = " ".join(
        f'<span class="tag" style="background:{c}">{name}</span>' for name, c in PARTS
    )
    rows = []
    for r in replies:
        caller = turns.get(r.get("caller_turn"))
        at = (caller.end_ms / 1000 - 1.0) if caller else 0.0
        when = clock(caller.end_ms) if caller else "?"
        latency = r.get("latency_ms", 0)
        if "missing" in r:
            bar, parts = f"<span class=meta>not split: {e(r['missing'])}</span>", ""
        else:
            segs = []
            for name, colour in PARTS:
                ms = max(0.0, float(r.get(f"{name}_ms") or 0))
                est = " est" if name in (r.get("estimated") or []) else ""
                width = 100 * ms / top
                segs.append(
                    f'<i class="{est.strip()}" style="width:{width:.2f}%;background-color:'
                    f'{colour}" title="{name} {ms:.0f} ms"></i>'
                )
            grid = "".join(f'<b class="grid" style="left:{100 * v / top:.2f}%"></b>' for v in scale)
            bar = (
                f'<div class="track">{grid}<div class="split" data-t="{max(0.0, at):.2f}">'
                f'{"".join(segs)}</div><b class="budget-mark" style="left:{budget_at:.2f}%" '
                f'title="budget {m.max_latency_ms} ms"></b></div>'
            )
            parts = " / ".join(
                f"{name} {'~' if name in (r.get('estimated') or []) else ''}"
                f"{float(r[f'{name}_ms']):.0f}"
                for name, _ in PARTS
            )
            if r.get("ttfb_ms"):
                parts += " (agent's ttfb " + ", ".join(f"{v:.0f}" for v in r["ttfb_ms"]) + ")"
        rows.append(
            f'<tr data-t="{max(0.0, at):.2f}"><td>#{r.get("caller_turn")} &rarr; '
            f"#{r.get('agent_turn')}</td><td class=t>{when}</td><td class=t>{latency} ms</td>"
            f'<td style="width:45%">{bar}</td><td>{parts}</td></tr>'
        )
    edge = {0: " first", len(scale) - 1: " last"}
    axis = "".join(
        f'<span class="tick{edge.get(i, "")}" style="left:{100 * v / top:.2f}%">'
        f"{ms_label(v)}</span>"
        for i, v in enumerate(scale)
    ) + (
        f'<span class="budget-label" style="left:{budget_at:.2f}%">'
        f"budget {m.max_latency_ms} ms</span>"
    )
    return (
        head + f"<div>{legend} <span class=meta>dashed red line: the latency budget "
        f"({m.max_latency_ms} ms)</span></div><table><thead><tr><th>reply</th>"
        '<th>caller ended</th><th>latency</th><th>split<div class="axis">'
        f"{axis}</div></th><th>ms</th></tr></thead><tbody>"
        + "".join(rows)
        + "</tbody></table></section>"
    )
