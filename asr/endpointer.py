"""Streaming endpointer for one channel: webrtcvad frames -> speech start/stop and end of turn.

Plain, synchronous and incremental: ``push(frame)`` returns the events that audio made
decidable, so it runs the same under a live call, a paced replay or a fast replay. Memory is
bounded: a pre-roll ring plus the audio of the utterance in progress (max_utterance_ms).

It runs >= 1000x real time per channel (benchmarks/endpointer_speed.py): a push calls numpy a
fixed few times per batch, the per-frame state machine touches plain Python values, audio is
filed a run of frames at a time. Events never depend on how the stream was chunked.

The state machine: on ``vad.FrameClassifier``'s flags gated by ``noise.NoiseGate``, utterances
opened with ``preroll.PreRoll``'s frames, live boundaries by ``refine.SpanRefiner``, a start out
of silence moved past room tone (``room_tone_start``), final spans by ``closing_spans``.
"""

from __future__ import annotations

import numpy as np

from turnscope.asr.closing_spans import closing_spans
from turnscope.asr.events import (
    EndOfTurn,
    Span,
    SpeechEvent,
    SpeechStart,
    SpeechStop,
    StartMoved,
    StreamGap,
    Utterance,
)
from turnscope.asr.loud_moments import LoudMoments
from turnscope.asr.noise import BackgroundGate, NoiseGate, NoiseLevel, past_rise
from turnscope.asr.preroll import PreRoll
from turnscope.asr.refine import SpanRefiner
from turnscope.asr.room_tone_start import StartWatch, watch_start
from turnscope.asr.settings import RefineSettings, VadSettings
from turnscope.asr.vad import FrameClassifier
from turnscope.capture.frames import SAMPLE_RATE, PcmFrame, samples_to_ms, to_float32

_SILENCE, _SPEECH, _PAUSE = 0, 1, 2
_DEFER_FRAMES = 50  # silent frames whose energies are computed in one batch
_NO_SAMPLES = np.empty(0, dtype=np.int16)  # shared, never written: the usual empty remainder


