"""What the endpointer emits as audio streams in: speech starts and stops, and finished utterances.

Times are call-clock milliseconds. ``at_ms`` is the refined audio time of the boundary;
``decided_ms`` is the stream time at which the endpointer could decide it (boundary + delay).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass(frozen=True, slots=True)
class Span:
    """A voiced stretch inside an utterance (pauses shorter than the end-of-turn gap between)."""

    start_ms: float
    end_ms: float


@dataclass(frozen=True, slots=True)
class SpeechStart:
    channel: str
    at_ms: float
    decided_ms: float
    first_in_utterance: bool  # False when speech resumes after a pause inside one utterance


@dataclass(frozen=True, slots=True)
class StartMoved:
    """The open utterance's speech starts later than its SpeechStart said: that opened on the
    room tone a recording brought before its first word (``room_tone_start``)."""

    channel: str
    at_ms: float
    decided_ms: float


@dataclass(frozen=True, slots=True)
class SpeechStop:
    channel: str
    at_ms: float
    decided_ms: float


@dataclass(frozen=True, slots=True)
class Utterance:
    """Speech of one channel between two end-of-turn silences, with its audio for ASR."""

    channel: str
    index: int  # per channel, in order
    start_ms: float
    end_ms: float
    spans: tuple[Span, ...]
    decided_ms: float
    audio: np.ndarray = field(repr=False, compare=False)  # float32 16 kHz, includes padding
    audio_start_ms: float = 0.0  # call time of audio[0]
    forced: bool = False  # ended by max_utterance_ms, not by silence

    @property
    def duration_ms(self) -> float:
        return self.end_ms - self.start_ms

    @property
    def key(self) -> str:
        return f"{self.channel}:{self.index}"


@dataclass(frozen=True, slots=True)
class EndOfTurn:
    """The channel has been silent for end_of_turn_ms: its utterance is complete."""

    utterance: Utterance

    @property
    def channel(self) -> str:
        return self.utterance.channel

    @property
    def at_ms(self) -> float:
        return self.utterance.end_ms

    @property
    def decided_ms(self) -> float:
        return self.utterance.decided_ms


@dataclass(frozen=True, slots=True)
class StreamGap:
    """Audio was missing on a channel (lost frames); the endpointer filled it with silence."""

    channel: str
    start_ms: float
    end_ms: float


SpeechEvent = SpeechStart | StartMoved | SpeechStop | EndOfTurn | StreamGap
