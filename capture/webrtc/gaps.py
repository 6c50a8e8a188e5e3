"""The agent's audio that never reached the caller, told apart by cause: lost in transit (RTP
sequence numbers skipped) or never sent (DTX in a pause, a sender that skipped frames: the
timestamps jump, the sequence numbers do not). Only the first is a fault of the line, and where
it fell says whether it touched what was measured (turnscope/lost_audio.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aiortc import RTCPeerConnection

from turnscope.capture.channels import AGENT
from turnscope.capture.source import LostAudio
from turnscope.capture.webrtc.receiver import PlacedGap, ReceiveStats

__all__ = [
    "MAX_LOST_REPORTED", "AgentGaps", "left_unsent", "rtp_stats", "split_gaps", "where_lost",
]  # fmt: skip


@dataclass(frozen=True)
class AgentGaps:
    """Gaps in the agent's stream: lost in transit, and not sent (placed as silence either
    way, as a listener hears them). ``known``: the RTP statistics were read; without them
    every gap is counted lost, as before DTX was told apart. ``located``: where each lost
    packet was placed (``lost``); ``unplaced``: lost packets no later one followed (the call
    ended first: no audio of the call is missing for them); ``too_late``: of the lost, packets
    that came after the receive buffer had given their place up (webrtc/jitter.py)."""

    lost_frames: int
    lost_ms: float
    unsent_ms: float
    known: bool
    lost: tuple[LostAudio, ...] = ()
    located: bool = False
    unplaced: int = 0
    too_late: int = 0


def left_unsent(gap: PlacedGap, holes: dict[int, int]) -> bool:
    """A gap no packet the receive buffer gave up explains: the sender left that audio unsent
    (DTX in a pause). Its holes are kept before the frame after them is placed, so this holds
    from the moment the gap is."""
    return gap.pts not in holes


async def rtp_stats(pc: RTCPeerConnection) -> list[dict[str, Any]]:
    """The connection's statistics (aiortc's getStats), each as a dict of its plain values:
    what tells loss from DTX (``split_gaps``) and is written to the call's details."""
    report = await pc.getStats()
    return [
        {k: v for k, v in vars(s).items() if isinstance(v, (int, float, str))}
        for s in report.values()
    ]


def _inbound_lost_packets(rtp_stats: list[dict[str, Any]] | None) -> int | None:
    """Packets of the agent's audio its sequence numbers say were lost (aiortc's inbound-rtp
    ``packetsLost``); None without the statistics."""
    inbound = [
        s for s in rtp_stats or [] if s.get("type") == "inbound-rtp" and s.get("kind") == "audio"
    ]
    if not inbound:
        return None
    return sum(max(0, int(s.get("packetsLost") or 0)) for s in inbound)


def _locate(stats: ReceiveStats, holes: dict[int, int]) -> tuple[list[LostAudio], int] | None:
    """Each hole the receive buffer gave up, at the gap placed before the frame after it, and
    how many packets were placed so; None when a hole inside the placed stream has no gap (a
    hole whose frame came after the placer stopped, as the call ended, is not placed)."""
    by_pts = {g.pts: g for g in stats.gap_log}
    out = []
    placed = 0
    for pts, n in sorted(holes.items()):
        gap = by_pts.get(pts)
        if gap is None:
            if stats.end_pts is not None and pts >= stats.end_pts:
                continue  # after the last frame placed: none of the call's audio is missing
            return None
        lost_ms = min(gap.end_ms - gap.start_ms, n * stats.frame_ms)
        out.append(LostAudio(AGENT, round(gap.start_ms, 1), round(gap.end_ms, 1), lost_ms))
        placed += n
    return out, placed


def split_gaps(
    stats: ReceiveStats,
    rtp_stats: list[dict[str, Any]] | None,
    holes: dict[int, int] | None = None,
    too_late: int = 0,
) -> AgentGaps:
    """Split the timestamp gaps the receiver placed into lost and unsent audio; ``holes``: the
    packets the receive buffer gave up (webrtc/jitter.py), to locate the lost ones;
    ``too_late``: how many of those came after all (lost to the listener, though the RTP
    statistics count them received)."""
    lost = _inbound_lost_packets(rtp_stats)
    if lost is None:
        return AgentGaps(stats.gap_frames, stats.gap_ms, 0.0, known=False)
    lost += too_late
    lost_ms = min(stats.gap_ms, lost * stats.frame_ms)
    located = _locate(stats, holes) if holes is not None else None
    if located is None:
        return AgentGaps(lost, lost_ms, stats.gap_ms - lost_ms, known=True, too_late=too_late)
    where, placed = located
    return AgentGaps(
        lost, lost_ms, stats.gap_ms - lost_ms, known=True,
        lost=tuple(where), located=True, unplaced=max(0, lost - placed), too_late=too_late,
    )  # fmt: skip


MAX_LOST_REPORTED = 200  # lost stretches written to result.json (all are judged)


def where_lost(gaps: AgentGaps) -> str:
    """How the located loss fell, for the call's warning: ", in 61 places (the longest 40 ms)"."""
    if not gaps.located:
        return ""
    longest = max((x.lost_ms for x in gaps.lost), default=0.0)
    n = len(gaps.lost)
    out = f", in {n} place{'s' if n > 1 else ''} (the longest {longest:.0f} ms)" if n else ""
    if gaps.unplaced:
        out += f"; {gaps.unplaced} after the agent's last audio"
    if gaps.too_late:
        out += f"; {gaps.too_late} of them came, too late to be heard"
    return out
