"""The call's receive jitter buffer against aiortc's own (both real, fed RTP packets): a lost
packet costs only itself, packets out of order go on in order, sequence numbers wrap."""

from __future__ import annotations

from aiortc.jitterbuffer import JitterBuffer
from aiortc.rtp import RtpPacket

from turnscope.capture.webrtc.jitter import AudioJitterBuffer

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
