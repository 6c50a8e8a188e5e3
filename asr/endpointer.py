"""Streaming endpointer for one channel: webrtcvad frames -> speech start/stop and end of turn.

Plain, synchronous and incremental: ``push(frame)`` returns the events that audio made
decidable, so it runs the same under a live call, a paced replay or a fast replay. Memory is
bounded: a pre-roll ring plus the audio of the utterance in progress (max_utterance_ms).
"""

from __future__ import annotations

from collections import deque

import numpy as np
import webrtcvad
from _webrtcvad import process as _vad_process

from turnscope.asr.events import (
    EndOfTurn,
    Span,
    SpeechEvent,
    SpeechStart,
    SpeechStop,
    StreamGap,
    Utterance,
)
from turnscope.asr.refine import (
    HOP,
    RefineParams,
    energy_db,
    envelope_db,
    refine_end,
    refine_start,
    threshold_db,
)
from turnscope.asr.settings import RefineSettings, VadSettings
from turnscope.capture.frames import SAMPLE_RATE, PcmFrame, samples_to_ms, to_float32

_SILENCE, _SPEECH, _PAUSE = 0, 1, 2
_NOISE_HISTORY_FRAMES = 200
_NOISE_MIN_FRAMES = 10
_NOISE_PERCENTILE = 50


