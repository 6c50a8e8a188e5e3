"""The receive jitter buffer for a call's audio. aiortc's own audio buffer holds everything
behind a lost packet until its 16 slots are full, then drops received packets to catch up and
keeps the longer wait for the rest of the call: one lost packet cost 4 received ones and every
later frame waited 14 packets (280 ms) instead of 4 (aiortc 1.16, its JitterBuffer fed 200
packets with one missing). Over a call to the reference agent losing 1 packet in 25, 5.7 s of
audio that reached the caller was never heard, a reply's start among it; at 1 in 7, 3 of 5
replies were not found (benchmarks/jitter_loss.py). This buffer gives a hole up once the
packets after it waited long enough, so a lost packet costs only itself.

A call's receiver holds no packet in sequence (``prefetch=0``): a buffer that counts packets
instead of time holds a DTX sender's last packets until as many more come, one a refresh (400
ms), and the call's audio stood still for 1.6 s at every pause. Only the packets after a hole
wait for it, ``hold_ms`` (40 ms) by the clock: a packet a network delivers after its successor
(two paths) goes on in its place instead of being dropped and counted lost. The wait is timed,
not counted in packets, so it needs the buffer to hand frames to the receiver's decoder itself
(``deliver``: the receiver takes a frame only as a packet comes; the call's 20 ms tick gives
held ones up, ``release``; a tick that runs late does not: when the event loop was held up, a
packet that came meanwhile is still unread, asyncio reading one datagram per pass and the
packet's processing a task queued behind the timers then due, so the tick would give its place
up before it is seen: a likely cause of one test run under load whose count of lost packets was
off the agent's, its message not kept). The caller's playout delay aiortc's 4 packets made (80
ms) is kept as a constant (``PLAYOUT_MS``, added where a frame is placed), so the one-way delay
and the latency split read as before.

Each hole it gives up is kept (``holes``: how many packets, by the RTP time of the packet after
them, as the receiver's frames carry it), so the call can say where on its clock audio was
lost, not only how much (webrtc/gaps.py)."""

from __future__ import annotations

import time
from collections.abc import Callable

from aiortc import RTCRtpReceiver
from aiortc.jitterbuffer import JitterBuffer, JitterFrame
from aiortc.rtp import RtpPacket

__all__ = ["HOLD_MS", "AudioJitterBuffer", "tolerate_loss"]

PREFETCH = 4  # aiortc's audio prefetch: packets held before the oldest is handed on
PLAYOUT_MS = 80.0  # a call's playout delay, modelled: what aiortc's 4 packets held
# How long the packets after a hole wait for it: a packet reordered on the wire comes a packet
# or two (20-40 ms) late; a lost one then delays its successors this much (plus up to the
# 20 ms tick), the pipeline's view of the agent and nothing placed (frames keep their RTP time).
HOLD_MS = 40.0
# aiortc has no way to give a receiver its buffer, nor for a buffer to hand on more than one
# frame per packet that comes: its private names, looked up, and not used when absent.
_PRIVATE = "_RTCRtpReceiver__"
_SLOT = _PRIVATE + "jitter_buffer"

LATE_TRACKED = 50  # a hole's packets counted if they come too late: holes of up to 1 s
Deliver = Callable[[JitterFrame, int], None]  # a frame and its payload type, to the decoder


