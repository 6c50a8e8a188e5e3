"""Transcription of finished utterances with faster-whisper, off the event loop.

``transcribe_batch`` is a plain function (testable without asyncio): utterances decoded
together (``decode.py``), each to the text it decodes to alone. ``Transcriber`` runs it on the
process's ASR worker (``worker.py``) through the loop's batcher (``batching.py``), so audio
capture and endpointing never wait for the model. Whether an utterance is decoded after the
previous one is ``context.py``'s policy; the clean-up of Whisper's text is ``text.py``'s.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from turnscope.asr.batching import batcher
from turnscope.asr.context import Context
from turnscope.asr.decode import MAX_WINDOW_S, DecodedSegment, DecodeRequest, decode_batch, options
from turnscope.asr.events import Utterance
from turnscope.asr.model import ModelSpec, load_whisper, resolve_model
from turnscope.asr.settings import AsrSettings, ConfirmSettings
from turnscope.asr.text import after_prefix, collapse_repetition, collapse_runs, repeats_context
from turnscope.asr.worker import _loaded, _loading, _on_worker, _worker_errors
from turnscope.capture.frames import SAMPLE_RATE, samples_to_ms

if TYPE_CHECKING:
    from faster_whisper import WhisperModel


@dataclass(frozen=True, slots=True)
class Word:
    """A recognised word with call-clock times (ms) and Whisper's probability."""

    text: str
    start_ms: float
    end_ms: float
    probability: float


@dataclass(frozen=True)
class Transcription:
    """What the ASR made of one utterance."""

    text: str
    words: tuple[Word, ...] = ()
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    asr_ms: float = 0.0  # compute time (its share of its batch's)
    rejected: str | None = None  # why the utterance was judged not to be speech, if it was
    speech_ratio: float | None = None  # Silero's share of speech, when the second opinion ran
    dropped_segments: int = 0  # Whisper segments dropped as probably not speech
    context_ms: float = 0.0  # audio of the speaker's previous utterance decoded in front of it
    batch: int = 1  # utterances decoded in the same batch

    @property
    def confidence(self) -> float | None:
        """Mean word probability, when words are known."""
        if not self.words:
            return None
        return float(np.mean([w.probability for w in self.words]))


def model_spec(asr: AsrSettings) -> ModelSpec:
    return ModelSpec(
        model=asr.model,
        compute_type=asr.compute_type,
        cpu_threads=asr.cpu_threads,
        device=asr.device,
    )


def window_seconds(duration_s: float, asr: AsrSettings) -> int:
    """Encoder window for one utterance: its length plus ``window_pad_s`` of padding, at least
    ``min_window_s``, at most Whisper's 30 s. Whisper pads every input to 30 s by default, which
    makes the encoder cost of a 2 s turn that of 30 s of audio; a 15 s window is half that and
    as accurate on the benchmark corpus. At 10 s, Whisper tiny looped and misheard short turns
    (short-turn calls: WER 0.226 at 10 s, 0.204 at 15 s, 20 s and 30 s)."""
    need = math.ceil(duration_s + asr.window_pad_s)
    return max(asr.min_window_s, min(MAX_WINDOW_S, need))