class Endpointer:
    """Turns one channel's PCM frames into SpeechStart / SpeechStop / EndOfTurn events."""

    def __init__(
        self,
        channel: str,
        vad: VadSettings,
        refine: RefineSettings,
        *,
        pad_ms: int = 150,
    ) -> None:
        self.channel = channel
        self._cfg = vad
        self._refine = refine
        self._params = RefineParams(
            refine.below_peak_db, refine.noise_margin_db, refine.search_ms, refine.max_dip_ms
        )
        self._vad = webrtcvad.Vad(vad.aggressiveness)
        self._handle = self._vad._vad  # the C handle: per-frame calls skip the Python wrapper
        self._flen = SAMPLE_RATE * vad.frame_ms // 1000
        self._window = max(1, vad.start_window_ms // vad.frame_ms)
        self._need = min(self._window, max(1, -(-vad.start_voiced_ms // vad.frame_ms)))
        self._hang = max(1, -(-vad.hangover_ms // vad.frame_ms)) if vad.hangover_ms else 1
        self._eot = SAMPLE_RATE * vad.end_of_turn_ms // 1000
        self._max_utt = SAMPLE_RATE * vad.max_utterance_ms // 1000
        self._pad = SAMPLE_RATE * pad_ms // 1000
        ring_frames = (vad.preroll_ms + vad.start_window_ms) // vad.frame_ms + 1
        self._ring: deque[np.ndarray] = deque(maxlen=ring_frames)
        self._ring_energy: deque[float] = deque(maxlen=ring_frames)
        self._recent: deque[bool] = deque(maxlen=self._window)
        self._voiced_in_window = 0
        self._noise: deque[float] = deque(maxlen=_NOISE_HISTORY_FRAMES)
        # Minimum statistics: the quietest frame of each block, over a few seconds, tracks the
        # noise floor even while webrtcvad calls noise "speech".
        self._gate_db = vad.energy_gate_db
        self._gate_ratio = 10 ** (vad.energy_gate_db / 10)
        self._block_frames = max(1, 500 // vad.frame_ms)
        self._block_mins: deque[float] = deque(maxlen=max(1, vad.noise_window_ms // 500))
        self._block_min = float("inf")
        self._block_n = 0
        self._energy_scale = 1.0 / (32768.0 * 32768.0 * self._flen)
        self._pending = np.empty(0, dtype=np.int16)
        self._pos = 0  # call-clock sample index of the next frame to classify
        self._expected = 0  # sample index the next pushed frame should start at
        self._state = _SILENCE
        self._utt_audio: list[np.ndarray] = []
        self._utt_energy: list[float] = []
        self._utt_audio_start = 0
        self._spans: list[list[int]] = []
        self._last_voiced_end = 0
        self._unvoiced_run = 0
        self._count = 0
        self.gap_ms = 0.0

    # -- public -------------------------------------------------------------------------------

    @property
    def position_ms(self) -> float:
        """Stream time up to which audio has been classified."""
        return samples_to_ms(self._pos)

    @property
    def in_speech(self) -> bool:
        """True while an utterance is open (speech or a short pause inside it)."""
        return self._state != _SILENCE

    @property
    def open_since_ms(self) -> float | None:
        """Start of the open utterance, if any."""
        return samples_to_ms(self._spans[0][0]) if self._state != _SILENCE else None

    def push(self, frame: PcmFrame) -> list[SpeechEvent]:
        """Feed one frame of this channel; returns the events it made decidable."""
        events: list[SpeechEvent] = []
        pcm = frame.pcm
        start = frame.start
        if start > self._expected:
            gap = start - self._expected
            events.append(
                StreamGap(self.channel, samples_to_ms(self._expected), samples_to_ms(start))
            )
            self.gap_ms += samples_to_ms(gap)
            # Lost audio is heard as silence; keep the clock exact by filling it.
            pcm = np.concatenate([np.zeros(gap, dtype=np.int16), pcm])
        elif start < self._expected:
            pcm = pcm[self._expected - start :]  # overlap: keep only the new samples
        self._expected = max(self._expected, frame.end)
        if len(pcm) == 0:
            return events
        buf = np.concatenate([self._pending, pcm]) if len(self._pending) else pcm
        n_frames = len(buf) // self._flen
        if n_frames:
            frames = buf[: n_frames * self._flen].reshape(n_frames, self._flen)
            f = frames.astype(np.float32)
            energies = (np.einsum("ij,ij->i", f, f) * self._energy_scale).tolist()
            data = frames.tobytes()
            size, flen, handle, process = self._flen * 2, self._flen, self._handle, _vad_process
            flags = np.fromiter(
                (
                    process(handle, SAMPLE_RATE, data[i * size : (i + 1) * size], flen)
                    for i in range(n_frames)
                ),
                dtype=bool,
                count=n_frames,
            )
            voiced = self._gate(np.asarray(energies), flags)
            self._run(frames, energies, voiced, events)
        self._pending = buf[n_frames * self._flen :].copy()
        return events

    def flush(self) -> list[SpeechEvent]:
        """End of stream: classify the partial frame and close any open utterance."""
        events: list[SpeechEvent] = []
        if len(self._pending):
            pad = np.zeros(self._flen - len(self._pending), dtype=np.int16)
            frame = np.concatenate([self._pending, pad])
            self._pending = np.empty(0, dtype=np.int16)
            energy = float(np.mean((frame / 32768.0) ** 2))
            flag = np.array([self._vad.is_speech(frame.tobytes(), SAMPLE_RATE)])
            self._run(frame[None, :], [energy], self._gate(np.array([energy]), flag), events)
        if self._state == _SPEECH:
            self._close_span(self._last_voiced_end, events)
        if self._state != _SILENCE:
            self._finish(events, forced=False)
        return events

    # -- per frame ----------------------------------------------------------------------------

    def _gate(self, energies: np.ndarray, flags: np.ndarray) -> np.ndarray:
        """webrtcvad's decisions, minus frames that are not energy_gate_db above the noise floor.

        The floor is minimum statistics: the quietest frame of each block of frames (blocks are
        aligned to the stream, so chunk sizes do not matter), over noise_window_ms.
        """
        n = len(energies)
        floors = np.empty(n)
        i = 0
        while i < n:
            take = min(n - i, self._block_frames - self._block_n)
            run = np.minimum(np.minimum.accumulate(energies[i : i + take]), self._block_min)
            prev = min(self._block_mins) if self._block_mins else float("inf")
            floors[i : i + take] = np.minimum(run, prev)
            self._block_min = float(run[-1])
            self._block_n += take
            if self._block_n >= self._block_frames:
                self._block_mins.append(self._block_min)
                self._block_min, self._block_n = float("inf"), 0
            i += take
        if self._gate_db <= 0:
            return flags
        return flags & (energies >= floors * self._gate_ratio)

    def _push_recent(self, voiced: bool, count: int) -> None:
        """Append ``count`` equal decisions to the start window, keeping the voiced count."""
        recent = self._recent
        for _ in range(min(count, self._window)):
            if len(recent) == recent.maxlen:
                self._voiced_in_window -= recent[0]
            recent.append(voiced)
            self._voiced_in_window += voiced

    def _run(
        self,
        frames: np.ndarray,
        energies: list[float],
        voiced: np.ndarray,
        events: list[SpeechEvent],
    ) -> None:
        """The state machine over a batch of frames. Runs of silence while silent and runs of
        speech while speaking take a bulk path with exactly the per-frame effect."""
        n = len(frames)
        flen = self._flen
        i = 0
        while i < n:
            v = bool(voiced[i])
            change = np.flatnonzero(voiced[i:] != v)
            j = i + int(change[0]) if len(change) else n
            if self._state == _SILENCE and not v:
                self._ring.extend(frames[max(i, j - self._ring.maxlen) : j])
                self._ring_energy.extend(energies[max(i, j - self._ring.maxlen) : j])
                self._noise.extend(energies[max(i, j - self._noise.maxlen) : j])
                self._push_recent(False, j - i)
                self._pos += (j - i) * flen
                i = j
                continue
            if self._state == _SPEECH and v:
                # Stop one frame short of max_utterance_ms: that frame takes the full path.
                room = -(-(self._spans[0][0] + self._max_utt - self._pos) // flen) - 1
                j = min(j, i + max(room, 0))
                if j > i:
                    self._utt_audio.extend(frames[i:j])
                    self._utt_energy.extend(energies[i:j])
                    self._push_recent(True, j - i)
                    self._pos += (j - i) * flen
                    self._last_voiced_end = self._pos
                    self._unvoiced_run = 0
                    i = j
                    continue
            self._step(frames[i], energies[i], v, events)
            i += 1

    def _step(
        self, frame: np.ndarray, energy: float, voiced: bool, events: list[SpeechEvent]
    ) -> None:
        fstart = self._pos
        self._pos += self._flen
        recent = self._recent
        if len(recent) == recent.maxlen:
            self._voiced_in_window -= recent[0]
        recent.append(voiced)
        self._voiced_in_window += voiced
        if self._state == _SILENCE:
            self._ring.append(frame)
            self._ring_energy.append(energy)
            if not voiced:
                self._noise.append(energy)
            if self._voiced_in_window >= self._need:
                self._open_utterance(fstart, events)
            return
        self._utt_audio.append(frame)
        self._utt_energy.append(energy)
        if self._state == _SPEECH:
            if voiced:
                self._last_voiced_end = self._pos
                self._unvoiced_run = 0
            else:
                self._unvoiced_run += 1
                if self._unvoiced_run >= self._hang:
                    self._close_span(self._last_voiced_end, events)
            if self._pos - self._spans[0][0] >= self._max_utt:
                if self._state == _SPEECH:
                    self._close_span(self._pos, events)
                self._finish(events, forced=True)
            return
        # _PAUSE: speech may resume inside the utterance, or the silence may end the turn.
        if not voiced:
            self._noise.append(energy)
        if self._voiced_in_window >= self._need:
            onset = max(self._window_onset(), self._spans[-1][1])
            self._spans.append([onset, -1])
            self._state = _SPEECH
            self._last_voiced_end = self._pos
            self._unvoiced_run = 0
            events.append(
                SpeechStart(self.channel, self._live_start_ms(onset), self.position_ms, False)
            )
        elif self._pos - self._last_voiced_end >= self._eot:
            self._finish(events, forced=False)

    def _window_onset(self) -> int:
        """Sample index of the first voiced frame in the start window."""
        first = next(i for i, v in enumerate(self._recent) if v)
        return self._pos - (len(self._recent) - first) * self._flen

    def _open_utterance(self, fstart: int, events: list[SpeechEvent]) -> None:
        onset = self._window_onset()
        ring = list(self._ring)
        self._utt_audio = ring
        self._utt_energy = list(self._ring_energy)
        self._utt_audio_start = fstart + self._flen - len(ring) * self._flen
        self._spans = [[onset, -1]]
        self._state = _SPEECH
        self._last_voiced_end = self._pos
        self._unvoiced_run = 0
        self._ring.clear()
        self._ring_energy.clear()
        events.append(SpeechStart(self.channel, self._live_start_ms(onset), self.position_ms, True))

    def _close_span(self, end: int, events: list[SpeechEvent]) -> None:
        self._spans[-1][1] = end
        self._state = _PAUSE
        events.append(SpeechStop(self.channel, self._live_end_ms(end), self.position_ms))

    def _finish(self, events: list[SpeechEvent], *, forced: bool) -> None:
        audio = to_float32(np.concatenate(self._utt_audio)) if self._utt_audio else np.zeros(0)
        spans = self._refined_spans(audio) if self._refine.enabled else self._spans
        spans = [s for s in spans if s[1] > s[0]]
        voiced = sum(e - s for s, e in spans)
        decided = self.position_ms
        self._state = _SILENCE
        self._utt_audio = []
        self._utt_energy = []
        self._recent.clear()
        self._voiced_in_window = 0
        if not spans or voiced < SAMPLE_RATE * self._cfg.min_utterance_ms // 1000:
            return
        lo = max(self._utt_audio_start, spans[0][0] - self._pad)
        hi = min(self._utt_audio_start + len(audio), spans[-1][1] + self._pad)
        clip = audio[lo - self._utt_audio_start : hi - self._utt_audio_start].copy()
        utt = Utterance(
            channel=self.channel,
            index=self._count,
            start_ms=samples_to_ms(spans[0][0]),
            end_ms=samples_to_ms(spans[-1][1]),
            spans=tuple(Span(samples_to_ms(s), samples_to_ms(e)) for s, e in spans),
            decided_ms=decided,
            audio=clip,
            audio_start_ms=samples_to_ms(lo),
            forced=forced,
        )
        self._count += 1
        events.append(EndOfTurn(utt))

    # -- refinement ---------------------------------------------------------------------------

    def _noise_db(self) -> float | None:
        if len(self._noise) < _NOISE_MIN_FRAMES:
            return None
        ordered = sorted(self._noise)
        return energy_db(ordered[len(ordered) * _NOISE_PERCENTILE // 100])

    def _peak_db(self, audio: np.ndarray, energies: list[float]) -> float:
        """Peak of the envelope, looked for around the loudest VAD frame only."""
        if not energies:
            return -120.0
        k = int(np.argmax(energies))
        env = envelope_db(audio, self._refine.window_ms, (k - 1) * self._flen, (k + 2) * self._flen)
        return float(env.max()) if len(env) else -120.0

    def _refine_at(self, audio: np.ndarray, sample: int, thresh: float, *, start: bool) -> int:
        """Refine one boundary (a sample index into ``audio``) on its local envelope."""
        radius = (self._refine.search_ms + 2 * int(self._refine.max_dip_ms) + 10) * HOP
        lo = max(0, sample - radius)
        env = envelope_db(audio, self._refine.window_ms, lo, sample + radius)
        coarse = (sample - lo) // HOP
        hop = (refine_start if start else refine_end)(env, coarse, thresh, self._params)
        return lo + hop * HOP

    def _refined_spans(self, audio: np.ndarray) -> list[list[int]]:
        """Span boundaries moved onto the utterance's envelope (sample indices, ordered)."""
        base = self._utt_audio_start
        thresh = threshold_db(
            self._peak_db(audio, self._utt_energy), self._noise_db(), self._params
        )
        out: list[list[int]] = []
        prev_end = base
        for s, e in self._spans:
            rs = base + self._refine_at(audio, s - base, thresh, start=True)
            re_ = base + self._refine_at(audio, e - base, thresh, start=False)
            rs = max(rs, prev_end)
            re_ = max(re_, rs)
            out.append([rs, re_])
            prev_end = re_
        # Refinement can close a pause: merge spans that now touch.
        merged: list[list[int]] = []
        for span in out:
            if merged and span[0] <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], span[1])
            else:
                merged.append(span)
        return merged

    def _live_estimate(self, sample: int, *, start: bool) -> float:
        """Best estimate of a boundary from the audio seen so far (the final one comes with the
        utterance, refined against its whole envelope)."""
        if not self._refine.enabled or not self._utt_audio:
            return samples_to_ms(sample)
        frames = (self._refine.search_ms + 2 * int(self._refine.max_dip_ms)) // self._cfg.frame_ms
        tail = self._utt_audio[-(frames + 2) :]
        audio = to_float32(np.concatenate(tail))
        base = self._pos - len(audio)
        peak = self._peak_db(audio, self._utt_energy[-len(tail) :])
        thresh = threshold_db(peak, self._noise_db(), self._params)
        refined = base + self._refine_at(audio, max(0, sample - base), thresh, start=start)
        return samples_to_ms(min(max(refined, base), self._pos))

    def _live_start_ms(self, onset: int) -> float:
        return self._live_estimate(onset, start=True)

    def _live_end_ms(self, end: int) -> float:
        return self._live_estimate(end, start=False)
