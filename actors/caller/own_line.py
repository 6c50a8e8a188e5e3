"""Speech on the caller's own line that the caller never said: a noise bed's talkers (babble),
a room's echo of the agent, heard as the caller's turns. The scripted caller knows what it sent
and when, so a caller turn that overlaps no line it sent is said (a warning): turnscope counts
it as the caller's turn, and the agent may well have heard it so (a yield to it is a yield to
that noise, not to the caller).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from turnscope.actors.caller.notes import CallerNote
from turnscope.reasons import Findings

if TYPE_CHECKING:  # a replay imports this module (the pipeline's sinks) and runs no caller
    from turnscope.actors.caller.lines import LineRecord

__all__ = ["not_sent", "sent_spans", "warn_not_sent"]

# A turn this near a line the caller sent is that line's: the endpointer's edges (a reverb's
# tail, a start moved back over a breath) reach past the send record's.
NEAR_BEFORE_MS = 100.0
NEAR_AFTER_MS = 500.0
KEY_MS = 200.0  # a key press's tone, when the line carries it as audio
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


def warn_not_sent(
    found: Findings, dialogue: Sequence[Mapping[str, Any]], records: Sequence[LineRecord]
) -> None:
    """Warn (once per call) of the caller turns the caller never sent."""
    turns = not_sent(dialogue, sent_spans(records))
    if not turns:
        return
    from turnscope.actors.caller.lines import quote  # the caller's own: imported with it

    named = ", ".join(
        f"{float(t['start_ms']) / 1000:.1f} s ({quote(str(t.get('text') or ''), 30)})"
        for t in turns[:SHOWN]
    )
    more = f" and {len(turns) - SHOWN} more" if len(turns) > SHOWN else ""
    found.warn(
        CallerNote.NOT_SENT,
        f"{len(turns)} caller turn(s) overlap no line the caller sent, at {named}{more}: speech "
        "on the caller's line it never said (its noise bed's talkers, an echo), counted as the "
        "caller's turns; the agent may have heard them so too",
    )
