"""Streaming endpointer for one channel: webrtcvad frames -> speech start/stop and end of turn.

Plain, synchronous and incremental: ``push(frame)`` returns the events that audio made
decidable, so it runs the same under a live call, a paced replay or a fast replay. Memory is
bounded: a pre-roll ring plus the audio of the utterance in progress (max_utterance_ms).

It has to run far faster than real time (>= 1000x per channel, for 20 ms frames and 200 ms
chunks alike; benchmarks/endpointer_speed.py), so a push calls numpy a fixed few times per batch
of frames, the per-frame state machine touches only plain Python values, and audio is filed a
run of frames at a time. Events never depend on how the stream was chunked.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

import numpy as np
import webrtcvad
from _webrtcvad import process as _vad_process

try:  # np.einsum(...) is this plus a Python layer that costs as much again on a small batch
    from numpy._core.multiarray import c_einsum as _einsum
except ImportError:  # numpy < 2
    _einsum = np.einsum

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
    pcm_envelope_db,
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
_LONE_SPAN_GAP = SAMPLE_RATE * 400 // 1000  # see _finish
_DEFER_FRAMES = 50  # silent frames whose energies are computed in one batch
_INF = float("inf")
_NO_SAMPLES = np.empty(0, dtype=np.int16)  # shared, never written: the usual empty remainder
_Envelope = Callable[[int, int], np.ndarray]  # (lo, hi) -> pcm_envelope_db(audio, window, lo, hi)


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
            refine.below_peak_db,
            refine.noise_margin_db,
            refine.search_ms,
            refine.max_dip_ms,
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
        # The pre-roll: the last ring_len frames, kept as the runs of frames they came in.
        self._ring_len = (vad.preroll_ms + vad.start_window_ms) // vad.frame_ms + 1
        self._ring: deque[np.ndarray] = deque()
        self._ring_frames = 0
        self._ring_energy: deque[float] = deque(maxlen=self._ring_len)
        # The start window as bits, newest frame in bit 0: the voiced count is its popcount and
        # the oldest voiced frame its bit length.
        self._recent = 0
        self._window_mask = (1 << self._window) - 1
        self._noise: deque[float] = deque(maxlen=_NOISE_HISTORY_FRAMES)
        self._noise_added = 0  # frames ever added to _noise: keys the cached noise level
        self._noise_cache: tuple[int, float | None] = (-1, None)
        # Minimum statistics: the quietest frame of each block, over a few seconds, tracks the
        # noise floor even while webrtcvad calls noise "speech".
        self._gate_db = vad.energy_gate_db
        self._gate_ratio = 10 ** (vad.energy_gate_db / 10)
        self._block_frames = max(1, 500 // vad.frame_ms)
        self._block_mins: deque[float] = deque(maxlen=max(1, vad.noise_window_ms // 500))
        self._block_min = _INF
        self._block_n = 0
        self._older_min = _INF  # min(self._block_mins), kept as blocks complete
        # The first block is held back until it is complete and gated against its own quietest
        # frame: no floor is known before it, and a call that opens mid-speech would otherwise be
        # gated against that speech, one in noise would take the noise for speech.
        self._held: list[tuple[np.ndarray, list[float], list[bool]]] | None = (
            [] if vad.energy_gate_db > 0 else None
        )
        self._held_n = 0
        self._decided_at = 0  # sample index: events of held frames are decided when released
        # float32 like the energies it scales, so every energy is the float32 product.
        self._energy_scale = np.float32(1.0 / (32768.0 * 32768.0 * self._flen))
        self._tail_frames = (refine.search_ms + 2 * int(refine.max_dip_ms)) // vad.frame_ms + 2
        self._radius = (refine.search_ms + 2 * int(refine.max_dip_ms) + 10) * HOP
        self._pending = _NO_SAMPLES
        self._deferred: list[np.ndarray] = []  # silent frames waiting for their energies
        self._deferred_n = 0
        self._pos = 0  # call-clock sample index of the next frame to classify
        self._expected = 0  # sample index the next pushed frame should start at
        self._state = _SILENCE
        self._utt_audio: list[np.ndarray] = []  # runs of frames, (n, flen) each
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
        """Stream time up to which audio has been classified (and events decided)."""
        return samples_to_ms(max(self._pos, self._decided_at))

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
        if frame.start == self._expected:  # the usual case: the next samples, nothing lost
            self._expected += len(pcm)
        else:
            pcm = self._new_samples(frame, events)
        if len(self._pending):
            pcm = np.concatenate([self._pending, pcm])
        n_frames, rest = divmod(len(pcm), self._flen)
        if n_frames:
            whole = pcm[: len(pcm) - rest] if rest else pcm
            self._classify(whole.reshape(-1, self._flen), events)
        self._pending = pcm[len(pcm) - rest :].copy() if rest else _NO_SAMPLES
        return events

    def flush(self) -> list[SpeechEvent]:
        """End of stream: classify the partial frame and close any open utterance."""
        events: list[SpeechEvent] = []
        self._settle()
        if self._held is not None:
            self._release(events)
        if len(self._pending):
            pad = np.zeros(self._flen - len(self._pending), dtype=np.int16)
            frame = np.concatenate([self._pending, pad])
            self._pending = _NO_SAMPLES
            energy = float(np.mean((frame / 32768.0) ** 2))
            flag = self._vad.is_speech(frame.tobytes(), SAMPLE_RATE)
            self._run(frame[None, :], [energy], self._gate([energy], [flag]), events)
        if self._state == _SPEECH:
            self._close_span(self._last_voiced_end, events)
        if self._state != _SILENCE:
            self._finish(events, forced=False)
        return events

    # -- per batch of frames ------------------------------------------------------------------

    def _new_samples(self, frame: PcmFrame, events: list[SpeechEvent]) -> np.ndarray:
        """The frame's samples not seen yet, lost audio before them filled with silence."""
        pcm = frame.pcm
        start = frame.start
        expected = self._expected
        self._expected = max(expected, start + len(pcm))
        if start < expected:
            return pcm[expected - start :]  # overlap: keep only the new samples
        events.append(StreamGap(self.channel, samples_to_ms(expected), samples_to_ms(start)))
        self.gap_ms += samples_to_ms(start - expected)
        # Lost audio is heard as silence; keep the clock exact by filling it.
        return np.concatenate([np.zeros(start - expected, dtype=np.int16), pcm])

    def _classify(self, frames: np.ndarray, events: list[SpeechEvent]) -> None:
        """Run whole frames through webrtcvad, the energy gate and the state machine."""
        flags = self._vad_flags(frames)
        if self._held is not None:
            self._held.append((frames, self._energies(frames), flags))
            self._held_n += len(frames)
            if self._held_n >= self._block_frames:
                self._release(events)
            return
        if self._state == _SILENCE and True not in flags:
            self._defer(frames)
            return
        if self._deferred:
            self._settle()
        energies = self._energies(frames)
        voiced = self._gate(energies, flags)
        if self._state == _SILENCE and True not in voiced:
            # Noise webrtcvad took for speech and the gate did not (most of a noisy call's
            # silence): _run's effect on unvoiced frames in silence, in bulk.
            n = len(frames)
            self._to_ring(frames)
            self._ring_energy.extend(energies)
            self._add_noise(energies)
            self._recent = (self._recent << n) & self._window_mask
            self._pos += n * self._flen
            return
        self._run(frames, energies, voiced, events)

    def _release(self, events: list[SpeechEvent]) -> None:
        """Classify the held first block (and what came with its last batch), gating the block
        against its own quietest frame."""
        held, self._held = self._held or [], None
        if not held:
            return
        frames = held[0][0] if len(held) == 1 else np.concatenate([h[0] for h in held])
        energies = [e for h in held for e in h[1]]
        flags = [f for h in held for f in h[2]]
        self._decided_at = self._pos + len(frames) * self._flen
        k = min(len(energies), self._block_frames)
        floor = min(energies[:k])
        threshold = floor * self._gate_ratio
        voiced = [f and e >= threshold for e, f in zip(energies[:k], flags[:k], strict=True)]
        if k == self._block_frames:
            self._block_mins.append(floor)
            self._older_min = floor
        else:  # a stream shorter than one block
            self._block_min, self._block_n = floor, k
        voiced += self._gate(energies[k:], flags[k:])
        self._run(frames, energies, voiced, events)

    def _defer(self, frames: np.ndarray) -> None:
        """Silence that webrtcvad calls silence: its frames only fill the pre-roll, the noise
        history and the floor, none of which is read before the next frame webrtcvad calls
        speech, so their energies wait to be computed in one batch (most of a call is silence).
        """
        n = len(frames)
        self._to_ring(frames)
        self._recent = (self._recent << n) & self._window_mask
        self._pos += n * self._flen
        self._deferred.append(frames)
        self._deferred_n += n
        if self._deferred_n >= _DEFER_FRAMES:
            self._settle()

    def _settle(self) -> None:
        """Give the deferred frames their energies, as if they had been classified one by one."""
        if not self._deferred:
            return
        frames = self._deferred[0] if len(self._deferred) == 1 else np.concatenate(self._deferred)
        self._deferred = []
        self._deferred_n = 0
        energies = self._energies(frames)
        self._track_floor(energies)
        self._ring_energy.extend(energies)
        self._add_noise(energies)

    def _energies(self, frames: np.ndarray) -> list[float]:
        """Mean square of each frame in float audio units (float32 values, as floats)."""
        f = frames.astype(np.float32)
        # One einsum for the batch: its float32 sums are what the gate and refinement have always
        # seen (no other numpy reduction adds in the same order), whatever the batch size.
        return (_einsum("ij,ij->i", f, f) * self._energy_scale).tolist()

    def _vad_flags(self, frames: np.ndarray) -> list[bool]:
        """webrtcvad's decision for each frame, calling its C function directly."""
        data = frames.tobytes()  # one contiguous copy, whatever the caller's array layout
        size, flen, handle = 2 * self._flen, self._flen, self._handle
        if len(frames) == 2:  # a live call's 20 ms: spelt out, a comprehension costs as much
            return [
                _vad_process(handle, SAMPLE_RATE, data[:size], flen),
                _vad_process(handle, SAMPLE_RATE, data[size:], flen),
            ]
        return [
            _vad_process(handle, SAMPLE_RATE, data[k : k + size], flen)
            for k in range(0, len(data), size)
        ]

    def _gate(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """webrtcvad's decisions, minus frames that are not energy_gate_db above the noise floor.

        The floor is minimum statistics: the quietest frame of each block of frames (blocks are
        aligned to the stream, so chunk sizes do not matter), over noise_window_ms. The first
        block is gated by _release.
        """
        ratio, gated, block_frames = self._gate_ratio, self._gate_db > 0, self._block_frames
        block_min, block_n, older = self._block_min, self._block_n, self._older_min
        voiced = []
        for energy, flag in zip(energies, flags, strict=True):
            if energy < block_min:
                block_min = energy
            if flag and gated and older < _INF:
                flag = energy >= (block_min if block_min < older else older) * ratio
            voiced.append(flag)
            block_n += 1
            if block_n >= block_frames:
                self._block_mins.append(block_min)
                older = min(self._block_mins)
                block_min, block_n = _INF, 0
        self._block_min, self._block_n, self._older_min = block_min, block_n, older
        return voiced

    def _track_floor(self, energies: list[float]) -> None:
        """_gate's noise-floor bookkeeping alone, block by block, for frames nobody gates."""
        i, n = 0, len(energies)
        while i < n:
            take = min(n - i, self._block_frames - self._block_n)
            self._block_min = min(self._block_min, *energies[i : i + take])
            self._block_n += take
            if self._block_n >= self._block_frames:
                self._block_mins.append(self._block_min)
                self._older_min = min(self._block_mins)
                self._block_min, self._block_n = _INF, 0
            i += take

    def _run(
        self,
        frames: np.ndarray,
        energies: list[float],
        voiced: list[bool],
        events: list[SpeechEvent],
    ) -> None:
        """The state machine, frame by frame, on plain Python values. The frames and energies
        are filed (_file) a run at a time: the runs end where the state changes, before any
        state change reads them."""
        flen, mask, need = self._flen, self._window_mask, self._need
        filed = 0
        for i, v in enumerate(voiced):
            self._pos += flen
            recent = self._recent = ((self._recent << 1) | v) & mask
            state = self._state
            if state == _SILENCE:
                # Silence never holds `need` voiced frames (it would have opened), so only a
                # voiced frame can start speech.
                if v and recent.bit_count() >= need:
                    filed = self._file(frames, energies, voiced, filed, i + 1)
                    self._open_utterance(self._pos - flen, events)
            elif state == _SPEECH:
                if v:
                    self._last_voiced_end = self._pos
                    self._unvoiced_run = 0
                else:
                    self._unvoiced_run += 1
                    if self._unvoiced_run >= self._hang:
                        filed = self._file(frames, energies, voiced, filed, i + 1)
                        self._close_span(self._last_voiced_end, events)
                if self._pos - self._spans[0][0] >= self._max_utt:
                    filed = self._file(frames, energies, voiced, filed, i + 1)
                    self._force_end(events)
            # _PAUSE: speech may resume inside the utterance, or the silence may end the turn.
            elif recent.bit_count() >= need:
                filed = self._file(frames, energies, voiced, filed, i + 1)
                self._resume(events)
            elif self._pos - self._last_voiced_end >= self._eot:
                filed = self._file(frames, energies, voiced, filed, i + 1)
                self._finish(events, forced=False)
        self._file(frames, energies, voiced, filed, len(voiced))

    def _file(
        self, frames: np.ndarray, energies: list[float], voiced: list[bool], a: int, b: int
    ) -> int:
        """Keep frames [a, b) of the batch where the current state keeps them; returns b."""
        if a >= b:
            return b
        if a or b < len(voiced):
            frames, energies, voiced = frames[a:b], energies[a:b], voiced[a:b]
        if self._state == _SILENCE:
            self._to_ring(frames)
            self._ring_energy.extend(energies)
        else:
            self._utt_audio.append(frames)
            self._utt_energy.extend(energies)
        if self._state != _SPEECH and False in voiced:  # silences teach the noise floor
            self._add_noise([e for e, v in zip(energies, voiced, strict=True) if not v])
        return b

    def _add_noise(self, energies: list[float]) -> None:
        self._noise.extend(energies)
        self._noise_added += len(energies)

    def _to_ring(self, frames: np.ndarray) -> None:
        """Add a run of frames to the pre-roll, dropping runs that fell out of it entirely."""
        self._ring.append(frames)
        self._ring_frames += len(frames)
        while self._ring_frames - len(self._ring[0]) >= self._ring_len:
            self._ring_frames -= len(self._ring.popleft())

    # -- utterances ---------------------------------------------------------------------------

    def _window_onset(self) -> int:
        """Sample index of the first voiced frame in the start window."""
        return self._pos - self._recent.bit_length() * self._flen

    def _open_utterance(self, fstart: int, events: list[SpeechEvent]) -> None:
        onset = self._window_onset()
        ring = self._ring[0] if len(self._ring) == 1 else np.concatenate(self._ring)
        ring = ring[-self._ring_len :]
        self._utt_audio = [ring]
        self._utt_energy = list(self._ring_energy)
        self._utt_audio_start = fstart + self._flen - len(ring) * self._flen
        self._spans = [[onset, -1]]
        self._state = _SPEECH
        self._last_voiced_end = self._pos
        self._unvoiced_run = 0
        self._ring.clear()
        self._ring_frames = 0
        self._ring_energy.clear()
        events.append(SpeechStart(self.channel, self._live_start_ms(onset), self.position_ms, True))

    def _resume(self, events: list[SpeechEvent]) -> None:
        """Speech again after a pause inside the utterance: a new span."""
        onset = max(self._window_onset(), self._spans[-1][1])
        self._spans.append([onset, -1])
        self._state = _SPEECH
        self._last_voiced_end = self._pos
        self._unvoiced_run = 0
        events.append(
            SpeechStart(self.channel, self._live_start_ms(onset), self.position_ms, False)
        )

    def _close_span(self, end: int, events: list[SpeechEvent]) -> None:
        self._spans[-1][1] = end
        self._state = _PAUSE
        events.append(SpeechStop(self.channel, self._live_end_ms(end), self.position_ms))

    def _force_end(self, events: list[SpeechEvent]) -> None:
        """max_utterance_ms reached: end the turn here, in speech or not."""
        if self._state == _SPEECH:
            self._close_span(self._pos, events)
        self._finish(events, forced=True)

    def _finish(self, events: list[SpeechEvent], *, forced: bool) -> None:
        pcm = np.concatenate(self._utt_audio).reshape(-1) if self._utt_audio else _NO_SAMPLES
        spans = self._refined_spans(pcm) if self._refine.enabled else self._spans
        spans = [s for s in spans if s[1] > s[0]]
        shortest = SAMPLE_RATE * self._cfg.min_utterance_ms // 1000
        if not forced:
            # A last span too short to be an utterance of its own, well after the last word, is
            # a click or a burst of noise (pink noise at 10 dB SNR: 40 ms, 500 ms after it). A
            # final consonant's release comes much closer to the word it ends.
            while (
                len(spans) > 1
                and spans[-1][1] - spans[-1][0] < shortest
                and spans[-1][0] - spans[-2][1] >= _LONE_SPAN_GAP
            ):
                spans.pop()
        voiced = sum(e - s for s, e in spans)
        decided = self.position_ms
        self._state = _SILENCE
        self._utt_audio = []
        self._utt_energy = []
        self._recent = 0
        if not spans or voiced < shortest:
            return
        lo = max(self._utt_audio_start, spans[0][0] - self._pad)
        hi = min(self._utt_audio_start + len(pcm), spans[-1][1] + self._pad)
        clip = to_float32(pcm[lo - self._utt_audio_start : hi - self._utt_audio_start])
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
        """The channel's noise level: the median unvoiced frame of the recent history (cached:
        in speech it does not change between boundaries)."""
        added, level = self._noise_cache
        if added != self._noise_added:
            level = None
            if len(self._noise) >= _NOISE_MIN_FRAMES:
                ordered = sorted(self._noise)
                level = energy_db(ordered[len(ordered) * _NOISE_PERCENTILE // 100])
            self._noise_cache = (self._noise_added, level)
        return level

    def _peak_window(self, energies: list[float]) -> tuple[int, int] | None:
        """Samples around the loudest VAD frame (the first, as np.argmax), where the peak is."""
        if not energies:
            return None
        k = energies.index(max(energies))
        return (k - 1) * self._flen, (k + 2) * self._flen

    def _search_window(self, sample: int) -> tuple[int, int]:
        """Samples whose envelope _refine_at reads to refine a boundary at ``sample``."""
        return max(0, sample - self._radius), sample + self._radius

    def _peak_db(self, envelope: _Envelope, window: tuple[int, int] | None) -> float:
        """Peak of the envelope, looked for around the loudest VAD frame only."""
        env = envelope(*window) if window else np.zeros(0)
        return float(env.max()) if len(env) else -120.0

    def _refine_at(self, envelope: _Envelope, sample: int, thresh: float, *, start: bool) -> int:
        """Refine one boundary (a sample index into the enveloped audio) on its local envelope."""
        lo, hi = self._search_window(sample)
        env = envelope(lo, hi)
        coarse = (sample - lo) // HOP
        hop = (refine_start if start else refine_end)(env, coarse, thresh, self._params)
        return lo + hop * HOP

    def _refined_spans(self, pcm: np.ndarray) -> list[list[int]]:
        """Span boundaries moved onto the utterance's envelope (sample indices, ordered)."""
        base = self._utt_audio_start
        peak_window = self._peak_window(self._utt_energy)
        searched = [self._search_window(edge - base) for span in self._spans for edge in span]
        envelope = self._envelope(pcm, [peak_window, *searched])
        thresh = threshold_db(self._peak_db(envelope, peak_window), self._noise_db(), self._params)
        out: list[list[int]] = []
        prev_end = base
        for s, e in self._spans:
            rs = base + self._refine_at(envelope, s - base, thresh, start=True)
            re_ = base + self._refine_at(envelope, e - base, thresh, start=False)
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
        tail = self._utt_tail()
        pcm = tail.reshape(-1)
        base = self._pos - len(pcm)
        sample = max(0, sample - base)
        peak_window = self._peak_window(self._utt_energy[-len(tail) :])
        envelope = self._envelope(pcm, [peak_window, self._search_window(sample)])
        thresh = threshold_db(self._peak_db(envelope, peak_window), self._noise_db(), self._params)
        refined = base + self._refine_at(envelope, sample, thresh, start=start)
        return samples_to_ms(min(max(refined, base), self._pos))

    def _utt_tail(self) -> np.ndarray:
        """The utterance's last tail_frames frames (all of it if shorter), as (n, flen)."""
        runs, frames = [], 0
        for run in reversed(self._utt_audio):
            runs.append(run)
            frames += len(run)
            if frames >= self._tail_frames:
                break
        tail = runs[0] if len(runs) == 1 else np.concatenate(runs[::-1])
        return tail[-self._tail_frames :]

    def _envelope(self, pcm: np.ndarray, windows: list[tuple[int, int] | None]) -> _Envelope:
        """pcm_envelope_db of ``pcm`` over any of ``windows``, computed once per overlapping run
        of them: the windows of one utterance overlap, and a value depends only on the audio and
        its hop's centre, so slices of the wider envelope hold the very same values."""
        n, window_ms = len(pcm), self._refine.window_ms
        runs: list[list[int]] = []
        for lo, hi in sorted((max(0, w[0]), min(w[1], n)) for w in windows if w):
            if hi <= lo:
                continue
            if runs and lo <= runs[-1][1] and (lo - runs[-1][0]) % HOP == 0:
                runs[-1][1] = max(runs[-1][1], hi)
            else:
                runs.append([lo, hi])
        envs = [(lo, hi, pcm_envelope_db(pcm, window_ms, lo, hi)) for lo, hi in runs]

        def envelope(lo: int, hi: int) -> np.ndarray:
            lo, hi = max(0, lo), min(hi, n)
            for run_lo, run_hi, env in envs:
                if run_lo <= lo < hi <= run_hi and (lo - run_lo) % HOP == 0:
                    first = (lo - run_lo) // HOP
                    return env[first : first - (-(hi - lo) // HOP)]
            return pcm_envelope_db(pcm, window_ms, lo, hi)  # not asked for up front

        return envelope

    def _live_start_ms(self, onset: int) -> float:
        return self._live_estimate(onset, start=True)

    def _live_end_ms(self, end: int) -> float:
        return self._live_estimate(end, start=False)
