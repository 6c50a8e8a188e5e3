"""Placing a received stream on the call clock (capture/webrtc/receiver.py's Placer): no event
loop, frames pushed with the times they were read."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
import pytest

from turnscope.capture.frames import SAMPLE_RATE, PcmFrame
from turnscope.capture.source import SourceNote
from turnscope.capture.webrtc.receiver import (
    ANCHOR_FIX_MAX_MS,
    Placer,
    ReceiveStats,
    placement_notes,
)

RATE = 48000
FRAME = RATE // 50  # 20 ms


def _push_stream(placer: Placer, read_ms: list[float], *, first_pts: int = 0) -> None:
    """Frames k = 0.. of a steady 48 kHz sender, each read at ``read_ms[k]``; frame k is a
    constant k/1000 so where each one lands can be told."""
    for k, at_ms in enumerate(read_ms):
        mono = np.full(FRAME, k / 1000, dtype=np.float32)
        placer.push(first_pts + k * FRAME, RATE, mono, at_ms, at_ms / 1000)


def _start_ms(frames: list[PcmFrame]) -> float:
    return frames[0].start * 1000 / SAMPLE_RATE


def test_a_prompt_stream_is_placed_at_its_first_frame() -> None:
    out: list[PcmFrame] = []
    placer = Placer("agent", out.append, ReceiveStats())
    _push_stream(placer, [1000 + 20 * k for k in range(60)])
    placer.flush(None)
    assert _start_ms(out) == pytest.approx(1000, abs=0.1)
    assert placer.stats.anchor_fix_ms == 0
    starts = [f.start for f in out]
    assert starts == sorted(starts)  # one run, in order, no overlap
    assert all(a.end == b.start for a, b in pairwise(out))


def test_a_first_frame_read_late_does_not_place_the_call_late() -> None:
    """The loop was busy when the first frame came (it and the next ones read 30 ms late,
    together): the stream is placed by the frames read on time."""
    out: list[PcmFrame] = []
    placer = Placer("agent", out.append, ReceiveStats())
    read = [1000 + 20 * k for k in range(60)]
    read[0] = read[1] = 1030  # frames 0 and 1 read late, at once
    _push_stream(placer, read)
    assert out, "the first half second is held, then released"
    assert placer.stats.anchor_fix_ms == pytest.approx(30, abs=0.1)
    assert placer.stats.first_frame_ms == 1030
    placer.flush(None)
    assert _start_ms(out) == pytest.approx(1000, abs=0.1)
    assert all(a.end == b.start for a, b in pairwise(out))


def test_the_start_is_held_until_anchored_and_nothing_is_lost_on_flush() -> None:
    out: list[PcmFrame] = []
    placer = Placer("agent", out.append, ReceiveStats())
    _push_stream(placer, [500 + 20 * k for k in range(10)])  # 200 ms: still held
    assert out == []
    placer.flush(None)
    total = sum(len(f.pcm) for f in out)
    assert total == pytest.approx(10 * FRAME * SAMPLE_RATE / RATE, abs=40)
    placer.push(10 * FRAME, RATE, np.zeros(FRAME, np.float32), 700, 0.7)  # after the end
    assert sum(len(f.pcm) for f in out) == total


def test_a_sender_bursting_ahead_moves_the_anchor_at_most_the_cap() -> None:
    """Ten frames at once (a sender ahead of real time), then paced: a listener's playout starts
    at the first frame, so the stream is not placed 180 ms before it came."""
    out: list[PcmFrame] = []
    placer = Placer("agent", out.append, ReceiveStats())
    read = [1000.0] * 10 + [1000 + 20 * k for k in range(1, 50)]
    _push_stream(placer, read)
    placer.flush(None)
    assert placer.stats.anchor_fix_ms == pytest.approx(ANCHOR_FIX_MAX_MS, abs=0.1)
    assert _start_ms(out) == pytest.approx(1000 - ANCHOR_FIX_MAX_MS, abs=0.1)


def test_loss_while_held_leaves_a_gap_and_keeps_the_anchor() -> None:
    out: list[PcmFrame] = []
    stats = ReceiveStats()
    placer = Placer("agent", out.append, stats)
    read = [1000 + 20 * k for k in range(60)]
    for k, at_ms in enumerate(read):
        if k in (5, 6):  # lost in transit
            continue
        placer.push(k * FRAME, RATE, np.full(FRAME, 0.1, np.float32), at_ms, at_ms / 1000)
    placer.flush(None)
    assert stats.gaps == 1 and stats.gap_frames == 2 and stats.gap_ms == pytest.approx(40)
    assert _start_ms(out) == pytest.approx(1000, abs=0.1)
    gaps = [(a.end, b.start) for a, b in pairwise(out) if b.start != a.end]
    assert len(gaps) == 1 and (gaps[0][1] - gaps[0][0]) * 1000 / SAMPLE_RATE == pytest.approx(
        40, abs=1
    )
    # The gap is logged where its silence was placed (after the start's anchor moved), with
    # the RTP time of the frame after it (what the receive buffer keys lost packets by).
    (logged,) = stats.gap_log
    assert logged.pts == 7 * FRAME
    assert logged.start_ms == pytest.approx(gaps[0][0] * 1000 / SAMPLE_RATE, abs=1)
    assert logged.end_ms == pytest.approx(gaps[0][1] * 1000 / SAMPLE_RATE, abs=0.1)


def test_a_gap_after_the_anchor_moved_is_logged_where_it_was_placed() -> None:
    """A sender bursting ahead (the anchor moves back at release) then a gap while held: the
    logged gap moves with the audio."""
    out: list[PcmFrame] = []
    stats = ReceiveStats()
    placer = Placer("agent", out.append, stats)
    read = [1000.0] * 10 + [1000 + 20 * k for k in range(1, 50)]
    for k, at_ms in enumerate(read):
        if k != 15:
            placer.push(k * FRAME, RATE, np.full(FRAME, 0.1, np.float32), at_ms, at_ms / 1000)
    placer.flush(None)
    (a, b) = next((a, b) for a, b in pairwise(out) if b.start != a.end)
    (logged,) = stats.gap_log
    assert logged.start_ms == pytest.approx(a.end * 1000 / SAMPLE_RATE, abs=1)
    assert logged.end_ms == pytest.approx(b.start * 1000 / SAMPLE_RATE, abs=0.1)


def test_a_clip_due_inside_a_frame_starts_on_its_sample() -> None:
    """The reference agent's replies start when due, not at the next 20 ms frame, and not
    later because the loop queued them late (capture/player.py's ClipQueue)."""
    import asyncio

    from turnscope.capture.player import ClipQueue

    async def run() -> tuple[list[np.ndarray], list]:
        queue = ClipQueue(320)
        clip = np.full(480, 1000, dtype=np.int16)
        queue.play(clip, "0:due at 1010 ms", due=16160)  # 1010 ms
        frames = [queue.next_frame(320 * k, k * 0.02) for k in range(48, 56)]
        return frames, queue.log

    frames, log = asyncio.run(run())
    audio = np.concatenate(frames)  # from 960 ms
    first = int(np.flatnonzero(audio)[0])
    assert first == 16160 - 48 * 320  # 50 ms in: exactly 1010 ms
    assert log[0].start == 16160 and log[0].end == 16160 + 480
    assert log[0].start_sent_at == pytest.approx(50 * 0.02 + 0.010)


def test_a_start_read_late_longer_than_the_cap_catches_up_in_the_streams_silence() -> None:
    """The loop was held up 260 ms as the stream began (its first 14 frames read at once), more
    than the anchor may move: the stream is placed late (by 160 ms) only until its first
    silence, where as much silence is dropped; what follows is placed where it arrived, and
    nothing but that silence is missing."""
    out: list[PcmFrame] = []
    placer = Placer("agent", out.append, ReceiveStats())
    level = [0.5] * 100 + [0.0] * 50 + [0.25] * 50  # speech, a pause, speech
    for k, value in enumerate(level):
        read_ms = max(1000 + 20 * k, 1260.0)
        placer.push(k * FRAME, RATE, np.full(FRAME, value, np.float32), read_ms, read_ms / 1000)
    placer.flush(None)
    stats = placer.stats
    assert stats.anchor_fix_ms == pytest.approx(ANCHOR_FIX_MAX_MS, abs=0.1)
    assert [round(c["ahead_ms"]) for c in stats.catch_ups] == [160]
    assert stats.catch_ups[0]["caught_up_at_ms"] == pytest.approx(1000 + 20 * 108, abs=1)
    (note,) = placement_notes(stats)
    assert note[0] == SourceNote.AGENT_CAUGHT_UP and "until 3.2 s" in note[1], note
    assert stats.caught_up_ms == pytest.approx(160)
    assert all(a.end == b.start for a, b in pairwise(out))  # dropped, not a gap on the clock
    pcm = np.concatenate([f.pcm for f in out])
    start = out[0].start
    assert len(pcm) == pytest.approx((200 * 20 - 160) * SAMPLE_RATE / 1000, abs=40)
    second = start + int(np.argmax(np.abs(pcm.astype(np.float32) / 32768 - 0.25) < 0.01))
    assert second * 1000 / SAMPLE_RATE == pytest.approx(1000 + 20 * 150, abs=2)  # its arrival
    first_speech = start + int(np.argmax(pcm > 0))
    assert first_speech * 1000 / SAMPLE_RATE == pytest.approx(1160, abs=2)  # the cap's anchor


def test_a_stream_of_sound_without_silence_is_not_cut_to_catch_up() -> None:
    out: list[PcmFrame] = []
    placer = Placer("agent", out.append, ReceiveStats())
    for k in range(200):
        read_ms = max(1000 + 20 * k, 1260.0)
        placer.push(k * FRAME, RATE, np.full(FRAME, 0.5, np.float32), read_ms, read_ms / 1000)
    placer.flush(None)
    assert placer.stats.catch_ups and placer.stats.caught_up_ms == 0
    (note,) = placement_notes(placer.stats)
    assert "no silence to catch up in" in note[1], note
    assert sum(len(f.pcm) for f in out) == pytest.approx(200 * 20 * SAMPLE_RATE / 1000, abs=40)


def test_a_lead_that_ends_by_itself_drops_no_silence_after() -> None:
    """Placed late (its start read late), no silence to catch up in, then the delay rises by
    300 ms for good (a jitter buffer grown): from there the stream is placed where it arrives,
    and the silence that follows is kept whole."""
    out: list[PcmFrame] = []
    placer = Placer("agent", out.append, ReceiveStats())
    level = [0.5] * 220 + [0.0] * 50
    for k, value in enumerate(level):
        read_ms = max(1000 + 20 * k, 1260.0) + (300 if k >= 150 else 0)
        placer.push(k * FRAME, RATE, np.full(FRAME, value, np.float32), read_ms, read_ms / 1000)
    placer.flush(None)
    stats = placer.stats
    assert stats.caught_up_ms == 0 and len(stats.catch_ups) == 1, stats.catch_ups
    assert stats.catch_ups[0]["caught_up_at_ms"] == pytest.approx(1160 + 20 * 150, abs=1)
    assert sum(len(f.pcm) for f in out) == pytest.approx(270 * 20 * SAMPLE_RATE / 1000, abs=40)
