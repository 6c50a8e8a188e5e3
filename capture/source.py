"""The source interface: an async stream of PcmFrames for two channels on one clock."""

from __future__ import annotations

import bisect
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Protocol, runtime_checkable

from turnscope.capture.frames import PcmFrame
from turnscope.reasons import Findings

Transport = Literal["file", "webrtc", "desktop_audio", "telephony"]


class SourceNote(StrEnum):
    """What a source warns about or why its evidence is degraded, as counted (the words are the
    note's message). A call's end, when it degrades the evidence, is its ``CallEnd`` code."""

    # a recording
    MIXED_DOWN = "recording_mixed_down"  # a file of more channels mixed to one party
    LENGTHS_DIFFER = "channel_lengths_differ"
    CHANNEL_SHORT = "channel_short"  # one channel's sound ends long before the other's
    TRUNCATED = "recording_truncated"  # decoding stopped early (a warning and a degradation)
    NAN_SAMPLES = "nan_samples"
    CUT_OFF = "recording_cut_off"  # the header declares more audio than the data holds
    CLIPPED = "clipped"
    LOW_RATE = "low_sample_rate"
    DC_OFFSET = "dc_offset"
    MAINS_HUM = "mains_hum"
    STOPPED = "replay_stopped"  # a signal or a full disk ended the replay
    # a call
    CALLER_AUDIO_LATE = "caller_audio_late"  # over MAX_SEND_LAG_MS: latencies off by that
    AGENT_AUDIO_LOST = "agent_audio_lost"  # frames lost in transit
    AGENT_AUDIO_LATE = "agent_audio_late"  # came after its pause was heard (webrtc/quiet.py)
    NO_AGENT_AUDIO = "no_agent_audio"
    AGENT_DELAY_ROSE = "agent_delay_rose"  # re-anchored: later audio placed where it arrived
    AGENT_CAUGHT_UP = "agent_caught_up"  # placed late at first: its silence dropped to catch up
    FOREIGN_SESSION = "foreign_session"  # WHIP session on another origin: no DELETE sent
    REFUSED_MESSAGES = "refused_messages"  # messages turnscope would not read
    NOT_JSON = "not_json"
    UNKNOWN_EVENTS = "unknown_events"
    BAD_BASE64 = "bad_base64"
    NOT_AUDIO = "payload_not_audio"
    CLEAR_STORM = "clear_storm"
    AGENT_UNDERRUN = "agent_underrun"  # the agent sent slower than real time
    UNCALIBRATED = "uncalibrated"  # sound devices whose timing was not measured
    INPUT_OVERFLOW = "input_overflow"
    OUTPUT_UNDERFLOW = "output_underflow"
    DEVICE_TIMING_MOVED = "device_timing_moved"
    LINE_LATE = "caller_line_late"  # the output buffer is longer than the lead


@dataclass(frozen=True)
class LostAudio:
    """Audio of ``channel`` lost in transit, located on the call clock: ``lost_ms`` of it went
    missing somewhere from ``start_ms`` to ``end_ms`` (the silence placed for it; wider than
    the loss when the sender also left audio unsent there)."""

    channel: str
    start_ms: float
    end_ms: float
    lost_ms: float


class LostIndex:
    """One channel's lost stretches in call order, found by the span they overlap: they never
    overlap each other (each is a gap the receiver placed), so their starts and ends are both
    sorted and a span's are found by bisection, not by a scan per turn or per gap."""

    def __init__(self, lost: Iterable[LostAudio]) -> None:
        self.lost = sorted(lost, key=lambda x: x.start_ms)
        self._starts = [x.start_ms for x in self.lost]
        self._ends = [x.end_ms for x in self.lost]

    @classmethod
    def by_channel(cls, lost: Iterable[LostAudio]) -> dict[str, LostIndex]:
        chans: dict[str, list[LostAudio]] = {}
        for x in lost:
            chans.setdefault(x.channel, []).append(x)
        return {ch: cls(xs) for ch, xs in chans.items()}

    def between(self, start_ms: float, end_ms: float) -> list[LostAudio]:
        """The stretches overlapping ``start_ms`` to ``end_ms``."""
        lo = bisect.bisect_right(self._ends, start_ms)
        hi = bisect.bisect_left(self._starts, end_ms)
        return self.lost[lo:hi]


@dataclass
class SourceInfo(Findings):
    """What a source says about itself: for the result, the bundle and the degraded flag. Its
    warnings and degraded reasons (``warn``, ``degrade``: a ``SourceNote`` code and a message)
    are the source's own; what later stages find they return (``turnscope.reasons``)."""

    transport: Transport
    description: str
    realtime: bool
    duration_ms: float | None = None
    # How the source placed audio on the call clock, in words (the bundle's timing evidence):
    # each source states its own, so a new transport needs no table downstream.
    timing_evidence: str = ""
    # What happened on the call besides audio (a DTMF key press: type, channel, at_ms, digit),
    # on the call clock; the transcript lists them with the endpointer's events.
    events: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    # Channels turnscope itself made (the scripted caller's audio as it sent it, on a call):
    # their exact zeros between lines are its own, not lost audio, and are not warned about.
    generated: tuple[str, ...] = ()
    # Audio lost in transit where the source could locate it: the run judges it against the
    # turns (turnscope/lost_audio.py). A source that loses audio it cannot locate degrades.
    lost: list[LostAudio] = field(default_factory=list)


@runtime_checkable
class Source(Protocol):
    """Anything that yields frames of the caller and agent channels in (roughly) time order.

    Frames of the two channels are interleaved as they happen; within a channel they are
    contiguous unless audio was lost, which the source reports in ``info``. A source may also
    offer ``stop(reason)``: end the stream early (a signal, a full disk), the evidence marked
    degraded with the reason; the run calls it when it has one.
    """

    info: SourceInfo

    def frames(self) -> AsyncIterator[PcmFrame]: ...
