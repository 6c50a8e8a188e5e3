"""Speech on the caller's own line that the caller never said: a noise bed's talkers (babble),
a room's echo of the agent, heard as the caller's turns. The scripted caller knows what it sent
and when, so each is said (a warning):
- a caller turn that overlaps no line it sent: turnscope counts it as the caller's turn, and the
  agent may well have heard it so (a yield to it is a yield to that noise, not to the caller);
- a caller turn that reaches far past the lines it carries (a talker heard right before or after
  a line, joined to it): its edges are the noise's, so the latency and turn-taking measured at
  them are not the caller's.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from turnscope.actors.caller.notes import CallerNote
from turnscope.reasons import Findings

if TYPE_CHECKING:  # a replay imports this module (the pipeline's sinks) and runs no caller
    from turnscope.actors.caller.lines import LineRecord

__all__ = ["not_sent", "past_lines", "sent_spans", "warn_own_line"]

# A turn this near a line the caller sent is that line's: the endpointer's edges (a reverb's
# tail, a start moved back over a breath) reach past the send record's.
NEAR_BEFORE_MS = 100.0
NEAR_AFTER_MS = 500.0
KEY_MS = 200.0  # a key press's tone, when the line carries it as audio
# A turn whose edge lies this far outside the lines it carries took its edge from something
# else (babble's edge errors are 100-400 ms at p90 and beyond: benchmarks/voices.py).
PAST_MS = 1000.0
SHOWN = 3  # turns named in the warning


def sent_spans(records: Sequence[LineRecord]) -> list[tuple[float, float]]:
    """When the caller's line carried what it sent (call ms): each spoken line's send record
    (a line cut off with no end yet runs on), each key press."""
    spans: list[tuple[float, float]] = []
    for r in records:
        sent = r.sent or {}
        start = sent.get("start_ms")
        if isinstance(start, int | float):
            end = sent.get("end_ms")
            spans.append((float(start), float(end) if isinstance(end, int | float) else math.inf))
        for key in sent.get("dtmf") or []:
            if isinstance(key.get("at_ms"), int | float):
                spans.append((float(key["at_ms"]), float(key["at_ms"]) + KEY_MS))
    return spans


def not_sent(
    dialogue: Sequence[Mapping[str, Any]], spans: Sequence[tuple[float, float]]
) -> list[Mapping[str, Any]]:
    """The caller turns of ``dialogue`` that overlap none of ``spans`` (nor come near one)."""
    return [
        turn
        for turn in dialogue
        if turn.get("speaker") == "caller"
        and not any(
            float(turn["start_ms"]) < end + NEAR_AFTER_MS
            and float(turn["end_ms"]) > start - NEAR_BEFORE_MS
            for start, end in spans
        )
    ]


def past_lines(
    dialogue: Sequence[Mapping[str, Any]], spans: Sequence[tuple[float, float]]
) -> list[tuple[Mapping[str, Any], float, float]]:
    """The caller turns that carry lines of ``spans`` but begin or end more than ``PAST_MS``
    outside them: each with how far before the first line it begins and after the last it ends
    (ms; 0 inside)."""
    out = []
    for turn in dialogue:
        if turn.get("speaker") != "caller":
            continue
        a, b = float(turn["start_ms"]), float(turn["end_ms"])
        inside = [(s, e) for s, e in spans if a < e and b > s]
        if not inside:
            continue
        before = max(0.0, min(s for s, _ in inside) - a)
        after = max(0.0, b - max(e for _, e in inside))
        if max(before, after) > PAST_MS:
            out.append((turn, before, after))
    return out


def _named(items: Sequence[Any], say: Callable[[Any], str]) -> str:
    """The first ``SHOWN`` of ``items`` as ``say`` names each, and how many more."""
    named = ", ".join(say(item) for item in items[:SHOWN])
    return named + (f" and {len(items) - SHOWN} more" if len(items) > SHOWN else "")


def _reach(item: tuple[Mapping[str, Any], float, float]) -> str:
    turn, before, after = item
    return (
        f"{float(turn['start_ms']) / 1000:.1f}-{float(turn['end_ms']) / 1000:.1f} s "
        f"({before / 1000:.1f} s before its line(s), {after / 1000:.1f} s after)"
    )


def _words(turn: Mapping[str, Any]) -> str:
    from turnscope.actors.caller.lines import quote  # the caller's own: imported with it

    return f"{float(turn['start_ms']) / 1000:.1f} s ({quote(str(turn.get('text') or ''), 30)})"


def warn_own_line(
    found: Findings, dialogue: Sequence[Mapping[str, Any]], records: Sequence[LineRecord]
) -> None:
    """Warn (once per call each) of the caller turns that reach far past the lines they carry,
    and of those the caller never sent."""
    spans = sent_spans(records)
    if stretched := past_lines(dialogue, spans):
        found.warn(
            CallerNote.PAST_ITS_LINES,
            f"{len(stretched)} caller turn(s) reach far past the lines they carry, at "
            f"{_named(stretched, _reach)}: their edges are other speech on the caller's line "
            "(its noise bed's talkers), so the latency and turn-taking measured at them are not "
            "the caller's",
        )
    if turns := not_sent(dialogue, spans):
        found.warn(
            CallerNote.NOT_SENT,
            f"{len(turns)} caller turn(s) overlap no line the caller sent, at "
            f"{_named(turns, _words)}: speech on the caller's line it never said (its noise "
            "bed's talkers, an echo), counted as the caller's turns; the agent may have heard "
            "them so too",
        )
