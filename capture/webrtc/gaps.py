"""The agent's audio that never reached the caller, told apart by cause: lost in transit (RTP
sequence numbers skipped) or never sent (DTX in a pause, a sender that skipped frames: the
timestamps jump, the sequence numbers do not). Only the first is a fault of the line."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from turnscope.capture.webrtc.receiver import ReceiveStats

__all__ = ["AgentGaps", "split_gaps"]


@dataclass(frozen=True)
class AgentGaps:
    """Gaps in the agent's stream: lost in transit, and not sent (placed as silence either
    way, as a listener hears them). ``known``: the RTP statistics were read; without them
    every gap is counted lost, as before DTX was told apart."""

    lost_frames: int
    lost_ms: float
    unsent_ms: float
    known: bool


def _inbound_lost_packets(rtp_stats: list[dict[str, Any]] | None) -> int | None:
    """Packets of the agent's audio its sequence numbers say were lost (aiortc's inbound-rtp
    ``packetsLost``); None without the statistics."""
    inbound = [
        s for s in rtp_stats or [] if s.get("type") == "inbound-rtp" and s.get("kind") == "audio"
    ]
    if not inbound:
        return None
    return sum(max(0, int(s.get("packetsLost") or 0)) for s in inbound)


def split_gaps(stats: ReceiveStats, rtp_stats: list[dict[str, Any]] | None) -> AgentGaps:
    """Split the timestamp gaps the receiver placed into lost and unsent audio."""
    lost = _inbound_lost_packets(rtp_stats)
    if lost is None:
        return AgentGaps(stats.gap_frames, stats.gap_ms, 0.0, known=False)
    lost_ms = min(stats.gap_ms, lost * stats.frame_ms)
    return AgentGaps(lost, lost_ms, stats.gap_ms - lost_ms, known=True)
