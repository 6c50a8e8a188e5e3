"""The timeline's layout: the report model laid out once as figures (figure.py), which svg.py
and png.py render, so report.html and timeline.png show exactly the same thing.

Layout: one row per stretch of call (a short call fills one row, long calls wrap a minute per
row); in each row the caller lane sits above the agent lane, each with its turn bars, waveform
envelope and VAD voiced spans, and latency gaps are annotated in the band between them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turnscope.scoring.evidence.documents import GapCause
from turnscope.scoring.report.declutter import declutter
from turnscope.scoring.report.figure import TEXT, Figure, Label, Poly, Rect, Shape, Stroke
from turnscope.scoring.report.model import ReportModel, seconds_per_row
from turnscope.scoring.report.reading import Envelope

LEFT, PLOT, RIGHT = 70, 1200, 20
WIDTH = LEFT + PLOT + RIGHT
ROW_H = 214
DASH = "\u2013"  # en dash between two times

# Row geometry (y offsets inside a row); the two lanes mirror around the latency band.
AXIS_Y = 18
BAR_H = 18
LANE = {
    "caller": {"bar": 22, "env": 62, "vad": 83, "top": 22, "bottom": 87},
    "agent": {"bar": 162, "env": 141, "vad": 117, "top": 115, "bottom": 180},
}
ENV_HALF = 18
LAT_Y, LAT_LABEL_Y = 108, 103
NOTE_Y = (196, 208)  # barge-in / talk-over labels under the agent lane: two lines

COLOUR = {
    "caller": "#2563eb",
    "caller_env": "#93c5fd",
    "caller_bg": "#f1f6ff",
    "agent": "#7c3aed",
    "agent_env": "#c4b5fd",
    "agent_bg": "#f7f3ff",
    "ok": "#15803d",
    "bad": "#dc2626",
    "muted": "#6b7280",
    "grid": "#e5e7eb",
    "axis": "#9ca3af",
    "text": TEXT,
    "barge": "#f59e0b",
    "talk_over": "#ef4444",
    "backchannel": "#d97706",
    "gap": "#6b7280",
    "lost": "#b91c1c",
    "decision": "#0d9488",
}


def clock(ms: float, *, tenths: bool = True) -> str:
    """Call-clock time as m:ss.s (h:mm:ss.s past an hour)."""
    tenth = round(max(0.0, ms) / 100.0) if tenths else int(max(0.0, ms) // 1000) * 10
    h, rem = divmod(tenth, 36000)  # whole tenths first, so 59.96 s never prints as 0:60.0
    m, t = divmod(rem, 600)
    secs = f"{t // 10:02d}.{t % 10}" if tenths else f"{t // 10:02d}"
    return f"{h}:{m:02d}:{secs}" if h else f"{m}:{secs}"


# --- layout ------------------------------------------------------------------------------------


def _tick_step(row_ms: float) -> float:
    px_per_s = PLOT / (row_ms / 1000.0)
    for step in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800):
        if step * px_per_s >= 70:
            return step * 1000.0
    return 3600_000.0


@dataclass(frozen=True)
class _Row:
    """One row's time window and its time -> x mapping."""

    r0: float
    r1: float
    row_ms: float

    def x(self, t: float) -> float:
        return round(LEFT + (t - self.r0) * PLOT / self.row_ms, 1)

    def has(self, t: float) -> bool:
        return self.r0 <= t <= self.r1

    def span(self, a: float, b: float) -> tuple[float, float] | None:
        """x0 and width (at least 1 px) of [a, b] clipped to the row; None when outside."""
        lo, hi = max(a, self.r0), min(b, self.r1)
        if hi < lo or (hi == lo and not self.has(a)):
            return None
        return self.x(lo), max(1.0, self.x(hi) - self.x(lo))


def _frame(row: _Row, step: float) -> list[Shape]:
    """Lane backgrounds and names, the time axis and its grid."""
    s: list[Shape] = []
    end_x = row.x(row.r1)
    for ch, lane in LANE.items():
        h = lane["bottom"] - lane["top"]
        s.append(Rect(LEFT, lane["top"], end_x - LEFT, h, COLOUR[f"{ch}_bg"]))
        s.append(Label(LEFT - 8, lane["env"] + 4, ch, COLOUR[ch], 12, "end", bold=True))
    s.append(Stroke(LEFT, AXIS_Y, end_x, AXIS_Y, COLOUR["axis"]))
    t = float(np.ceil(row.r0 / step) * step)
    while t <= row.r1 + 1e-6:
        xt = row.x(t)
        s.append(Stroke(xt, AXIS_Y, xt, LANE["agent"]["bottom"], COLOUR["grid"]))
        s.append(Stroke(xt, AXIS_Y - 4, xt, AXIS_Y, COLOUR["axis"]))
        s.append(Label(xt, AXIS_Y - 6, clock(t, tenths=False), COLOUR["muted"], 10, "middle"))
        t += step
    return s


