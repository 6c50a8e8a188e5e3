"""The agent's pauses heard as they happen when it sends nothing in them (DTX).

A sender with DTX sends nothing in its pauses but a frame every 400 ms, and the receiver
places each frame by its RTP time, so the pipeline's endpointer moved only as packets came:
the end of an agent turn was decided at the next refresh frame, up to 400 ms late, and with
it its transcript, the live view and a caller that reacts to the agent's words
(benchmarks/jitter_loss.py --dtx). A listener's playout goes on through the pause; so does the
agent channel: once no packet has arrived for ``QUIET_MS`` after audio without sound, it gets
silence up to where a packet arriving now could be placed, less ``QUIET_MS``. Only a sender
seen to leave a pause unsent (``pausing``: a jump in its RTP time no lost packet explains)
is heard so: one that sends its silence has its packets waited for, as before, so a network
stall can cost it nothing.

Only after audio without sound: a stall in the middle of speech is the network's, and its
packets are placed where they belong when they come, as before. A packet delayed more than
``QUIET_MS`` beyond the stream's best after a pause comes after silence was given for its
place; the sound in it is reported lost there, as a lost packet's is (turnscope/lost_audio.py
judges what it touched).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from turnscope.capture.frames import SAMPLE_RATE, PcmFrame, samples_to_ms
from turnscope.capture.source import LostAudio
from turnscope.capture.webrtc.gaps import left_unsent
from turnscope.capture.webrtc.jitter import PLAYOUT_MS
from turnscope.capture.webrtc.receiver import Placer

__all__ = ["QUIET_MS", "Behind", "QuietFill"]

QUIET_MS = 100.0  # no packet for this long after audio without sound: the pause is heard
QUIET_AUDIO_MS = 100  # ... when the audio before it had no sound for this long
# A 20 ms frame's RMS under this (int16, -50 dBFS) has no sound: digital silence, a DTX
# sender's comfort noise. A recording's room tone (-48 dBFS and up) counts as sound: the fill
# waits for the packets there, as before.
SILENT_RMS = 32768 * 10 ** (-50 / 20)
_FRAME = SAMPLE_RATE // 50  # silence is given in whole 20 ms frames
_NO_SAMPLES = np.zeros(0, np.int16)


def _rms(pcm: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(pcm, dtype=np.float64)))) if len(pcm) else 0.0


@dataclass
class QuietFill:
    """One channel's received audio, and the silence given while its sender sends nothing
    (``due``: a frame without samples placed where the silence ends, so the endpointer hears
    the gap up to there as it hears any gap); ``placed`` every frame the receiver places."""

    channel: str
    end: int = 0  # the sample after the last one emitted (received or given)
    sound_end: int = 0  # the sample after the last received frame with sound
    given_end: int = 0  # the sample after the last silence given
    given_ms: float = 0.0  # silence given for the sender's pauses (not for gaps behind frames)
    late: list[LostAudio] = field(default_factory=list)  # sound that came after its silence
    pausing: bool = False  # the sender left a pause unsent: its pauses are heard as they go

    def placed(self, frame: PcmFrame) -> None:
        """A received frame: the part of it silence was already given for is not heard."""
        if frame.start < self.given_end:
            over = frame.pcm[: self.given_end - frame.start]
            if _rms(over) >= SILENT_RMS:
                self._lost(frame.start, frame.start + len(over))
        if _rms(frame.pcm) >= SILENT_RMS:
            self.sound_end = max(self.sound_end, frame.end)
        self.end = max(self.end, frame.end)

    def _lost(self, start: int, end: int) -> None:
        """``start`` to ``end`` (samples) not heard: one stretch with the one it continues."""
        start_ms, end_ms = round(samples_to_ms(start), 1), round(samples_to_ms(end), 1)
        last = self.late[-1] if self.late else None
        if last is not None and last.end_ms >= start_ms:
            start_ms, lost_ms = last.start_ms, last.lost_ms + samples_to_ms(end - start)
            self.late[-1] = LostAudio(self.channel, start_ms, end_ms, lost_ms)
        else:
            self.late.append(LostAudio(self.channel, start_ms, end_ms, samples_to_ms(end - start)))

    def tick(
        self, placer: Placer, holes: dict[int, int], now_ms: float, since_packet_ms: float
    ) -> PcmFrame | None:
        """Every 20 ms of a call: whether the sender pauses (its latest gap), the frame its
        resampler holds placed before silence is given after it, then ``due`` up to where a
        packet arriving now could be placed (its playout delay on), less ``QUIET_MS``."""
        if placer.held is not None or placer.flushed:
            return None  # the start is still held to be anchored, or the call is over
        if not self.pausing and placer.stats.gap_log:
            self.pausing = left_unsent(placer.stats.gap_log[-1], holes)
        if since_packet_ms >= QUIET_MS and self.pausing:
            placer.drain(time.monotonic())
        return self.due(now_ms + PLAYOUT_MS - QUIET_MS, since_packet_ms, placer.settled)

    def due(self, horizon_ms: float, since_packet_ms: float, settled: int) -> PcmFrame | None:
        """Silence up to ``settled`` (a sample nothing can now come before: the receiver
        drops frames from the past), and, for a ``pausing`` sender, on to ``horizon_ms``
        (where a packet arriving now could at the earliest be placed) when no packet came for
        ``QUIET_MS`` and the audio before had no sound."""
        if self.end == 0:
            return None
        until = settled
        quiet = samples_to_ms(self.end - self.sound_end) >= QUIET_AUDIO_MS
        if self.pausing and since_packet_ms >= QUIET_MS and quiet:
            until = max(until, self.end + (round(horizon_ms * SAMPLE_RATE / 1000) - self.end)
                        // _FRAME * _FRAME)  # fmt: skip
        n = until - self.end
        if n <= 0:
            return None
        # Counted: the pause heard, not a gap behind a frame already placed (a lost packet's)
        self.given_ms += samples_to_ms(until - max(self.end, settled))
        self.end = self.given_end = until
        # No samples, placed at ``until``: the stream has nothing up to there, a gap heard as
        # silence, as the gap before a late packet always was (and drawn as one: not sent).
        return PcmFrame(self.channel, until, _NO_SAMPLES)


@dataclass
class Behind:
    """How far a channel fell behind the call at worst: for each moment of it, when the
    pipeline had it (its audio, or the silence heard for it) against when it arrived, or would
    have (its place less the playout delay placing added)."""

    reached: int | None = None  # the sample after the furthest one had
    worst_ms: float = 0.0
    stopped: bool = False  # the call ended: what its end flushes is not late

    def had(self, frame: PcmFrame, now_ms: float, playout_ms: float) -> None:
        """``frame`` reached the pipeline at ``now_ms``; placed ``playout_ms`` after arrival."""
        if self.stopped:
            return
        if self.reached is not None and frame.end > self.reached:
            arrived = samples_to_ms(self.reached) - playout_ms  # the moment after the last had
            self.worst_ms = max(self.worst_ms, now_ms - arrived)
        self.reached = frame.end if self.reached is None else max(self.reached, frame.end)