class AudioJitterBuffer(JitterBuffer):
    """One packet per frame (audio), handed on in sequence order. With ``deliver`` a packet
    after a hole waits up to ``hold_ms`` for it, then the hole is given up; without, a packet
    waits until ``prefetch`` later ones are in and ``add`` returns it. A packet that comes
    after its place was given up is dropped (the receiver would drop it as a frame from the
    past anyway)."""

    def __init__(
        self,
        prefetch: int = PREFETCH,
        *,
        deliver: Deliver | None = None,
        hold_ms: float = HOLD_MS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(capacity=16, prefetch=prefetch)
        # Waiting, by extended (unwrapped) sequence number, each with when it came.
        self._held: dict[int, tuple[RtpPacket, float]] = {}
        self._last: int | None = None  # the extended number of the latest packet seen
        self._next = 0  # the extended number of the next packet to hand on
        self._origin: int | None = None  # the RTP time of the first packet handed on
        self._deliver = deliver
        self._hold_s = hold_ms / 1000
        self._clock = clock
        # Packets given up, by the RTP time of the packet handed on after them, counted from
        # the first one handed on (aiortc's TimestampMapper: the decoded frames' pts).
        self.holes: dict[int, int] = {}
        self._given_up: set[int] = set()  # their extended sequence numbers, until one comes
        # Packets that came after their place was given up: never heard, as a lost one (the
        # receiver's RTP statistics count them received).
        self.too_late = 0
        # When the last packet came (``clock``: monotonic s, the event loop's): a pause the
        # sender leaves unsent is heard once none has come for a while (webrtc/quiet.py).
        self.last_packet_at: float | None = None

    @property
    def hold_ms(self) -> float:
        """How long packets after a hole wait for it (0: they do not, ``add`` hands on)."""
        return self._hold_s * 1000 if self._deliver is not None else 0.0

    def add(self, packet: RtpPacket) -> tuple[bool, JitterFrame | None]:
        now = self.last_packet_at = self._clock()
        seq = self._extend(packet.sequence_number)
        if seq < self._next or seq in self._held:
            if seq in self._given_up:
                self._given_up.discard(seq)
                self.too_late += 1
            return False, None  # too late, or a duplicate
        self._held[seq] = (packet, now)
        if self._deliver is not None:
            self.release(now)
            return False, None
        if len(self._held) <= self._prefetch:
            return False, None
        return False, self._hand_on(min(self._held))

    def release(self, now: float | None = None) -> None:
        """Deliver every packet due: those in sequence, and those after a hole once the first
        of them to come has waited ``hold_ms`` (the hole is given up)."""
        if self._deliver is None:
            return
        now = self._clock() if now is None else now
        while self._held:
            oldest = min(self._held)
            if oldest > self._next:  # a hole: waited for since the first packet after it came
                first_came = min(at for _, at in self._held.values())
                if now - first_came < self._hold_s:
                    return
            payload_type = self._held[oldest][0].payload_type
            self._deliver(self._hand_on(oldest), payload_type)

    def _hand_on(self, seq: int) -> JitterFrame:
        ready, _ = self._held.pop(seq)
        if self._origin is None:
            self._origin = ready.timestamp
        elif seq > self._next:
            self.holes[(ready.timestamp - self._origin) % 2**32] = seq - self._next
            if seq - self._next <= LATE_TRACKED:  # a jump of thousands is no reordering
                self._given_up.update(range(self._next, seq))
        self._next = seq + 1
        return JitterFrame(data=ready._data, timestamp=ready.timestamp)  # type: ignore[attr-defined]

    def _extend(self, seq: int) -> int:
        """``seq`` on a line that does not wrap at 65536 (nearest to the latest seen)."""
        if self._last is None:
            self._last = self._next = seq
            return seq
        step = (seq - self._last) % 65536
        ext = self._last + (step if step < 32768 else step - 65536)
        self._last = max(self._last, ext)
        return ext


def _decoder_inlet(receiver: RTCRtpReceiver) -> Deliver | None:
    """How ``receiver`` hands a frame to its decoder after its buffer (what it does with the
    frame ``add`` returns), or None when this aiortc keeps its parts elsewhere."""
    names = ("decoder_queue", "timestamp_mapper", "codecs")
    parts = [getattr(receiver, _PRIVATE + name, None) for name in names]
    if any(part is None for part in parts):
        return None
    queue, mapper, codecs = parts

    def deliver(frame: JitterFrame, payload_type: int) -> None:
        codec = codecs.get(payload_type)  # type: ignore[union-attr]
        # As the receiver: only while its decoder runs (from the track's start to its stop).
        if codec is not None and getattr(receiver, _PRIVATE + "decoder_thread", None):
            frame.timestamp = mapper.map(frame.timestamp)  # type: ignore[union-attr]
            queue.put((codec, frame))  # type: ignore[union-attr]

    return deliver


def tolerate_loss(
    receiver: RTCRtpReceiver, prefetch: int = PREFETCH, hold_ms: float = 0.0
) -> AudioJitterBuffer | None:
    """Give an audio ``receiver`` the buffer above, and return it; None (aiortc's own is kept)
    when this aiortc keeps its buffer elsewhere. ``hold_ms``: packets after a hole wait this
    long for it (when the receiver's decoder can be handed frames; else they do not)."""
    if not isinstance(getattr(receiver, _SLOT, None), JitterBuffer):
        return None
    deliver = _decoder_inlet(receiver) if hold_ms > 0 else None
    buffer = AudioJitterBuffer(prefetch, deliver=deliver, hold_ms=hold_ms)
    setattr(receiver, _SLOT, buffer)
    return buffer