def _shading(m: ReportModel, row: _Row) -> list[Shape]:
    """Overlaps across both lanes, and audio gaps over the channel that lost audio."""
    s: list[Shape] = []
    top, bottom = LANE["caller"]["top"], LANE["agent"]["bottom"]
    for o in m.overlaps:
        sp = row.span(o.start_ms, o.end_ms)
        if sp:
            barge = o.kind == "barge_in"
            what = "barge-in overlap" if barge else "agent talked over the caller"
            s.append(
                Rect(
                    sp[0],
                    top,
                    sp[1],
                    bottom - top,
                    COLOUR["barge" if barge else "talk_over"],
                    0.22,
                    title=f"{what}: {clock(o.start_ms)}{DASH}{clock(o.end_ms)}",
                    mark=f"overlap-{o.kind}",
                )
            )
    for g in m.audio_gaps:
        lane = LANE.get(g.channel)
        sp = row.span(g.start_ms, g.start_ms + g.duration_ms)
        if lane and sp:
            colour, alpha, what = _GAP_LOOK[g.cause]
            tip = f"{clock(g.start_ms)} {what.format(ms=g.duration_ms)}"
            s.append(Rect(sp[0], lane["top"], sp[1], lane["bottom"] - lane["top"],
                          COLOUR[colour], alpha, title=tip, mark="audio-gap"))  # fmt: skip
    return s


# Each audio gap by its cause: colour, opacity, what its hover says.
_GAP_LOOK: dict[GapCause | None, tuple[str, float, str]] = {
    None: ("gap", 0.35, "audio gap: {ms:.0f} ms with no audio"),
    GapCause.LOST: ("lost", 0.6, "lost in transit: {ms:.0f} ms of audio (heard as silence)"),
    # A DTX sender's pause: silence it did not send, no fault; drawn faintly.
    GapCause.NOT_SENT: ("gap", 0.12, "not sent: {ms:.0f} ms the agent sent nothing (silence)"),
}


