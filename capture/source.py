"""The source interface: an async stream of PcmFrames for two channels on one clock."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from turnscope.capture.frames import PcmFrame

Transport = Literal["file", "webrtc", "desktop_audio", "telephony"]


@dataclass
class SourceInfo:
    """What a source says about itself: for the result, the bundle and the degraded flag."""

    transport: Transport
    description: str
    realtime: bool
    duration_ms: float | None = None
    # How the source placed audio on the call clock, in words (the bundle's timing evidence):
    # each source states its own, so a new transport needs no table downstream.
    timing_evidence: str = ""
    warnings: list[str] = field(default_factory=list)
    degraded: list[str] = field(default_factory=list)  # reasons the evidence is incomplete
    # What happened on the call besides audio (a DTMF key press: type, channel, at_ms, digit),
    # on the call clock; the transcript lists them with the endpointer's events.
    events: list[dict[str, Any]] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    # Channels turnscope itself made (the scripted caller's audio as it sent it, on a call):
    # their exact zeros between lines are its own, not lost audio, and are not warned about.
    generated: tuple[str, ...] = ()


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
