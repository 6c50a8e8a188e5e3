"""waveform_timeline.json of a run: the channels with their artifact keys and durations, and a
marker for every speech start and stop, audio gap (and, where the source could tell, why it
has no audio), output gap, barge-in, backchannel and agent event, on the call clock."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from turnscope.capture.frames import AGENT, CHANNELS
from turnscope.capture.source import LostIndex, SourceInfo
from turnscope.pipeline import PipelineResult
from turnscope.records import rounded
from turnscope.scoring.evidence.documents import (
    GapCause,
    Marker,
    TimelineChannel,
    TimelineTurn,
    WaveformTimeline,
)
from turnscope.scoring.evidence.manifest import FILES
from turnscope.scoring.verifier import verifier_facts

__all__ = ["gap_cause", "timeline_channels", "timeline_document"]


_MARKER_KEYS = {
    ("caller", "speech_start"): "speech_start",
    ("caller", "speech_stop"): "speech_stop",
    ("agent", "speech_start"): "output_start",
    ("agent", "speech_stop"): "output_stop",
}


def timeline_channels(channel_ms: Mapping[str, float]) -> list[TimelineChannel]:
    """Both channels with their artifact keys and durations (0 where nothing was captured)."""
    return [
        TimelineChannel(
            channel=ch, artifact_key=FILES[f"{ch}_audio"][1], duration_ms=channel_ms.get(ch, 0.0)
        )
        for ch in CHANNELS
    ]


# A gap and a lost stretch placed from the same frames agree to the resampler's tail.
_GAP_SLACK_MS = 5.0


def gap_cause(
    info: SourceInfo, lost: Mapping[str, LostIndex], channel: str, start_ms: float, end_ms: float
) -> GapCause | None:
    """Why a channel's audio gap has no audio: lost in transit where the source located lost
    audio in it (``lost``: ``info.lost`` by channel), not sent where the source counts loss by
    sequence number and none fell there (a DTX sender's pause); None where it could not tell,
    and before the channel's first audio."""
    index = lost.get(channel)
    if index is not None and index.between(start_ms - _GAP_SLACK_MS, end_ms + _GAP_SLACK_MS):
        return GapCause.LOST
    if channel == AGENT and start_ms > 0 and info.details.get("agent_loss_located"):
        return GapCause.NOT_SENT  # (from 0: before its first audio arrived)
    return None


def timeline_document(
    result: PipelineResult, events: Sequence[Mapping[str, Any]], channel_ms: Mapping[str, float]
) -> WaveformTimeline:
    """Channels with their artifact keys and durations, and a marker for every speech start and
    stop (caller), output start and stop (agent), output gap, barge-in and backchannel."""
    markers: list[Marker] = []
    lost: dict[str, LostIndex] | None = None  # made at the first gap (most runs have none)
    for e in events:
        key = _MARKER_KEYS.get((e["channel"], e["type"]))
        if key:
            markers.append(
                Marker(
                    key=key, offset_ms=e["at_ms"], channel=e["channel"], decided_ms=e["decided_ms"]
                )
            )
        elif e["type"] == "gap":
            lost = LostIndex.by_channel(result.info.lost) if lost is None else lost
            markers.append(
                Marker(
                    key="audio_gap",
                    offset_ms=e["start_ms"],
                    duration_ms=round(e["at_ms"] - e["start_ms"], 1),
                    channel=e["channel"],
                    cause=gap_cause(result.info, lost, e["channel"], e["start_ms"], e["at_ms"]),
                )
            )
    turns = result.assembly.turns
    facts = verifier_facts(result.assembly.dialogue())  # the dialogue the verifier scores
    for i, t in enumerate(turns):
        if t.speaker == "agent":
            for a, b in zip(t.spans, t.spans[1:], strict=False):
                markers.append(
                    Marker(
                        key="output_gap",
                        offset_ms=rounded(a.end_ms),
                        duration_ms=rounded(b.start_ms - a.end_ms),
                        turn_index=i,
                    )
                )
        if t.interrupt:
            barge_ins = facts.barge_ins_of(i)  # one per agent turn it overlapped; the first
            markers.append(
                Marker(
                    key="barge_in",
                    offset_ms=rounded(t.start_ms),
                    turn_index=i,
                    agent_stopped_after_ms=barge_ins[0].yield_ms if barge_ins else None,
                )
            )
    for b in result.assembly.backchannels:
        markers.append(
            Marker(
                key="backchannel",
                offset_ms=rounded(b.start_ms),
                duration_ms=rounded(b.end_ms - b.start_ms),
                text=b.text,
            )
        )
    for ev in (result.info.details.get("rtvi") or {}).get("events") or []:
        # The agent's own events (RTVI), as they arrived: beside the turns they explain.
        markers.append(Marker(key="agent_event", offset_ms=ev["at_ms"], text=ev["type"]))
    markers.sort(key=lambda m: (m.offset_ms, m.key))
    return WaveformTimeline(
        channels=timeline_channels({ch: rounded(ms) for ch, ms in channel_ms.items()}),
        markers=markers,
        turns=[
            TimelineTurn(
                turn_index=i,
                speaker=t.speaker,
                start_ms=rounded(t.start_ms),
                end_ms=rounded(t.end_ms),
                interrupt=t.interrupt,
            )
            for i, t in enumerate(turns)
        ],
    )
