"""Transcription of finished utterances with faster-whisper, off the event loop.

``transcribe_utterance`` is a plain function (testable without asyncio); ``Transcriber`` runs it
in a single worker thread so audio capture and endpointing never wait for the model. One worker
is enough: CTranslate2 already uses ``cpu_threads`` cores per call, and a queue keeps order.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import re
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from turnscope.asr.events import Utterance
from turnscope.asr.model import ModelSpec, encoder_window, load_model
from turnscope.asr.settings import AsrSettings, ConfirmSettings
from turnscope.capture.frames import SAMPLE_RATE


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
    asr_ms: float = 0.0  # compute time
    rejected: str | None = None  # why the utterance was judged not to be speech, if it was
    speech_ratio: float | None = None  # Silero's share of speech, when the second opinion ran
    dropped_segments: int = 0  # Whisper segments dropped as probably not speech

    @property
    def confidence(self) -> float | None:
        """Mean word probability, when words are known."""
        if not self.words:
            return None
        return float(np.mean([w.probability for w in self.words]))


def model_spec(asr: AsrSettings) -> ModelSpec:
    return ModelSpec(model=asr.model, compute_type=asr.compute_type, cpu_threads=asr.cpu_threads)


def window_seconds(duration_s: float, asr: AsrSettings) -> int:
    """Encoder window for one utterance: its length plus ``window_pad_s`` of padding, at least
    ``min_window_s``, at most Whisper's 30 s. Whisper pads every input to 30 s by default, which
    makes the encoder cost of a 2 s turn that of 30 s of audio; a 15 s window is half that and
    as accurate on the benchmark corpus. At 10 s, Whisper tiny looped and misheard short turns
    (short-turn calls: WER 0.226 at 10 s, 0.204 at 15 s, 20 s and 30 s)."""
    need = math.ceil(duration_s + asr.window_pad_s)
    return max(asr.min_window_s, min(30, need))


_MIN_REPEATED_WORDS = 3


def collapse_repetition(text: str) -> tuple[str, int]:
    """``text`` without a decoder loop: when the whole text is one phrase of at least three words
    said k >= 2 times over ("When will it arrive? When will it arrive?"), the phrase once, and k.

    Whisper's decoder falls into such loops on short utterances (more often with a short encoder
    window and a prompt); on the benchmark corpus they were a third of the turn-level WER. A
    caller really repeating a whole multi-word sentence inside one utterance is rarer than the
    loop; short repeats ("no no", "yeah yeah") are left alone.
    """
    words = text.split()
    norm = [re.sub(r"\W", "", w.lower()) for w in words]
    n = len(words)
    for k in range(n // _MIN_REPEATED_WORDS, 1, -1):
        if n % k == 0 and all(norm[i] == norm[i % (n // k)] for i in range(n)):
            return " ".join(words[: n // k]), k
    return text, 1


def silero_speech_ratio(audio: np.ndarray) -> float:
    """Share of ``audio`` (16 kHz float) that faster-whisper's bundled Silero VAD calls speech."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    if len(audio) == 0:
        return 0.0
    stamps = get_speech_timestamps(
        audio, VadOptions(min_silence_duration_ms=100, speech_pad_ms=0), sampling_rate=SAMPLE_RATE
    )
    return sum(s["end"] - s["start"] for s in stamps) / len(audio)


def transcribe_utterance(
    utt: Utterance, asr: AsrSettings, confirm: ConfirmSettings | None = None
) -> Transcription:
    """Transcribe one utterance; words carry call-clock times."""
    t0 = time.perf_counter()
    ratio = None
    if confirm is not None and confirm.silero:
        ratio = silero_speech_ratio(utt.audio)
        if ratio < confirm.min_speech_ratio:
            return Transcription(
                text="",
                asr_ms=(time.perf_counter() - t0) * 1000,
                rejected=f"second opinion: Silero VAD found {ratio:.0%} speech",
                speech_ratio=ratio,
            )
    model = load_model(model_spec(asr))
    window = window_seconds(len(utt.audio) / SAMPLE_RATE, asr)
    with encoder_window(window):
        segments, _info = model.transcribe(
            utt.audio,
            language=asr.language,
            beam_size=asr.beam_size,
            word_timestamps=asr.word_timestamps,
            condition_on_previous_text=False,
            vad_filter=False,
            without_timestamps=True,
            initial_prompt=(
                asr.short_prompt
                if utt.duration_ms <= asr.short_max_ms and asr.short_prompt
                else None
            ),
            # Always explicit: faster-whisper keeps the last chunk_length on the shared model.
            chunk_length=window,
        )
        segments = list(segments)  # the generator does the work
    # With a short window Whisper's own no-speech check lets "you" through on silence; a segment
    # it thinks is probably not speech is dropped (speech peaked at 0.53, non-speech >= 0.93).
    heard_segments = [seg for seg in segments if seg.no_speech_prob <= asr.no_speech_max]
    dropped = len(segments) - len(heard_segments)
    segments, all_segments = heard_segments, segments
    words: list[Word] = []
    for seg in segments:
        for w in seg.words or ():
            words.append(
                Word(
                    text=w.word.strip(),
                    start_ms=utt.audio_start_ms + w.start * 1000.0,
                    end_ms=utt.audio_start_ms + w.end * 1000.0,
                    probability=float(w.probability),
                )
            )
    text, repeats = collapse_repetition(" ".join(seg.text.strip() for seg in segments).strip())
    if repeats > 1 and len(words) % repeats == 0:
        words = words[: len(words) // repeats]
    logprobs = [seg.avg_logprob for seg in segments]
    return Transcription(
        text=text,
        words=tuple(words),
        avg_logprob=float(np.mean(logprobs)) if logprobs else None,
        no_speech_prob=(
            float(max(seg.no_speech_prob for seg in all_segments)) if all_segments else None
        ),
        asr_ms=(time.perf_counter() - t0) * 1000,
        speech_ratio=ratio,
        dropped_segments=dropped,
    )


ASR_NICENESS = 10


def _lower_priority() -> None:
    """Run ASR below the event loop: live audio capture must never wait for the model.

    On Linux a thread's nice value is its own, and the model's compute threads, created from
    this thread when the model loads, inherit it.
    """
    with contextlib.suppress(AttributeError, OSError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), ASR_NICENESS)


_pool_lock = threading.Lock()
_shared_pool: ThreadPoolExecutor | None = None


def asr_pool() -> ThreadPoolExecutor:
    """The process's one ASR worker: concurrent calls queue for the model instead of fighting
    over the cores (CTranslate2 already uses cpu_threads per transcription)."""
    global _shared_pool
    with _pool_lock:
        if _shared_pool is None:
            _shared_pool = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="turnscope-asr", initializer=_lower_priority
            )
        return _shared_pool


@dataclass
class Transcriber:
    """Transcribes utterances on the process's ASR worker; ``await transcriber(utt)``."""

    asr: AsrSettings
    confirm: ConfirmSettings | None = None

    def warm_up(self) -> None:
        """Load the model now (on the ASR worker) so the first turn is not slowed by it."""
        asr_pool().submit(load_model, model_spec(self.asr)).result()

    async def __call__(self, utt: Utterance) -> Transcription:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            asr_pool(), transcribe_utterance, utt, self.asr, self.confirm
        )

    def close(self) -> None:
        """Nothing to release: the worker is shared by every call of the process."""
