"""The agent's gaps told apart by cause and located (capture/webrtc/gaps.py): the receiver's
gaps and RTP statistics as a call reads them, the receive buffer's holes as it keeps them."""

from __future__ import annotations

from turnscope.capture.webrtc.gaps import split_gaps, where_lost
from turnscope.capture.webrtc.receiver import PlacedGap, ReceiveStats

INBOUND = [{"type": "inbound-rtp", "kind": "audio", "packetsLost": 3}]


def _stats() -> ReceiveStats:
    """Three gaps: one lost packet at 1 s, a DTX pause of 400 ms at 2 s, two lost at 3 s."""
    gaps = [PlacedGap(960 * 51, 1000.0, 1020.0), PlacedGap(960 * 120, 2000.0, 2400.0),
            PlacedGap(960 * 200, 3000.0, 3040.0)]  # fmt: skip
    return ReceiveStats(frames=300, gaps=3, gap_frames=23, gap_ms=460.0, gap_log=gaps,
                        end_pts=960 * 300)  # fmt: skip


def test_lost_packets_are_located_at_their_gaps_and_a_dtx_pause_is_not_loss():
    gaps = split_gaps(_stats(), INBOUND, holes={960 * 51: 1, 960 * 200: 2})
    assert gaps.located and gaps.lost_frames == 3 and gaps.unsent_ms == 400.0
    assert [(x.start_ms, x.end_ms, x.lost_ms) for x in gaps.lost] == [
        (1000.0, 1020.0, 20.0),
        (3000.0, 3040.0, 40.0),
    ]
    assert where_lost(gaps) == ", in 2 places (the longest 40 ms)"


def test_a_hole_with_no_gap_leaves_the_loss_unlocated():
    """A hole inside the placed stream with no gap there: where is not known, and the call
    degrades as before locating."""
    gaps = split_gaps(_stats(), INBOUND, holes={960 * 51: 1, 960 * 150: 2})
    assert not gaps.located and gaps.lost == () and gaps.lost_frames == 3
    assert where_lost(gaps) == ""


def test_a_hole_after_the_last_frame_placed_is_not_placed():
    """The call ended as the receive buffer gave a hole up: its frame never reached the
    placer, and none of the call's audio is missing for it."""
    gaps = split_gaps(_stats(), INBOUND, holes={960 * 51: 1, 960 * 200: 2, 960 * 310: 1})
    assert gaps.located and len(gaps.lost) == 2 and gaps.unplaced == 0


def test_packets_lost_after_the_last_one_are_counted_not_placed():
    stats = _stats()
    gaps = split_gaps(stats, [{**INBOUND[0], "packetsLost": 5}], holes={960 * 51: 1, 960 * 200: 2})
    assert gaps.located and gaps.unplaced == 2
    assert where_lost(gaps).endswith("; 2 after the agent's last audio")


def test_without_statistics_every_gap_is_counted_lost():
    gaps = split_gaps(_stats(), None, holes={960 * 51: 1})
    assert not gaps.known and not gaps.located and gaps.lost_ms == 460.0


def test_a_packet_that_came_too_late_is_lost_not_unsent():
    """The receive buffer gave a packet's place up and it came after (webrtc/jitter.py): the
    RTP statistics count it received, yet no one heard it: lost, said so, not silence the
    agent never sent."""
    one_late = [{**INBOUND[0], "packetsLost": 2}]  # the third of the holes came, too late
    gaps = split_gaps(_stats(), one_late, holes={960 * 51: 1, 960 * 200: 2}, too_late=1)
    assert gaps.lost_frames == 3 and gaps.unsent_ms == 400.0 and gaps.unplaced == 0
    assert where_lost(gaps).endswith("; 1 of them came, too late to be heard")