class Endpointer:
    """Turns one channel's PCM frames into SpeechStart / SpeechStop / EndOfTurn events."""

    def __init__(
        self, channel: str, vad: VadSettings, refine: RefineSettings, *, pad_ms: int = 150
    ) -> None:
        self.channel = channel
        self._cfg = vad
        self._refiner = SpanRefiner(refine, vad.frame_ms) if refine.enabled else None
        self._refine = refine
        self._classifier = FrameClassifier(vad.aggressiveness, vad.frame_ms)
        self._flen = self._classifier.frame_len
        self._window = max(1, vad.start_window_ms // vad.frame_ms)
        self._need = min(self._window, max(1, -(-vad.start_voiced_ms // vad.frame_ms)))
        self._hang = max(1, -(-vad.hangover_ms // vad.frame_ms)) if vad.hangover_ms else 1
        self._eot = SAMPLE_RATE * vad.end_of_turn_ms // 1000
        self._max_utt = SAMPLE_RATE * vad.max_utterance_ms // 1000
        self._pad = SAMPLE_RATE * pad_ms // 1000
        # The pre-roll reaches back over the start window to preroll_ms before its first frame.
        self._preroll = PreRoll((vad.preroll_ms + vad.start_window_ms) // vad.frame_ms + 1)
        # The start window as bits, newest frame in bit 0: the voiced count is its popcount and
        # the oldest voiced frame its bit length.
        self._recent = 0
        self._window_mask = (1 << self._window) - 1
        self._noise = NoiseLevel()
        self._background = BackgroundGate(vad.background_gate_db)
        self._gate = NoiseGate(
            vad.energy_gate_db, vad.frame_ms, vad.noise_window_ms, (self._noise, self._background)
        )
        # The gate's first block is held back until it is complete (NoiseGate.gate_first_block).
        self._held: list[tuple[np.ndarray, list[float], list[bool]]] | None = (
            [] if self._gate.enabled else None
        )
        self._held_n = 0
        self._decided_at = 0  # sample index: events of held frames are decided when released
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
        self._stretching = self._refiner is not None and refine.stretch_search_ms > 0
        self._watch: tuple[StartWatch, SpeechStart] | None = None  # maybe on room tone
        self._loudest = 0.0  # the channel's loudest frame (energy) in its utterances so far
        self._moments = LoudMoments(vad.span_over_background_db, self._flen)

    @property
    def position_ms(self) -> float:
        """Stream time up to which audio has been classified (and events decided)."""
        return samples_to_ms(max(self._pos, self._decided_at))

    @property
    def background_db(self) -> float | None:
        """The channel's typical background level so far (dBFS), once known."""
        return self._noise.db()

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
            whole = (pcm[: len(pcm) - rest] if rest else pcm).reshape(-1, self._flen)
            # A block's last frame is classified alone: its end may change the floor (a noise
            # came on after silence), which a batch gated whole applied to the frames before it.
            block = self._gate.block_frames
            at = (self._expected - len(pcm)) // self._flen  # frames classified before these
            while len(whole) > (cut := (block - 1 - at % block) or 1):
                self._classify(whole[:cut], events)
                whole, at = whole[cut:], at + cut
            self._classify(whole, events)
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
            energy, flag = self._classifier.last(frame)
            self._run(frame[None, :], [energy], self._gate.gate([energy], [flag]), events)
        if self._state == _SPEECH:
            self._close_span(self._last_voiced_end, events)
        if self._state != _SILENCE:
            self._finish(events, forced=False)
        return events

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
        flags = self._classifier.speech(frames)
        if self._held is not None:
            self._held.append((frames, self._classifier.energies(frames), flags))
            self._held_n += len(frames)
            if self._held_n >= self._gate.block_frames:
                self._release(events)
            return
        if self._state == _SILENCE and True not in flags:
            self._defer(frames)
            return
        if self._deferred:
            self._settle()
        energies = self._classifier.energies(frames)
        voiced = self._gate.gate(energies, flags)
        if self._state == _SILENCE and True not in voiced:
            # Noise webrtcvad took for speech and the gate did not (most of a noisy call's
            # silence): _run's effect on unvoiced frames in silence, in bulk.
            n = len(frames)
            self._preroll.add(frames, energies)
            self._noise.add(energies)
            self._background.fold_all(energies)
            self._recent = (self._recent << n) & self._window_mask
            self._pos += n * self._flen
            return
        self._run(frames, energies, voiced, events)

    def _release(self, events: list[SpeechEvent]) -> None:
        """Classify the held first block (and what came with its last batch)."""
        held, self._held = self._held or [], None
        if not held:
            return
        frames = held[0][0] if len(held) == 1 else np.concatenate([h[0] for h in held])
        energies = [e for h in held for e in h[1]]
        flags = [f for h in held for f in h[2]]
        self._decided_at = self._pos + len(frames) * self._flen
        self._run(frames, energies, self._gate.gate_first_block(energies, flags), events)

    def _defer(self, frames: np.ndarray) -> None:
        """Silence that webrtcvad calls silence: its frames only fill the pre-roll, the noise
        history and the floor, none of which is read before the next frame webrtcvad calls
        speech, so their energies wait to be computed in one batch (most of a call is silence).
        """
        n = len(frames)
        self._preroll.add_frames(frames)
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
        energies = self._classifier.energies(frames)
        self._gate.track(energies)
        self._preroll.add_energies(energies)
        self._noise.add(energies)
        self._background.fold_all(energies)

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
        background = self._background if self._background.enabled else None
        filed = 0
        for i, v in enumerate(voiced):
            if v and background is not None and energies[i] < background.least:
                v = voiced[i] = False
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
                if self._watch is not None and self._watch[0].due(energies[i], self._pos):
                    filed = self._file(frames, energies, voiced, filed, i + 1)
                    self._move_start(events)
                if v:
                    self._last_voiced_end = self._pos
                    self._unvoiced_run = 0
                else:
                    self._unvoiced_run += 1
                    if self._unvoiced_run >= self._hang:
                        filed = self._file(frames, energies, voiced, filed, i + 1)
                        self._close_span(self._last_voiced_end, events)
                if self._spans and self._pos - self._spans[0][0] >= self._max_utt:
                    filed = self._file(frames, energies, voiced, filed, i + 1)
                    self._force_end(events)
            # _PAUSE: speech may resume inside the utterance, or the silence may end the turn.
            elif recent.bit_count() >= need:
                filed = self._file(frames, energies, voiced, filed, i + 1)
                self._resume(events)
            elif self._pos - self._last_voiced_end >= self._eot:
                filed = self._file(frames, energies, voiced, filed, i + 1)
                self._finish(events, forced=False)
            if background is not None and (
                self._state == _SILENCE or (self._state == _PAUSE and not v)
            ):
                background.fold(energies[i])
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
            self._preroll.add(frames, energies)
        else:
            self._utt_audio.append(frames)
            self._utt_energy.extend(energies)
        # Silences teach the background level: all of a silence (noise the gate let through is
        # background too; leaving it out would bias the level low and let more through), and the
        # unvoiced frames of an utterance's pauses.
        if self._state == _SILENCE:
            self._noise.add(energies)
        elif self._state == _PAUSE and False in voiced:
            self._noise.add([e for e, v in zip(energies, voiced, strict=True) if not v])
        return b

    def _open_utterance(self, fstart: int, events: list[SpeechEvent]) -> None:
        onset = self._pos - self._recent.bit_length() * self._flen  # the window's first voiced
        ring, energies = self._preroll.take()
        self._utt_audio = [ring]
        self._utt_energy = energies
        self._utt_audio_start = fstart + self._flen - len(ring) * self._flen
        self._spans = [[onset, -1]]
        self._state = _SPEECH
        self._last_voiced_end = self._pos
        self._unvoiced_run = 0
        start = SpeechStart(self.channel, self._live_estimate(onset, True), self.position_ms, True)
        events.append(start)
        base, flen = self._utt_audio_start, self._flen
        watch = (
            watch_start(onset, base, flen, energies, self._loudest) if self._stretching else None
        )
        self._watch = (watch, start) if watch is not None else None

    def _move_start(self, events: list[SpeechEvent]) -> None:
        """The watched start moved past the room tone, once the speech has risen out of it."""
        assert self._watch is not None
        watch, start = self._watch
        a, e, b, sp = self._utt_audio, self._utt_energy, self._utt_audio_start, self._spans
        over, at = watch.decide(a, e, b, sp, self._pos, self._refine)
        if over:
            self._watch = None
        if at is not None and samples_to_ms(at) > start.at_ms:  # the live guess was the tone's
            events.append(StartMoved(self.channel, samples_to_ms(at), self.position_ms))

    def _resume(self, events: list[SpeechEvent]) -> None:
        """Speech again after a pause inside the utterance: a new span."""
        onset = max(self._pos - self._recent.bit_length() * self._flen, self._spans[-1][1])
        self._spans.append([onset, -1])
        self._state = _SPEECH
        self._last_voiced_end = self._pos
        self._unvoiced_run = 0
        at = self._live_estimate(onset, True)
        events.append(SpeechStart(self.channel, at, self.position_ms, False))

    def _close_span(self, end: int, events: list[SpeechEvent]) -> None:
        self._spans[-1][1] = end
        self._state = _PAUSE
        events.append(SpeechStop(self.channel, self._live_estimate(end, False), self.position_ms))
        span, energies, base = self._spans[-1], self._utt_energy, self._utt_audio_start
        if self._moments.is_background(self._noise.background(), span, energies, base):
            self._spans.pop()  # the background's loud moment: the pause before it goes on
            if self._spans:
                self._last_voiced_end = self._spans[-1][1]
            else:  # an utterance of background alone: silence again, its audio the pre-roll's
                self._preroll.add(np.concatenate(self._utt_audio), energies)
                self._state, self._utt_audio, self._utt_energy, self._watch = _SILENCE, [], [], None

    def _force_end(self, events: list[SpeechEvent]) -> None:
        """max_utterance_ms reached: end the turn here, in speech or not."""
        if self._state == _SPEECH:
            self._close_span(self._pos, events)
        self._finish(events, forced=True)

    def _finish(self, events: list[SpeechEvent], *, forced: bool) -> None:
        self._watch = None
        self._loudest = max(self._loudest, top := max(self._utt_energy, default=0.0))
        pcm = np.concatenate(self._utt_audio).reshape(-1) if self._utt_audio else _NO_SAMPLES
        base, flen, background = self._utt_audio_start, self._flen, self._noise.background()
        spans = self._moments.lead(background, self._spans, self._utt_energy, base)
        self._spans = past_rise(self._gate, spans, self._utt_energy, base, flen, self._need)
        shortest = SAMPLE_RATE * self._cfg.min_utterance_ms // 1000
        spans = closing_spans(
            pcm, base, self._spans, self._utt_energy, flen, self._refiner, self._refine,
            background, shortest=shortest, forced=forced,
        )  # fmt: skip
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
        self._moments.heard(top)
        events.append(EndOfTurn(utt))

    def _live_estimate(self, sample: int, start: bool) -> float:
        """Best estimate of a boundary from the audio seen so far (the final one comes with the
        utterance)."""
        if self._refiner is None or not self._utt_audio:
            return samples_to_ms(sample)
        audio, energies, noise = self._utt_audio, self._utt_energy, self._noise.background()
        return samples_to_ms(
            self._refiner.live(audio, energies, self._pos, sample, noise, start=start)
        )
