"""What the reference agent's WebRTC sender can do to its packets on the wire, for the tests
of what the caller makes of them: lose some in transit, deliver some out of order, or leave
its pauses unsent (DTX)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from aiortc import RTCRtpSender
from aiortc.rtp import is_rtcp

__all__ = ["Dtx", "QuietFrames", "lose_every", "swap_every"]

DTX_HANGOVER = 10  # silent frames (200 ms) a DTX encoder still sends before it stops
DTX_REFRESH = 20  # then one frame every 400 ms (libopus's MAX_CONSECUTIVE_DTX)


class Dtx:
    """Which frames a DTX sender leaves unsent (PlaybackTrack's ``drop``): in digital silence,
    after its hangover it sends one frame (entering DTX) and then one every refresh; speech is
    always sent. The RTP timestamps jump over the pause and the sequence numbers do not."""

    def __init__(self) -> None:
        self.silent = 0

    def __call__(self, index: int, pcm: np.ndarray) -> bool:
        if pcm.any():
            self.silent = 0
            return False
        self.silent += 1
        into = self.silent - DTX_HANGOVER  # 1: the frame that enters DTX
        return into > 1 and (into - 1) % DTX_REFRESH != 0


class QuietFrames:
    """Counts the digital silence a track sent since its last sound (PlaybackTrack's ``drop``
    hook, handing the decision on to ``inner``: DTX or none)."""

    def __init__(self, inner: Callable[[int, np.ndarray], bool] | None = None) -> None:
        self.inner = inner
        self.count = 0

    def __call__(self, index: int, pcm: np.ndarray) -> bool:
        self.count = 0 if pcm.any() else self.count + 1
        return self.inner is not None and self.inner(index, pcm)


def lose_every(
    sender: RTCRtpSender,
    n: int,
    on_lost: Callable[[int], None] | None = None,
    only: Callable[[], bool] | None = None,
) -> None:
    """Lose every ``n``th RTP packet ``sender`` hands its transport: its sequence number is
    spent, as a packet a network drops spends it (the caller's statistics count it lost);
    ``on_lost`` hears each one's count; ``only``: lose it only when this says so (else it
    goes). aiortc has no hook for this, so the transport's send is wrapped on this one
    instance. (The interop pipecat bot loads this file by its path: it imports aiortc and
    numpy only.)"""
    transport = sender.transport
    send = transport._send_rtp
    count = 0

    async def lossy(data: bytes) -> None:
        nonlocal count
        if not is_rtcp(data):
            count += 1
            if count % n == 0 and (only is None or only()):
                if on_lost is not None:
                    on_lost(count)
                return
        await send(data)

    transport._send_rtp = lossy  # type: ignore[method-assign]


def swap_every(
    sender: RTCRtpSender,
    n: int,
    on_swapped: Callable[[int], None] | None = None,
    behind: int = 1,
) -> None:
    """Send every ``n``th RTP packet ``sender`` hands its transport after the ``behind``
    packets that follow it (1: neighbours swapped, as a network whose packets take two paths
    delivers them; more: that many packets late); a held one waits for them however long
    that takes. ``on_swapped`` hears each one's count. Installed before ``lose_every`` (which
    then wraps it), a lost packet's count is its place in the stream, not in the reordered
    one."""
    transport = sender.transport
    send = transport._send_rtp
    count = 0
    held: list[list] = []  # [packet, packets still to go out before it]

    async def swapping(data: bytes) -> None:
        nonlocal count
        if is_rtcp(data):
            await send(data)
            return
        count += 1
        if count % n == 0:
            held.append([data, behind])
            if on_swapped is not None:
                on_swapped(count)
            return
        await send(data)
        for item in held:
            item[1] -= 1
        while held and held[0][1] <= 0:
            await send(held.pop(0)[0])

    transport._send_rtp = swapping  # type: ignore[method-assign]