def _envelope(env: Envelope | None, row: _Row, ch: str) -> list[Shape]:
    """The channel's envelope in the row as filled polygons, skipping silence (smaller file)."""
    if env is None or not len(env.peaks):
        return []
    i0, i1 = int(row.r0 // env.bin_ms), int(np.ceil(row.r1 / env.bin_ms))
    peaks = env.peaks[i0:i1]
    loud = np.concatenate([[False], peaks >= 0.01, [False]]).astype(np.int8)
    edges = np.flatnonzero(np.diff(loud))
    c = LANE[ch]["env"]
    out: list[Shape] = []
    for a, b in zip(edges[::2], edges[1::2], strict=True):
        xs = [row.x((i0 + i + 0.5) * env.bin_ms) for i in range(a, b)]
        hs = [max(0.5, float(p) * ENV_HALF) for p in peaks[a:b]]
        if len(xs) == 1:  # a lone bin still gets a pixel of width
            xs, hs = [xs[0], xs[0] + 1], hs * 2
        top = [(xi, c - h) for xi, h in zip(xs, hs, strict=True)]
        bottom = [(xi, c + h) for xi, h in zip(reversed(xs), reversed(hs), strict=True)]
        out.append(Poly((*top, *bottom), COLOUR[f"{ch}_env"]))
    return out


def _speech(m: ReportModel, row: _Row) -> list[Shape]:
    """Envelopes, VAD voiced spans, turn bars with their text, backchannels."""
    s: list[Shape] = []
    for ch, lane in LANE.items():
        s.extend(_envelope(m.envelopes.get(ch), row, ch))
        for a, b in m.voiced.get(ch, []):
            sp = row.span(a, b)
            if sp:
                s.append(Rect(sp[0], lane["vad"], sp[1], 4, COLOUR[ch], 0.85))
    for t in m.turns:
        lane = LANE.get(t.speaker)
        sp = row.span(t.start_ms, t.end_ms) if lane else None
        if not lane or not sp:
            continue
        tip = f"#{t.index} {t.speaker} {clock(t.start_ms)}{DASH}{clock(t.end_ms)}: {t.text}"
        stroke = COLOUR["barge"] if t.interrupt else None
        s.append(
            Rect(
                sp[0],
                lane["bar"],
                sp[1],
                BAR_H,
                COLOUR[t.speaker],
                stroke=stroke,
                title=tip,
                mark="turn",
                play_s=t.start_ms / 1000,
            )
        )
        s.append(
            Label(
                sp[0] + 4, lane["bar"] + 13, f"#{t.index} {t.text}", "#ffffff", 11, max_w=sp[1] - 6
            )
        )
    for b in m.backchannels:
        lane = LANE.get(b.speaker, LANE["caller"])
        sp = row.span(b.start_ms, b.end_ms)
        if sp:
            w = max(3.0, sp[1])
            s.append(
                Rect(
                    sp[0],
                    lane["bar"] + 3,
                    w,
                    BAR_H - 6,
                    COLOUR["backchannel"],
                    title=f"backchannel {clock(b.start_ms)}: {b.text}",
                    mark="backchannel",
                    play_s=b.start_ms / 1000 - 1.0,
                )
            )
            s.append(
                Label(
                    sp[0] + w + 2,
                    lane["bar"] + 13,
                    b.text,
                    COLOUR["backchannel"],
                    10,
                    max_w=90,
                )
            )
    return s


def _latency(m: ReportModel, row: _Row) -> list[Shape]:
    """Caller end -> the agent turn the verifier pairs with it, with its ms in budget colour."""
    s: list[Shape] = []
    for g in m.gaps:
        lo, hi = sorted((g.caller_end_ms, g.agent_start_ms))
        sp = row.span(lo, hi)
        if not sp:
            continue
        colour = COLOUR["ok" if g.ok else "bad"]
        xa, xb = sp[0], sp[0] + sp[1]
        s.append(Stroke(xa, LAT_Y, xb, LAT_Y, colour, 2, dash=g.gap_ms < 0, mark="latency"))
        for edge, xe in ((lo, xa), (hi, xb)):
            if row.has(edge):
                s.append(Stroke(xe, LAT_Y - 4, xe, LAT_Y + 4, colour, 2))
        s += _split(m, row, g.agent)
        if row.has(g.agent_start_ms):  # labelled once, in the row where the agent starts
            if g.gap_ms < 0:
                text = f"{g.gap_ms:.0f} ms early"
            elif g.ok:
                text = f"{g.gap_ms:.0f} ms"
            else:
                text = f"{g.gap_ms:.0f} ms > {m.max_latency_ms}"
            s.append(
                Label(
                    max(LEFT + 24, (xa + xb) / 2),
                    LAT_LABEL_Y,
                    text,
                    colour,
                    10,
                    "middle",
                    bold=True,
                    mark="latency-label",
                    urgent=not g.ok,
                )
            )
    return s


SPLIT_COLOURS = {"endpointing": "#2563eb", "processing": "#d97706", "delivery": "#7c3aed"}


def _split(m: ReportModel, row: _Row, agent_turn: int) -> list[Shape]:
    """Under a reply's latency line, its split: caller end -> decision -> speaking -> heard."""
    b = m.latency_breakdown or {}
    r = next((x for x in b.get("replies") or [] if x.get("agent_turn") == agent_turn), None)
    if r is None or "missing" in r:
        return []
    t0 = m.turns[r["caller_turn"]].end_ms if r["caller_turn"] < len(m.turns) else None
    if t0 is None:
        return []
    out: list[Shape] = []
    at = t0
    for name, colour in SPLIT_COLOURS.items():
        ms = max(0.0, float(r.get(f"{name}_ms") or 0))
        sp = row.span(at, at + ms)
        if sp:
            y = LAT_Y + 5
            out.append(Stroke(sp[0], y, sp[0] + sp[1], y, colour, 3, mark=f"split-{name}"))
        at += ms
    return out


def _barge_ins(m: ReportModel, row: _Row) -> list[Shape]:
    """Where the caller cut in, how long the agent kept talking, and harmful talk-overs."""
    s: list[Shape] = []
    turns = {t.index: t for t in m.turns}
    top, bottom = LANE["caller"]["top"], LANE["agent"]["bottom"]
    for b in m.barge_ins:
        if not row.has(b.at_ms):
            continue
        colour = COLOUR["muted"] if b.ok is None else COLOUR["ok" if b.ok else "bad"]
        xb = row.x(b.at_ms)
        s.append(Stroke(xb, top - 2, xb, bottom, colour, 2, mark="barge-in"))
        s.append(Poly(((xb - 5, top - 7), (xb + 5, top - 7), (xb, top)), colour))
        if b.agent is not None and b.yield_ms is not None:
            sp = row.span(b.at_ms, turns[b.agent].end_ms)
            if sp:
                s.append(Rect(sp[0], bottom + 1, sp[1], 4, colour))
            verb = "yielded in" if b.ok else "kept talking"
            text = f"barge-in #{b.caller}: agent {verb} {b.yield_ms:.0f} ms"
        else:
            text = f"barge-in #{b.caller}: agent was not speaking"
        s.append(Label(xb + 3, NOTE_Y[0], text, colour, 10, bold=True, mark="barge-in-label"))
    for o in m.overlaps:
        if o.kind == "talk_over" and o.agent in m.harmful and row.has(o.start_ms):
            s.append(
                Label(
                    row.x(o.start_ms) + 3,
                    NOTE_Y[0],
                    f"agent #{o.agent} talked over caller #{o.caller}",
                    COLOUR["bad"],
                    10,
                    bold=True,
                    mark="talk-over-label",
                )
            )
    return s


def _agent_events(m: ReportModel, row: _Row) -> list[Shape]:
    """The agent's own events (RTVI, as they arrived): a tick on the agent lane's edge each,
    named on hover."""
    s: list[Shape] = []
    top = LANE["agent"]["top"]
    for at, name in m.agent_events:
        if row.has(at):
            s.append(
                Rect(
                    row.x(at) - 1,
                    top,
                    2,
                    7,
                    COLOUR["muted"],
                    title=f"{clock(at)} agent: {name}",
                    mark="agent-event",
                )
            )
    return s


def _decisions(m: ReportModel, row: _Row) -> list[Shape]:
    """A reacting caller's decisions: a line across the caller lane each, in a band that plays
    from the agent turn it heard when clicked."""
    top, h = LANE["caller"]["top"], LANE["caller"]["bottom"] - LANE["caller"]["top"]
    s: list[Shape] = []
    for d in m.conversation.decisions if m.conversation else []:
        if row.has(d.at_ms):
            x, c = row.x(d.at_ms), COLOUR["decision"]
            tip = f"{clock(d.at_ms)} caller decided ({d.kind.value}): {d.decision.outcome}"
            s.append(Stroke(x, top, x, top + h, c, 2))
            s.append(Rect(x - 5, top, 10, h, c, 0.15, title=tip, mark="decision",
                          play_s=d.play_ms / 1000))  # fmt: skip
    return s


def _shapes(m: ReportModel, row: _Row, step: float) -> list[Shape]:
    shapes = [  # the annotations drawn last, none printed over another (declutter.py)
        *_frame(row, step),
        *_shading(m, row),
        *_speech(m, row),
        *_latency(m, row),
        *_barge_ins(m, row),
        *_agent_events(m, row),
        *_decisions(m, row),
    ]
    return declutter(shapes, NOTE_Y)


ZOOM_PAD_MS = 1500.0
ZOOM_MAX_MS = 15_000.0


def zoom_figure(m: ReportModel, start_ms: float, end_ms: float, index: int) -> Figure:
    """A turn close up: the same drawing over the turn and 1.5 s either side (at most 15 s)."""
    r0 = max(0.0, start_ms - ZOOM_PAD_MS)
    r1 = min(max(m.duration_ms, 1.0), end_ms + ZOOM_PAD_MS, r0 + ZOOM_MAX_MS)
    row = _Row(r0, r1, max(r1 - r0, 1.0))
    title = f"turn {index}: {clock(r0)}{DASH}{clock(r1)}"
    return Figure(
        WIDTH, ROW_H, _shapes(m, row, _tick_step(r1 - r0)), id=f"zoom-{index}", title=title
    )


def row_figures(m: ReportModel) -> list[Figure]:
    """One figure per timeline row, back to front: frame, shading, speech, annotations."""
    row_ms = seconds_per_row(m.duration_ms)
    n_rows = max(1, int(np.ceil(m.duration_ms / row_ms)))
    step = _tick_step(row_ms)
    figures = []
    for r in range(n_rows):
        row = _Row(r * row_ms, min((r + 1) * row_ms, max(m.duration_ms, 1.0)), row_ms)
        shapes = _shapes(m, row, step)
        title = f"{clock(row.r0, tenths=False)}{DASH}{clock(row.r1, tenths=False)}"
        figures.append(Figure(WIDTH, ROW_H, shapes, id=f"row-{r}", title=title))
    return figures
