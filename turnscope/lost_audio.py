"""Whether audio lost in transit touched what the run measured. A lost packet is placed as
silence where it was lost (capture/webrtc/gaps.py); in the middle of a party's silence it
moves nothing, so the evidence stands (the source's warning says how much was lost). It is
degraded where the loss may have moved a figure:

- near a turn's start or end (``EDGE_MS``): the first or last sound may have been in it;
- inside a turn, ``SHARE`` of its audio or more: its words may be off;
- anywhere, a stretch as long as the shortest utterance the endpointer keeps
  (``vad.min_utterance_ms``): a whole short utterance may have been in it.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

from turnscope.asr.assembly import Turn
from turnscope.capture.source import LostAudio, LostIndex
from turnscope.reasons import Findings

__all__ = ["EDGE_MS", "SHARE", "LossNote", "lost_audio_findings"]

EDGE_MS = 60.0  # the boundaries' p95 target: a loss this near a boundary may have moved it
# Measured over calls losing 1 packet in 25 (4%): every call's content passed; 1 in 7 (14%):
# some failed (benchmarks/jitter_loss.py --live).
SHARE = 0.05


class LossNote(StrEnum):
    """Why lost audio degrades a run (turnscope/lost_audio.py)."""

    IN_TURNS = "audio_lost_in_turns"  # at a boundary, a share of a turn, or a long stretch
    COULD_HIDE_SPEECH = "audio_lost_could_hide_speech"  # a long stretch between turns


def _overlap(x: LostAudio, start: float, end: float) -> bool:
    return x.start_ms < end and x.end_ms > start


def _why(turn: Turn, lost: list[LostAudio], hide_ms: float) -> str | None:
    """Why the loss near ``turn`` may have moved what was measured of it, or None."""
    why = []
    if any(_overlap(x, turn.start_ms - EDGE_MS, turn.start_ms + EDGE_MS) for x in lost):
        why.append("at its start")
    if any(_overlap(x, turn.end_ms - EDGE_MS, turn.end_ms + EDGE_MS) for x in lost):
        why.append("at its end")
    longest = max((x.lost_ms for x in lost), default=0.0)
    if longest >= hide_ms:
        why.append(f"{longest:.0f} ms at once")
    inside = sum(x.lost_ms for x in lost if _overlap(x, turn.start_ms, turn.end_ms))
    share = inside / max(turn.end_ms - turn.start_ms, 1.0)
    if share >= SHARE:
        why.append(f"{share:.0%} of its audio")
    return ", ".join(why) or None


def lost_audio_findings(
    lost: Sequence[LostAudio], turns: Sequence[Turn], hide_ms: float
) -> Findings:
    """The run's evidence against the audio lost in transit (``lost``, located) and the
    turns found; ``hide_ms``: the shortest utterance the endpointer keeps."""
    out = Findings()
    for channel, mine in sorted(LostIndex.by_channel(lost).items()):
        theirs = [(i, t) for i, t in enumerate(turns) if t.speaker == channel]
        touched, near_any = [], set()
        for i, turn in theirs:
            near = mine.between(turn.start_ms - EDGE_MS, turn.end_ms + EDGE_MS)
            near_any.update(near)
            why = _why(turn, near, hide_ms)
            if why is not None:  # #i: the turn's number in the transcript and the report
                touched.append(f"#{i} at {turn.start_ms / 1000:.1f} s: {why}")
        if touched:
            out.degrade(
                LossNote.IN_TURNS,
                f"{channel} audio lost in transit touched {len(touched)} of its {len(theirs)} "
                f"turns ({'; '.join(touched)}): their timing or words may be off",
            )
        apart = [x for x in mine.lost if x not in near_any and x.lost_ms >= hide_ms]
        if apart:
            at = ", ".join(f"{x.start_ms / 1000:.1f} s ({x.lost_ms:.0f} ms)" for x in apart[:5])
            out.degrade(
                LossNote.COULD_HIDE_SPEECH,
                f"{channel} audio lost in transit between its turns at {at}: as long as an "
                f"utterance the endpointer keeps ({hide_ms:.0f} ms), so speech may be missing",
            )
    return out
