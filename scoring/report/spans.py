"""The agent's OpenTelemetry spans in report.html: one lane per span name, each span a bar on
the call clock under the agent's audio, playing the call from where it starts (a click).

Read from the bundle's agent_spans.json (``--otlp``) and placed with the call's Unix clock
origin (result.json: source.details.clock_origin_unix): the same placement the latency
breakdown uses for spans from the agent's machine clock.
"""

from __future__ import annotations

import json
from typing import Any

from turnscope.scoring.otlp_spans import AgentSpans, sound
from turnscope.scoring.report.markup import e
from turnscope.scoring.report.model import ReportModel
from turnscope.scoring.report.timeline import clock

FILE = "agent_spans.json"
MAX_LANES = 12  # the busiest names; the rest are in the file
MAX_BARS = 2000  # per report: past this the page would be the spans, not the call
CSS = """
.lanes{font-size:12px}.lane{display:flex;align-items:center;margin:2px 0}
.lane b{width:150px;flex:none;font-weight:normal;overflow:hidden;text-overflow:ellipsis}
.lane .track{flex:1;height:12px;background:#f3f4f6;border-radius:2px}
.lane .track i{position:absolute;top:0;height:12px;min-width:2px;background:#0f766e;opacity:.8}
"""


def _origin(m: ReportModel) -> float | None:
    try:
        result: dict[str, Any] = json.loads((m.bundle / "result.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    origin = ((result.get("source") or {}).get("details") or {}).get("clock_origin_unix")
    return float(origin) if isinstance(origin, (int, float)) else None


def span_lanes(m: ReportModel) -> str:
    """The section, or nothing when the bundle holds no spans."""
    path = m.bundle / FILE
    if not path.is_file():
        return ""
    try:
        doc = AgentSpans.model_validate_json(path.read_bytes())
    except (OSError, ValueError):
        return f'<section id="spans"><h2>Agent spans</h2><div class="box warn">{FILE} cannot be read</div></section>'  # noqa: E501
    head = (
        '<section id="spans"><h2>The agent\'s spans</h2><div class="meta">'
        f"{len(doc.spans)} OpenTelemetry span(s) the agent exported during the call "
        f"({e(FILE)}), on the call clock; click a span to play the call from it.</div>"
    )
    if doc.problems:
        head += f'<div class="box warn">{e("; ".join(doc.problems))}</div>'
    origin = _origin(m)
    spans, _ = sound(doc.spans)
    if origin is None or not spans or m.duration_ms <= 0:
        why = "no span to show" if not spans else "the call has no Unix clock origin to place them"
        return head + f'<div class="meta">{e(why)}</div></section>'
    lanes: dict[str, list[tuple[float, float]]] = {}
    for s in spans:
        start = (s.start_unix_nano / 1e9 - origin) * 1000
        end = (s.end_unix_nano / 1e9 - origin) * 1000
        if end >= 0 and start <= m.duration_ms:
            lanes.setdefault(s.name, []).append((max(0.0, start), min(m.duration_ms, end)))
    busiest = sorted(lanes.items(), key=lambda kv: -len(kv[1]))[:MAX_LANES]
    rows, bars = [], 0
    for name, items in sorted(busiest, key=lambda kv: min(a for a, _ in kv[1])):
        marks = []
        for a, b in items[: max(0, MAX_BARS - bars)]:
            left, width = 100 * a / m.duration_ms, 100 * (b - a) / m.duration_ms
            marks.append(
                f'<i data-t="{a / 1000:.2f}" style="left:{left:.3f}%;width:{width:.3f}%" '
                f'title="{e(name)} {clock(a)} +{b - a:.0f} ms"></i>'
            )
        bars += len(marks)
        rows.append(
            f'<div class="lane"><b>{e(name)}</b><div class="track">{"".join(marks)}</div></div>'
        )
    return head + f'<style>{CSS}</style><div class="lanes">{"".join(rows)}</div></section>'
