"""Turn-taking in report.html: result.json's ``turn_taking`` (Full-Duplex-Bench's measures per
condition, "not exercised" where the call gave none) and a table of every event, each clickable
to play from it and linked to its timeline row, like the caller's decisions."""

from __future__ import annotations

from turnscope.scoring.evidence.results import ResultDocument
from turnscope.scoring.report.markup import e, fmt, tag
from turnscope.scoring.report.model import ReportModel, seconds_per_row
from turnscope.scoring.report.reading import read_document
from turnscope.scoring.report.timeline import clock
from turnscope.scoring.turn_taking_model import Condition, TurnTaking, TurnTakingEvent

NAMES = {
    Condition.PAUSE_HANDLING.value: "pause handling (agent took the turn at a caller pause)",
    Condition.BACKCHANNEL.value: "backchannel (agent took a new turn at a caller backchannel)",
    Condition.SMOOTH_TURN_TAKING.value: "smooth turn-taking (agent answered an end of turn)",
    Condition.USER_INTERRUPTION.value: "user interruption (agent answered a barge-in)",
    "agent_backchannel": "the agent's own backchannel",
}
LEAD_MS = 1000.0  # play from a little before the event, to hear what led to it


FOLD_AFTER = 12  # events listed open; more are folded under one line


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x:.0f} ms"


def _conditions(tt: TurnTaking) -> str:
    rows = []
    per_min = tt.agent_backchannels_per_min
    rate = "-" if per_min is None else f"{per_min:.1f}"  # a rate over a minute or two: 0.1 is all
    for key, s in tt.conditions.items():
        if not s.events:
            value = tag("not exercised", "info")
        else:
            good = (s.tor or 0) == 0 if s.lower_is_better else (s.tor or 0) == 1
            value = tag(f"TOR {fmt(s.tor)} ({s.takeovers}/{s.events})", "ok" if good else "bad")
        better = "lower is better" if s.lower_is_better else "higher is better"
        latency = "" if s.latency_ms is None else f", latency {s.latency_ms:.0f} ms"
        rows.append((NAMES.get(key, key), f"{value} {e(better + latency)}"))
    rows += [
        ("barge-ins: t_stop / t_resp (median)", e(f"{_ms(tt.t_stop_ms)} / {_ms(tt.t_resp_ms)}")),
        ("after a barge-in", e(", ".join(f"{k} {n}x" for k, n in tt.behaviour.items()) or "-")),
        ("backchannel false-yield rate", e(fmt(tt.backchannel_false_yield_rate))),
        (
            "talk-over at a caller pause",
            e(
                "-"
                if tt.pause_talk_over_count is None
                else f"{tt.pause_talk_over_count}x, {_ms(tt.pause_talk_over_ms)}"
            ),
        ),
        (
            "the agent's own backchannels",
            e(f"{tt.agent_backchannels} ({rate} per min of caller)"),
        ),
    ]
    body = "".join(f"<tr><td>{e(k)}</td><td>{v}</td></tr>" for k, v in rows)
    return f'<table class="kv">{body}</table>'


def _what(ev: TurnTakingEvent) -> str:
    parts = []
    if ev.takeover is not None:
        parts.append(tag("took the turn" if ev.takeover else "no takeover", "info"))
    if ev.behaviour is not None:
        parts.append(tag(ev.behaviour.value.replace("_", " "), "info"))
    for name, v in (
        ("latency", ev.latency_ms),
        ("t_stop", ev.t_stop_ms),
        ("t_resp", ev.t_resp_ms),
        ("overlap", ev.overlap_ms),
    ):
        if v is not None:
            parts.append(e(f"{name} {v:.0f} ms"))
    return " ".join(parts)


def turn_taking(m: ReportModel) -> str:
    """The section, or nothing when result.json has no turn-taking measures."""
    tt = read_document(ResultDocument, m.bundle / "result.json", []).turn_taking
    if tt is None:
        return ""
    row_ms = seconds_per_row(m.duration_ms)
    rows = "".join(
        f'<tr class="tt-event" id="tt-{i}" data-t="{max(0.0, ev.start_ms - LEAD_MS) / 1000:.2f}">'
        f'<td class="t"><a href="#row-{int(ev.start_ms // row_ms)}">{clock(ev.start_ms)}</a></td>'
        f"<td>{e(NAMES.get(ev.kind, ev.kind))}</td><td>{e(ev.text)}</td>"
        f'<td class="t">{e(f"{ev.end_ms - ev.start_ms:.0f} ms")}</td><td>{_what(ev)}</td></tr>'
        for i, ev in enumerate(tt.events)
    )
    table = (
        "<table><thead><tr><th>time</th><th>event</th><th>the caller</th><th>lasting</th>"
        f"<th>the agent</th></tr></thead><tbody>{rows}</tbody></table>"
        if rows
        else '<div class="box note">No turn-taking event in this call.</div>'
    )
    if len(tt.events) > FOLD_AFTER:  # a long call's list: the measures above are the glance
        table = (
            f'<details class="tt-events"><summary>the {len(tt.events)} events, one per row '
            f"(show)</summary>{table}</details>"
        )
    return (
        '<section id="turn-taking"><h2>Turn-taking</h2><div class="meta">In Full-Duplex-Bench\'s '
        "terms (TOR: the share of events where the agent took the turn: spoke >= 1 s or more "
        "than 3 words). Click an event to play from just before it.</div>"
        f"{_conditions(tt)}{table}</section>"
    )
