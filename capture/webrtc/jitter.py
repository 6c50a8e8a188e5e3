"""The receive jitter buffer for a call's audio. aiortc's own audio buffer holds everything
behind a lost packet until its 16 slots are full, then drops received packets to catch up and
keeps the longer wait for the rest of the call: one lost packet cost 4 received ones and every
later frame waited 14 packets (280 ms) instead of 4 (aiortc 1.16, its JitterBuffer fed 200
packets with one missing). Over a call to the reference agent losing 1 packet in 25, 5.7 s of
audio that reached the caller was never heard, a reply's start among it; at 1 in 7, 3 of 5
replies were not found (benchmarks/jitter_loss.py). This buffer gives a hole up once
``prefetch`` later packets are in, so a lost packet costs only itself.

A call's receiver holds none (``prefetch=0``): a buffer that counts packets instead of time
holds a DTX sender's last packets until as many more come, one a refresh (400 ms), and the
call's audio stood still for 1.6 s at every pause. The caller's playout delay aiortc's 4
packets made (80 ms) is kept as a constant (``PLAYOUT_MS``, added where a frame is placed), so
the one-way delay and the latency split read as before. The cost: a packet that arrives after
the one sent after it is dropped (20 ms), where 4 packets of slack kept it.

Each hole it gives up is kept (``holes``: how many packets, by the RTP time of the packet after
them, as the receiver's frames carry it), so the call can say where on its clock audio was
lost, not only how much (webrtc/gaps.py)."""

from __future__ import annotations

import time

from aiortc import RTCRtpReceiver
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.rtp import RtpPacket

__all__ = ["AudioJitterBuffer", "tolerate_loss"]

PREFETCH = 4  # aiortc's audio prefetch: packets held before the oldest is handed on
PLAYOUT_MS = 80.0  # a call's playout delay, modelled: what aiortc's 4 packets held
_SLOT = "_RTCRtpReceiver__jitter_buffer"  # aiortc has no way to give a receiver its buffer


class AudioJitterBuffer(JitterBuffer):
    """One packet per frame (audio): each packet waits until ``prefetch`` later ones are in,
    then goes on in sequence order; a packet that comes after its place was given up is
    dropped (the receiver would drop it as a frame from the past anyway)."""

    def __init__(self, prefetch: int = PREFETCH) -> None:
        super().__init__(capacity=16, prefetch=prefetch)
        self._held: dict[int, RtpPacket] = {}  # by extended (unwrapped) sequence number
        self._last: int | None = None  # the extended number of the latest packet seen
        self._next = 0  # the extended number of the next packet to hand on
        self._origin: int | None = None  # the RTP time of the first packet handed on
        # Packets given up, by the RTP time of the packet handed on after them, counted from
        # the first one handed on (aiortc's TimestampMapper: the decoded frames' pts).
        self.holes: dict[int, int] = {}
        # When the last packet came (monotonic s, the event loop's clock): a pause the sender
        # leaves unsent is heard once none has come for a while (webrtc/quiet.py).
        self.last_packet_at: float | None = None

    def add(self, packet: RtpPacket) -> tuple[bool, JitterFrame | None]:
        self.last_packet_at = time.monotonic()
        seq = self._extend(packet.sequence_number)
        if seq < self._next or seq in self._held:
            return False, None  # too late, or a duplicate
        self._held[seq] = packet
        if len(self._held) <= self._prefetch:
            return False, None
        oldest = min(self._held)
        ready = self._held.pop(oldest)
        if self._origin is None:
            self._origin = ready.timestamp
        elif oldest > self._next:
            self.holes[(ready.timestamp - self._origin) % 2**32] = oldest - self._next
        self._next = oldest + 1
        return False, JitterFrame(data=ready._data, timestamp=ready.timestamp)  # type: ignore[attr-defined]

    def _extend(self, seq: int) -> int:
        """``seq`` on a line that does not wrap at 65536 (nearest to the latest seen)."""
        if self._last is None:
            self._last = self._next = seq
            return seq
        step = (seq - self._last) % 65536
        ext = self._last + (step if step < 32768 else step - 65536)
        self._last = max(self._last, ext)
        return ext


def tolerate_loss(receiver: RTCRtpReceiver, prefetch: int = PREFETCH) -> AudioJitterBuffer | None:
    """Give an audio ``receiver`` the buffer above, and return it; None (aiortc's own is kept)
    when this aiortc keeps its buffer elsewhere."""
    if not isinstance(getattr(receiver, _SLOT, None), JitterBuffer):
        return None
    buffer = AudioJitterBuffer(prefetch)
    setattr(receiver, _SLOT, buffer)
    return buffer
