"""The call's receive jitter buffer against aiortc's own (both real, fed RTP packets): a lost
packet costs only itself, packets out of order go on in order (a call's: a packet after its
successor is waited for, by the clock), sequence numbers wrap."""

from __future__ import annotations

from aiortc.jitterbuffer import JitterBuffer
from aiortc.rtp import RtpPacket

from turnscope.capture.webrtc.jitter import HOLD_MS, AudioJitterBuffer

SAMPLES = 960


def _handed_on(buffer: JitterBuffer, order: list[int]) -> list[tuple[int, int]]:
    """(the arrival index, the frame handed on) for every packet that went on."""
    out = []
    for k, n in enumerate(order):
        packet = RtpPacket(payload_type=111, sequence_number=n % 65536, timestamp=n * SAMPLES)
        packet._data = bytes([n % 256])
        _, frame = buffer.add(packet)
        if frame is not None:
            assert frame.data == bytes([frame.timestamp // SAMPLES % 256])
            out.append((k, frame.timestamp // SAMPLES))
    return out


def test_a_lost_packet_costs_only_itself():
    order = [n for n in range(200) if n != 50]
    ours = _handed_on(AudioJitterBuffer(), order)
    assert [f for _, f in ours] == order[:-4]  # all but the prefetch held at the end
    assert {k - order.index(f) for k, f in ours} == {4}  # every one 4 packets behind
    # aiortc's own: received packets dropped, and every later one 14 behind (280 ms).
    theirs = _handed_on(JitterBuffer(capacity=16, prefetch=4), order)
    assert len(theirs) < len(ours) - 10
    assert {k - order.index(f) for k, f in theirs[-50:]} == {14}


def test_out_of_order_goes_on_in_order_and_a_late_one_is_dropped():
    order = [0, 1, 2, 4, 3, 5, 6, 7, 8, 9, 10, 11, 12]
    assert [f for _, f in _handed_on(AudioJitterBuffer(), order)] == list(range(9))
    # 3 arrives after 8 packets beyond it: its place was given up, it is dropped
    late = [0, 1, 2, 4, 5, 6, 7, 8, 3, 9, 10, 11, 12]
    assert [f for _, f in _handed_on(AudioJitterBuffer(), late)] == [0, 1, 2, 4, 5, 6, 7, 8]


def test_sequence_numbers_wrap():
    order = list(range(65530, 65546))  # sent as 65530..65535, 0..9
    assert [f for _, f in _handed_on(AudioJitterBuffer(), order)] == order[:-4]


def test_the_packets_given_up_are_kept_by_the_rtp_time_after_them():
    """What the call locates lost audio by: the hole's size, keyed by the RTP time (counted
    from the first packet handed on, as aiortc's receiver maps it) of the packet after it."""
    buffer = AudioJitterBuffer(prefetch=0)
    start = 2**32 - 3 * SAMPLES  # the RTP time wraps in the call
    for n in [n for n in range(40) if n not in (10, 11, 12, 30)]:
        packet = RtpPacket(sequence_number=n, timestamp=(start + n * SAMPLES) % 2**32)
        packet._data = b"x"
        buffer.add(packet)
    assert buffer.holes == {13 * SAMPLES: 3, 31 * SAMPLES: 1}


class _Clock:
    """Monotonic seconds the test moves: one 20 ms packet comes per step."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _timed(
    order: list[int], hold_ms: float = HOLD_MS
) -> tuple[list[int], list[float], AudioJitterBuffer]:
    """Feed ``order`` one packet per 20 ms to a buffer that delivers itself, releasing as the
    call's 20 ms tick does (after the last, until nothing more is due): the frames delivered
    in order, how long each waited (ms), and the buffer."""
    clock = _Clock()
    came: dict[int, float] = {}
    out: list[tuple[int, float]] = []
    buffer = AudioJitterBuffer(
        prefetch=0,
        deliver=lambda f, pt: out.append((f.timestamp // SAMPLES, clock.now)),
        hold_ms=hold_ms,
        clock=clock,
    )
    for n in order:
        came[n] = clock.now
        packet = RtpPacket(payload_type=111, sequence_number=n % 65536, timestamp=n * SAMPLES)
        packet._data = b"x"
        buffer.add(packet)
        clock.now += 0.02
        buffer.release()  # the tick, between packets
    clock.now += 1.0
    buffer.release()
    return [n for n, _ in out], [round((t - came[n]) * 1000) for n, t in out], buffer


def test_a_packet_after_its_successor_goes_on_in_its_place():
    """Neighbours swapped on the wire (two paths): the late one is heard, not given up as lost
    (with no wait held it was dropped, and its 20 ms was a gap in the agent's audio)."""
    order = [0, 1, 2, 4, 3, 5, 6, 8, 7, 9]
    got, waits, buffer = _timed(order)
    assert got == list(range(10)) and buffer.holes == {} and buffer.too_late == 0
    assert max(waits) <= 20  # only the one that came first waited, for its predecessor
    # Without the wait (how a call's buffer was): 3 and 7 dropped, each a hole.
    dropped = _handed_on(AudioJitterBuffer(prefetch=0), order)
    assert [f for _, f in dropped] == [0, 1, 2, 4, 5, 6, 8, 9]


def test_a_lost_packet_is_given_up_after_the_wait_and_costs_only_itself():
    order = [n for n in range(30) if n != 10]
    got, waits, buffer = _timed(order)
    assert got == order and buffer.holes == {11 * SAMPLES: 1} and buffer.too_late == 0
    # The packets after the hole waited for it (40 ms, given up at the tick after), then none.
    assert max(waits) <= HOLD_MS + 20 and waits[-5:] == [0] * 5, waits


def test_a_packet_later_than_the_wait_is_dropped():
    """One that comes after its place was given up would be placed in the past: dropped, and
    counted as too late (the RTP statistics count it received; to the listener it is lost).
    A duplicate of one handed on is not."""
    order = [0, 1, 2, 4, 5, 6, 7, 3, 8, 9, 9, 5]
    got, _, buffer = _timed(order)
    assert got == [0, 1, 2, 4, 5, 6, 7, 8, 9] and buffer.holes == {4 * SAMPLES: 1}
    assert buffer.too_late == 1


def test_a_jump_of_thousands_is_a_gap_not_packets_coming_late():
    """An agent whose sequence numbers jump by thousands (a restarted sender): the hole is
    given up as any is, but its numbers are not kept to be counted if they come (there were
    as many to keep as the jump)."""
    order = [0, 1, 2, 3000, 3001, 3002, 3003, 5, 3004]
    got, _, buffer = _timed(order)
    assert got == [0, 1, 2, 3000, 3001, 3002, 3003, 3004] and buffer.too_late == 0
