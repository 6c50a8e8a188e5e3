"""The agent's pauses heard while it sends nothing (capture/webrtc/quiet.py): the rule on fed
frames. The real DTX call is test_live_calls.py's good agent."""

from __future__ import annotations

import numpy as np

from turnscope.capture.frames import AGENT, PcmFrame
from turnscope.capture.webrtc.quiet import QUIET_MS, Behind, QuietFill

FRAME = 320  # 20 ms at 16 kHz


def frames(start_ms: int, ms: int, level: int) -> list[PcmFrame]:
    """``ms`` of 20 ms frames from ``start_ms``: a 300 Hz tone of peak ``level`` (0: silence)."""
    t = np.arange(FRAME) / 16000
    tone = (np.sin(2 * np.pi * 300 * t) * level).astype(np.int16)
    first = start_ms * 16
    return [PcmFrame(AGENT, first + i * FRAME, tone.copy()) for i in range(ms // 20)]


def test_a_pause_after_silence_is_heard_up_to_the_horizon_in_whole_frames():
    fill = QuietFill(AGENT)
    for f in frames(0, 1000, 8000) + frames(1000, 220, 0):  # speech, then a DTX hangover
        fill.placed(f)
    assert fill.due(1311.0, since_packet_ms=500, settled=0) is None  # not seen to pause yet
    fill.pausing = True  # it left a pause unsent before
    assert fill.due(1300.0, since_packet_ms=QUIET_MS - 1, settled=0) is None  # a packet just came
    given = fill.due(1311.0, since_packet_ms=QUIET_MS, settled=0)
    assert given is not None and given.start_ms == given.end_ms == 1300  # silence 1220-1300
    assert len(given.pcm) == 0 and fill.given_ms == 80
    assert fill.due(1315.0, since_packet_ms=200, settled=0) is None  # not a whole frame more yet
    later = fill.due(1400.0, since_packet_ms=200, settled=0)
    assert later is not None and later.start_ms == 1400 and fill.given_ms == 180


def test_a_stall_in_the_middle_of_speech_waits_for_its_packets():
    fill = QuietFill(AGENT, pausing=True)
    for f in frames(0, 1000, 8000) + frames(1000, 80, 0):  # a short pause inside speech
        fill.placed(f)
    assert fill.due(2000.0, since_packet_ms=900, settled=0) is None
    quiet_room = QuietFill(AGENT, pausing=True)  # a recording's room tone is sound
    for f in frames(0, 1000, 200):  # peak 200: RMS 141, -47 dBFS
        quiet_room.placed(f)
    assert quiet_room.due(2000.0, since_packet_ms=900, settled=0) is None


def test_sound_that_comes_after_its_silence_was_given_is_reported_lost_where_it_fell():
    fill = QuietFill(AGENT, pausing=True)
    for f in frames(0, 400, 0):
        fill.placed(f)
    assert fill.due(600.0, since_packet_ms=300, settled=0) is not None  # silence given to 600 ms
    late = frames(560, 100, 8000)  # a reply whose first packets came 40 ms too late
    for f in late:
        fill.placed(f)
    assert [(x.start_ms, x.end_ms, x.lost_ms) for x in fill.late] == [(560.0, 600.0, 40.0)]
    quiet = QuietFill(AGENT, pausing=True)  # late silence over silence given: nothing lost
    for f in frames(0, 400, 0):
        quiet.placed(f)
    quiet.due(600.0, since_packet_ms=300, settled=0)
    for f in frames(560, 100, 0):
        quiet.placed(f)
    assert quiet.late == []


def test_silence_goes_up_to_where_the_stream_went_on_at_once():
    """A frame placed after a gap (a lost packet, a DTX refresh the resampler still holds):
    nothing can come before its place any more, so the gap is silence now, sound or not."""
    fill = QuietFill(AGENT)
    for f in frames(0, 1000, 8000):
        fill.placed(f)
    given = fill.due(990.0, since_packet_ms=0, settled=16 * 1070)
    assert given is not None and given.start_ms == 1070
    assert fill.given_ms == 0  # a gap behind a placed frame, not a pause heard
    assert fill.due(990.0, since_packet_ms=0, settled=16 * 1070) is None


def test_behind_is_the_worst_wait_for_the_next_moment_of_the_channel():
    behind = Behind()
    for f in frames(100, 60, 0):  # each had as it arrived (placed 80 ms after, to play)
        behind.had(f, now_ms=f.end_ms - 80, playout_ms=80)
    assert behind.worst_ms == 20  # the moment after a frame arrives with the next one
    behind.had(PcmFrame(AGENT, 16 * 400, frames(0, 20, 0)[0].pcm[:0]), 500.0, playout_ms=80)
    assert behind.worst_ms == 420  # the moment at 160 ms (arriving at 80) had at 500
    behind.stopped = True
    behind.had(frames(400, 20, 0)[0], 5000.0, playout_ms=80)
    assert behind.worst_ms == 420
