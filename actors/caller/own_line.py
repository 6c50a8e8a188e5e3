"""Speech on the caller's own line that the caller never said: a noise bed's talkers (babble),
a room's echo of the agent, heard as the caller's turns. The scripted caller knows what it sent
and when, so each is said (a warning):
- a caller turn that overlaps no line it sent: turnscope counts it as the caller's turn, and the
  agent may well have heard it so (a yield to it is a yield to that noise, not to the caller);
- a caller turn that reaches far past the lines it carries (a talker heard right before or after
  a line, joined to it): its edges are the noise's, so the latency and turn-taking measured at
  them are not the caller's.
And a line it sent that made no caller turn with words is said too: one heard as no words is
kept as the caller's turn with no text (``spoken_spans``, assembly rule 6: the reply is timed
from it), a warning; one that made no turn at all (nothing voiced, or an utterance the ASR
rejected) leaves the agent's reply after it timed from an earlier caller turn: degraded.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from turnscope.actors.caller.notes import CallerNote
from turnscope.capture.frames import CALLER
from turnscope.reasons import Findings

if TYPE_CHECKING:  # a replay imports this module (the pipeline's sinks) and runs no caller
    from turnscope.actors.caller.lines import LineRecord
    from turnscope.asr.assembly import Assembly

__all__ = [
    "Held",
    "LineHeard",
    "lines_unheard",
    "not_sent",
    "past_lines",
    "sent_spans",
    "spoken_spans",
    "warn_own_line",
    "warn_unheard",
]

# A turn this near a line the caller sent is that line's: the endpointer's edges (a reverb's
# tail, a start moved back over a breath) reach past the send record's.
NEAR_BEFORE_MS = 100.0
NEAR_AFTER_MS = 500.0
KEY_MS = 200.0  # a key press's tone, when the line carries it as audio
# A turn whose edge lies this far outside the lines it carries took its edge from something
# else (babble's edge errors are 100-400 ms at p90 and beyond: benchmarks/voices.py).
PAST_MS = 1000.0
SHOWN = 3  # turns named in the warning


def _played(r: LineRecord) -> tuple[float, float] | None:
    """When a line's audio played (call ms; one cut off with no end yet runs on), if it did."""
    sent = r.sent or {}
    start, end = sent.get("start_ms"), sent.get("end_ms")
    if not isinstance(start, int | float):
        return None
    return float(start), float(end) if isinstance(end, int | float) else math.inf


def sent_spans(records: Sequence[LineRecord]) -> list[tuple[float, float]]:
    """When the caller's line carried what it sent (call ms): each spoken line's send record
    (a line cut off with no end yet runs on), each key press."""
    spans: list[tuple[float, float]] = []
    for r in records:
        if (played := _played(r)) is not None:
            spans.append(played)
        for key in (r.sent or {}).get("dtmf") or []:
            if isinstance(key.get("at_ms"), int | float):
                spans.append((float(key["at_ms"]), float(key["at_ms"]) + KEY_MS))
    return spans


def _spoken(records: Sequence[LineRecord]) -> list[tuple[LineRecord, float, float]]:
    """The lines spoken as words, each with when it played (call ms; one cut off with no end
    yet runs on): a hum meant as a backchannel takes no floor, a key press is no speech."""
    return [
        (r, *played)
        for r in records
        if r.spoken_as != "backchannel" and (played := _played(r)) is not None
    ]


def spoken_spans(records: Sequence[LineRecord]) -> list[tuple[float, float]]:
    """When the caller's lines played (call ms): a caller utterance over one is the caller's
    turn even when the ASR makes out no word of it (``assemble``'s ``said``)."""
    return [(start, end) for _, start, end in _spoken(records)]


class Held(StrEnum):
    """What the caller's channel held while a line it sent played, when no words of it."""

    NO_WORDS = "no_words"  # an utterance with no words recognised: kept as a wordless turn
    REJECTED = "rejected"  # an utterance the ASR rejected (its reason): no turn
    NOTHING = "nothing_voiced"  # no utterance at all: no turn


@dataclass(frozen=True)
class LineHeard:
    """A line the caller sent that made no caller turn with words, and what was there."""

    record: LineRecord
    start_ms: float
    end_ms: float
    held: Held
    why: str = ""  # the ASR's reason, for REJECTED

    def named(self) -> str:
        from turnscope.actors.caller.lines import quote  # the caller's own: imported with it

        there = {
            Held.NO_WORDS: "an utterance with no words recognised",
            Held.REJECTED: f"an utterance rejected: {self.why}",
            Held.NOTHING: "nothing voiced",
        }[self.held]
        return (
            f"script[{self.record.line}] {quote(self.record.text, 30)} sent "
            f"{self.start_ms / 1000:.1f}-{self.end_ms / 1000:.1f} s ({there})"
        )


def lines_unheard(
    assembly: Assembly, records: Sequence[LineRecord], until_ms: float
) -> list[LineHeard]:
    """The lines the caller sent (and finished by ``until_ms``) that overlap no caller turn
    with words nor a caller backchannel, with what the caller's channel held there."""
    turns = [(t.start_ms, t.end_ms, t.text) for t in assembly.turns if t.speaker == CALLER]
    hums = [(b.start_ms, b.end_ms) for b in assembly.backchannels if b.speaker == CALLER]
    rejected = [
        (r.start_ms, r.end_ms, r.reason)
        for r in assembly.rejected
        if r.utterance.startswith(f"{CALLER}:")  # its key: channel:index
    ]
    out = []
    for rec, a, b in _spoken(records):
        if b > until_ms:
            continue  # cut off by the call's end: the recording may not hold it
        over = [text for s, e, text in turns if s < b and e > a]
        if any(over) or (not over and any(s < b and e > a for s, e in hums)):
            continue
        why = list(dict.fromkeys(reason for s, e, reason in rejected if s < b and e > a))
        if over:
            out.append(LineHeard(rec, a, b, Held.NO_WORDS))
        elif why:
            out.append(LineHeard(rec, a, b, Held.REJECTED, "; ".join(why)))
        else:
            out.append(LineHeard(rec, a, b, Held.NOTHING))
    return out


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


def warn_unheard(
    found: Findings, assembly: Assembly, records: Sequence[LineRecord], until_ms: float
) -> None:
    """Say the lines the caller sent that made no caller turn with words (``lines_unheard``):
    heard as no words (a warning: the turn is kept, with no text), or no turn at all (degraded:
    the reply after it is timed from an earlier caller turn)."""
    lines = lines_unheard(assembly, records, until_ms)
    if kept := [x for x in lines if x.held is Held.NO_WORDS]:
        found.warn(
            CallerNote.LINE_UNHEARD,
            f"{len(kept)} caller line(s) sent were heard as no words, at "
            f"{_named(kept, LineHeard.named)}: each is kept as a caller turn with no text, so "
            "the agent's reply is timed from it, and its words count as deleted in the caller's "
            "WER (the ASR made out none of them)",
        )
    if lost := [x for x in lines if x.held is not Held.NO_WORDS]:
        found.degrade(
            CallerNote.LINE_NO_TURN,
            f"{len(lost)} caller line(s) sent made no caller turn, at "
            f"{_named(lost, LineHeard.named)}: the agent's reply after each is timed from an "
            "earlier caller turn, so that latency is not the agent's",
        )