def silero_speech_ratio(audio: np.ndarray) -> float:
    """Share of ``audio`` (16 kHz float) that faster-whisper's bundled Silero VAD calls speech."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    if len(audio) == 0:
        return 0.0
    stamps = get_speech_timestamps(
        audio, VadOptions(min_silence_duration_ms=100, speech_pad_ms=0), sampling_rate=SAMPLE_RATE
    )
    return sum(s["end"] - s["start"] for s in stamps) / len(audio)


Job = tuple[Utterance, "Context | None"]  # an utterance and what it is decoded after


def transcribe_batch(
    jobs: Sequence[Job], asr: AsrSettings, confirm: ConfirmSettings | None = None
) -> list[Transcription]:
    """Transcribe utterances together (``decode.decode_batch``); words carry call-clock times.
    Each text is what the utterance decodes to alone.

    With a context (``context_for``), Whisper hears the previous utterance's audio in front
    of this one and is forced to start with its text, so it decodes only the new words, as a
    continuation of what this speaker said (as when it transcribes a whole recording). When all
    it says then is the end of the context again, or nothing (a restarted sentence after the
    context's cut-off one reads as no speech), the utterance is decoded alone (a second batch).
    ``asr_ms`` is each utterance's share of the batch's compute time."""
    t0 = time.perf_counter()
    out: list[Transcription | None] = [None] * len(jobs)
    ratios: dict[int, float] = {}
    todo = []
    for k, (utt, _context) in enumerate(jobs):
        if confirm is not None and confirm.silero:
            ratios[k] = ratio = silero_speech_ratio(utt.audio)
            if ratio < confirm.min_speech_ratio:
                out[k] = Transcription(
                    text="", rejected=f"second opinion: Silero VAD found {ratio:.0%} speech"
                )
                continue
        todo.append(k)
    model = load_whisper(model_spec(asr))
    for k, tr in zip(todo, _decode(model, [jobs[k] for k in todo], asr), strict=True):
        out[k] = tr
    redo = [
        k
        for k in todo
        if (ctx := jobs[k][1]) is not None
        and (not out[k].text.strip() or repeats_context(out[k].text, ctx.text))  # type: ignore[union-attr]
    ]
    for k, tr in zip(redo, _decode(model, [(jobs[k][0], None) for k in redo], asr), strict=True):
        out[k] = tr
    share = (time.perf_counter() - t0) * 1000 / max(1, len(jobs))
    return [
        replace(tr, asr_ms=share, speech_ratio=ratios.get(k), batch=len(jobs))  # type: ignore[arg-type]
        for k, tr in enumerate(out)
    ]


def _decode(model: WhisperModel, jobs: Sequence[Job], asr: AsrSettings) -> list[Transcription]:
    """One decoding of each job's utterance, after its context when given, in one batch."""
    if not jobs:
        return []
    requests = []
    for utt, context in jobs:
        audio = utt.audio if context is None else np.concatenate([context.audio, utt.audio])
        short = utt.duration_ms <= asr.short_max_ms and asr.short_prompt
        requests.append(
            DecodeRequest(
                audio.astype(np.float32, copy=False),
                window_seconds(len(audio) / SAMPLE_RATE, asr),
                initial_prompt=asr.short_prompt if short and context is None else None,
                prefix=context.text if context is not None else None,
            )
        )
    opts = options(asr.language, asr.beam_size, asr.temperature, asr.word_timestamps)
    decoded = decode_batch(model, requests, opts)
    return [
        _transcription(utt, context, segments, asr)
        for (utt, context), segments in zip(jobs, decoded, strict=True)
    ]


def _transcription(
    utt: Utterance, context: Context | None, segments: list[DecodedSegment], asr: AsrSettings
) -> Transcription:
    """What one decoding says of ``utt``: words on the call clock, the prefix's words cut,
    decoder loops collapsed."""
    lead_ms = samples_to_ms(len(context.audio)) if context is not None else 0.0
    limit = asr.no_speech_limit(utt.duration_ms)
    heard_segments = [seg for seg in segments if seg.no_speech_prob <= limit]
    dropped = len(segments) - len(heard_segments)
    segments, all_segments = heard_segments, segments
    words: list[Word] = []
    skip = len(context.text.split()) if context is not None else 0  # the prefix's own words
    for seg in segments:
        for w in seg.words or ():
            if skip:
                skip -= 1
                continue
            words.append(
                Word(
                    text=w.word.strip(),
                    start_ms=utt.audio_start_ms + w.start * 1000.0 - lead_ms,
                    end_ms=utt.audio_start_ms + w.end * 1000.0 - lead_ms,
                    probability=float(w.probability),
                )
            )
    joined = " ".join(seg.text.strip() for seg in segments).strip()
    if context is not None and segments:
        joined = after_prefix(joined, context.text)
    text, repeats = collapse_repetition(joined)
    if repeats > 1 and len(words) % repeats == 0:
        words = words[: len(words) // repeats]
    n_words = len(text.split())
    text, kept = collapse_runs(text)
    if len(kept) < n_words and len(words) == n_words:
        words = [words[k] for k in kept]
    logprobs = [seg.avg_logprob for seg in segments]
    return Transcription(
        text=text,
        words=tuple(words),
        avg_logprob=float(np.mean(logprobs)) if logprobs else None,
        no_speech_prob=(
            float(max(seg.no_speech_prob for seg in all_segments)) if all_segments else None
        ),
        dropped_segments=dropped,
        context_ms=lead_ms,
    )


def _load(spec: ModelSpec) -> None:
    load_whisper(spec)  # in the ASR process; the model itself never crosses back


@dataclass
class Transcriber:
    """Transcribes utterances on the process's ASR worker; ``await transcriber(utt)``."""

    asr: AsrSettings
    confirm: ConfirmSettings | None = None

    def warm_up(self) -> None:
        """Load the model now (in the ASR process) so the first turn is not slowed by it."""
        spec = model_spec(self.asr)
        if spec in _loaded:
            return
        pool, future = _loading.pop(spec, None) or _on_worker(_load, spec)
        with _worker_errors(pool):
            future.result()
        _loaded.add(spec)

    def preload(self) -> None:
        """Start the ASR worker and its model load now and return at once: a replay opens and
        decodes its audio meanwhile; ``ready`` (or ``warm_up``) then waits for what is left."""
        spec = model_spec(self.asr)
        if spec not in _loaded and spec not in _loading:
            resolve_model(spec.model)  # a missing model is an error now, even for a silent call
            _loading[spec] = _on_worker(_load, spec)

    async def ready(self) -> None:
        """``warm_up`` for the event loop: awaits the load without holding a thread (a load
        queues behind other calls' transcriptions, which may take seconds on a busy machine)."""
        spec = model_spec(self.asr)
        if spec in _loaded:
            return
        pool, future = _loading.pop(spec, None) or _on_worker(_load, spec)
        with _worker_errors(pool):
            await asyncio.wrap_future(future)
        _loaded.add(spec)

    async def __call__(self, utt: Utterance, context: Context | None = None) -> Transcription:
        """The utterance's transcription; it waits for the worker with whatever else does and
        is decoded in the same batch (``batching.py``)."""
        return await batcher().submit((utt, context), self.asr, self.confirm)
