"""The timeline's legend (the colours and the budgets the picture is judged against) and the
PNG's title line."""

from __future__ import annotations

from turnscope.scoring.evidence.documents import GapCause
from turnscope.scoring.report.figure import Figure, Label, Rect, Shape, Stroke
from turnscope.scoring.report.model import ReportModel
from turnscope.scoring.report.timeline import COLOUR, LEFT, PLOT, WIDTH, clock
from turnscope.scoring.verifier import BARGE_IN_YIELD_MS

LEGEND = (
    ("caller turn", "caller", "bar"),
    ("agent turn", "agent", "bar"),
    ("barge-in overlap", "barge", "shade"),
    ("talk-over", "talk_over", "shade"),
    ("latency / yield within budget", "ok", "line"),
    ("over budget", "bad", "line"),
    ("backchannel", "backchannel", "bar"),
    ("audio gap", "gap", "shade"),
)


def legend_figure(m: ReportModel) -> Figure:
    """Swatches explaining the colours, with the budgets the picture is judged against."""
    s: list[Shape] = []
    xx = LEFT
    decided = (("caller decision", "decision", "shade"),) if m.conversation else ()
    lost = any(g.cause is GapCause.LOST for g in m.audio_gaps)
    extra = (*decided, *((("lost in transit", "lost", "shade"),) if lost else ()))
    for text, key, kind in (*LEGEND, *extra):
        if kind == "line":
            s.append(Stroke(xx, 14, xx + 16, 14, COLOUR[key], 3))
        else:
            s.append(Rect(xx, 7, 16, 14, COLOUR[key], 0.35 if kind == "shade" else 1.0))
        s.append(Label(xx + 21, 18, text, COLOUR["text"], 11))
        xx += 21 + len(text) * 11 * 0.55 + 18
    s.append(
        Label(
            LEFT,
            38,
            f"latency budget {m.max_latency_ms} ms (caller end -> agent start, "
            "as the verifier pairs them); "
            f"barge-in: the agent must stop within {BARGE_IN_YIELD_MS} ms; "
            "thin strips under/over the envelopes are VAD voiced spans",
            COLOUR["muted"],
            10,
        )
    )
    return Figure(WIDTH, 46, s, id="legend")


def header_figure(m: ReportModel) -> Figure:
    """The PNG's title line: which bundle, the verdict, the failing floors, degraded evidence."""
    verdict = (m.verdict or "no verdict").upper()
    colour = {"PASS": COLOUR["ok"], "FAIL": COLOUR["bad"], "ERROR": COLOUR["bad"]}.get(
        verdict, COLOUR["muted"]
    )
    s: list[Shape] = [
        Label(LEFT, 24, m.bundle.name, COLOUR["text"], 16, bold=True, max_w=560),
        Label(LEFT + 580, 24, verdict, colour, 16, bold=True),
    ]
    parts = [f"{clock(m.duration_ms)} of call", f"{len(m.turns)} turns"]
    if m.failed_floors:
        parts.append("failed floor: " + ", ".join(m.failed_floors))
    s.append(Label(LEFT + 660, 24, "  ·  ".join(parts), COLOUR["text"], 12, max_w=PLOT - 600))
    if m.degraded:
        text = "DEGRADED EVIDENCE: " + "; ".join(m.degraded)
        s.append(Label(LEFT, 46, text, COLOUR["bad"], 12, bold=True, max_w=PLOT))
    return Figure(WIDTH, 56 if m.degraded else 34, s, id="header")
