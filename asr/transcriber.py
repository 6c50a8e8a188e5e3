"""Transcription of finished utterances with faster-whisper, off the event loop.

``transcribe_utterance`` is a plain function (testable without asyncio); ``Transcriber`` runs it
in a single worker process so audio capture and endpointing never wait for the model. One worker
is enough: CTranslate2 already uses ``cpu_threads`` cores per call, and a queue keeps order.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import multiprocessing
import os
import re
import signal
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from turnscope.asr.events import Utterance
from turnscope.asr.model import ModelSpec, encoder_window, load_model
from turnscope.asr.settings import AsrSettings, ConfirmSettings
from turnscope.capture.frames import SAMPLE_RATE
from turnscope.errors import EnvironmentProblem

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
    asr_ms: float = 0.0  # compute time
    rejected: str | None = None  # why the utterance was judged not to be speech, if it was
    speech_ratio: float | None = None  # Silero's share of speech, when the second opinion ran
    dropped_segments: int = 0  # Whisper segments dropped as probably not speech
    context_ms: float = 0.0  # audio of the speaker's previous utterance decoded in front of it

    @property
    def confidence(self) -> float | None:
        """Mean word probability, when words are known."""
        if not self.words:
            return None
        return float(np.mean([w.probability for w in self.words]))


@dataclass(frozen=True)
class Context:
    """What Whisper hears just before an utterance: the speaker's previous utterance, its
    audio (with padding) and the text it was transcribed as."""

    audio: np.ndarray
    text: str


def wants_context(previous: Utterance | None, utt: Utterance, asr: AsrSettings) -> bool:
    """Whether ``utt`` is decoded after the same speaker's ``previous`` utterance: when both are
    short (at most ``context_max_ms``), close (at most ``context_gap_ms`` apart) and ``utt`` is at
    least ``context_min_ms`` long. Times only, so replay and live calls, fast or paced, decode
    every utterance the same way.

    A blip shorter than that is decoded alone: after a forced prefix Whisper's no-speech check no
    longer applies (the context is speech), and it heard a 95 ms click at 10 dB SNR as the end
    of the previous turn again ("Sorry, please go on." ... "Please go on.").

    Long utterances are decoded alone: they carry their own context, and after a forced prefix
    Whisper tiny sometimes ends a long window early (measured: a 12 s agent turn decoded as its
    first two words)."""
    return (
        previous is not None
        and asr.context_max_ms > 0
        and previous.channel == utt.channel
        and previous.duration_ms <= asr.context_max_ms
        and asr.context_min_ms <= utt.duration_ms <= asr.context_max_ms
        and utt.start_ms - previous.end_ms <= asr.context_gap_ms
    )


def context_for(
    previous: Utterance | None, heard: Transcription, utt: Utterance, asr: AsrSettings
) -> Context | None:
    """The context of ``utt`` (``wants_context``), if ``previous`` was heard as words."""
    if previous is None or not wants_context(previous, utt, asr):
        return None
    if heard.rejected or not heard.text.strip():
        return None
    return Context(previous.audio, heard.text.strip())


def _after_prefix(text: str, prefix: str) -> str:
    """Whisper's output for a window decoded after ``prefix`` without the prefix (faster-whisper
    returns the forced prefix tokens with the new ones)."""
    text, prefix = text.strip(), prefix.strip()
    if text.startswith(prefix):
        rest = text[len(prefix) :]
    else:  # not expected (the tokenizer round-trips), but never keep the previous turn's words
        rest = " ".join(text.split()[len(prefix.split()) :])
    return rest.lstrip(" ,.;:!?-")


def repeats_context(text: str, context: str) -> bool:
    """Whether ``text`` only says the end of ``context`` again (Whisper, forced to start with the
    previous turn, repeating its last words instead of hearing new ones)."""
    new, old = _norm_words(text), _norm_words(context)
    return bool(new) and len(new) <= len(old) and old[-len(new) :] == new


def _norm_words(text: str) -> list[str]:
    return [w for w in (re.sub(r"[^\w']", "", t.lower()) for t in text.split()) if w]


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


_LOOP_RUN = 5  # a one- or two-word unit said this many times in a row is a decoder loop


def collapse_runs(text: str) -> tuple[str, list[int]]:
    """``text`` with decoder loops inside it cut to one unit ("Yes, no, no, no, no, no, no, no."
    -> "Yes, no."), and the indices of the words kept.

    Whisper tiny loops like this on noisy speech (at 10 dB SNR: 8 of an agent turn's 9 words);
    a person saying the same word five times in a row is rarer. Shorter runs ("no no no",
    "yeah yeah yeah yeah") are left alone.
    """
    words = text.split()
    norm = [re.sub(r"\W", "", w.lower()) for w in words]
    kept: list[int] = []
    i = 0
    while i < len(words):
        for unit in (1, 2):
            run = 1
            while norm[i : i + unit] == norm[i + run * unit : i + (run + 1) * unit]:
                run += 1
            if run >= _LOOP_RUN and all(norm[i : i + unit]):
                kept += range(i + (run - 1) * unit, i + run * unit)  # the last: its punctuation
                i += run * unit
                break
        else:
            kept.append(i)
            i += 1
    if len(kept) == len(words):
        return text, kept
    return " ".join(words[k] for k in kept), kept


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
    utt: Utterance,
    asr: AsrSettings,
    confirm: ConfirmSettings | None = None,
    context: Context | None = None,
) -> Transcription:
    """Transcribe one utterance; words carry call-clock times.

    With a ``context`` (``context_for``), Whisper hears the previous utterance's audio in front
    of this one and is forced to start with its text, so it decodes only the new words, as a
    continuation of what this speaker said (as when it transcribes a whole recording). When all
    it says then is the end of the context again, the utterance is decoded alone."""
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
    out = _decode(model, utt, asr, context)
    if context is not None and repeats_context(out.text, context.text):
        out = _decode(model, utt, asr, None)
    return replace(out, asr_ms=(time.perf_counter() - t0) * 1000, speech_ratio=ratio)


def _decode(
    model: WhisperModel, utt: Utterance, asr: AsrSettings, context: Context | None
) -> Transcription:
    """One decoding of ``utt``, after ``context`` when given; words on the call clock."""
    audio, lead_ms = utt.audio, 0.0
    if context is not None:
        audio = np.concatenate([context.audio, utt.audio]).astype(np.float32, copy=False)
        lead_ms = len(context.audio) * 1000.0 / SAMPLE_RATE
    window = window_seconds(len(audio) / SAMPLE_RATE, asr)
    short = utt.duration_ms <= asr.short_max_ms and asr.short_prompt
    with encoder_window(window):
        segments, _info = model.transcribe(
            audio,
            language=asr.language,
            beam_size=asr.beam_size,
            word_timestamps=asr.word_timestamps,
            condition_on_previous_text=False,
            vad_filter=False,
            without_timestamps=True,
            initial_prompt=asr.short_prompt if short and context is None else None,
            prefix=context.text if context is not None else None,
            # Always explicit: faster-whisper keeps the last chunk_length on the shared model.
            chunk_length=window,
            temperature=list(asr.temperature),
        )
        segments = list(segments)  # the generator does the work
    # With a short window Whisper's own no-speech check lets "you" through on silence; a segment
    # it thinks is probably not speech is dropped (speech peaked at 0.53, non-speech >= 0.93).
    heard_segments = [seg for seg in segments if seg.no_speech_prob <= asr.no_speech_max]
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
        joined = _after_prefix(joined, context.text)
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


ASR_NICENESS = 19


def _asr_process_init() -> None:
    """The ASR process runs below the live call and leaves Ctrl-C to its parent (which ends
    the call cleanly and still needs the model for the turns already captured).

    SCHED_IDLE where Linux offers it: a waking event loop then preempts the model at once (with
    nice 19 alone, 8 concurrent calls still sent twice as many frames late); the model's
    threads, created later from this one, inherit it.
    """
    with contextlib.suppress(AttributeError, OSError):
        os.nice(ASR_NICENESS)
    with contextlib.suppress(AttributeError, OSError):
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """A worker whose parent was killed (SIGKILL, a timeout) must not live on, model loaded."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _load(spec: ModelSpec) -> None:
    load_model(spec)  # in the ASR process; the model itself never crosses back


_pool_lock = threading.Lock()
_shared_pool: ProcessPoolExecutor | None = None


def asr_pool() -> ProcessPoolExecutor:
    """The process's one ASR worker, a separate process: concurrent calls queue for the model
    instead of fighting over the cores (CTranslate2 already uses cpu_threads per transcription).

    A process, not a thread: faster-whisper runs Python between the model's calls, and a
    low-priority thread holding the GIL stalls the event loop whenever the machine is busy
    (measured: 8 concurrent live calls on 2 cores sent caller audio up to 6.6 s late with a
    niced ASR thread; the GIL is only the live loop's now).
    """
    global _shared_pool
    with _pool_lock:
        if _shared_pool is None:
            _shared_pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),  # no fork of a threaded process
                initializer=_asr_process_init,
            )
        return _shared_pool


_loaded: set[ModelSpec] = set()  # models the current ASR process has loaded


def _reset_broken_pool(pool: ProcessPoolExecutor) -> None:
    global _shared_pool
    with _pool_lock:
        if _shared_pool is pool:
            _shared_pool = None
            _loaded.clear()
    pool.shutdown(wait=False, cancel_futures=True)


def _on_worker(fn, *args) -> tuple[ProcessPoolExecutor, Future]:  # type: ignore[no-untyped-def]
    """Submit to the ASR process; one that died (killed, out of memory) is replaced, and the
    work it lost is one clear error (``_worker_errors``), not a traceback."""
    pool = asr_pool()
    try:
        return pool, pool.submit(fn, *args)
    except BrokenProcessPool:
        _reset_broken_pool(pool)
        pool = asr_pool()
        return pool, pool.submit(fn, *args)


@contextlib.contextmanager
def _worker_errors(pool: ProcessPoolExecutor) -> Iterator[None]:
    """A worker that died under ``pool`` (killed, out of memory): the pool is dropped, so the
    next submit starts a new one, and the loss is one clear error."""
    try:
        yield
    except BrokenProcessPool as exc:
        _reset_broken_pool(pool)
        raise EnvironmentProblem(
            f"the ASR worker process died ({exc}); out of memory? "
            "Fewer concurrent calls or a smaller --threads may help"
        ) from None


def _usage() -> tuple[float, float]:
    import resource

    return time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def asr_process_usage() -> tuple[float, float]:
    """The ASR process's CPU time so far (s, all its threads) and peak RSS (MB); benchmarks."""
    _pool, future = _on_worker(_usage)
    return future.result()


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
        pool, future = _on_worker(_load, spec)
        with _worker_errors(pool):
            future.result()
        _loaded.add(spec)

    async def ready(self) -> None:
        """``warm_up`` for the event loop: awaits the load without holding a thread (a load
        queues behind other calls' transcriptions, which may take seconds on a busy machine)."""
        spec = model_spec(self.asr)
        if spec in _loaded:
            return
        pool, future = _on_worker(_load, spec)
        with _worker_errors(pool):
            await asyncio.wrap_future(future)
        _loaded.add(spec)

    async def __call__(self, utt: Utterance, context: Context | None = None) -> Transcription:
        pool, future = _on_worker(transcribe_utterance, utt, self.asr, self.confirm, context)
        with _worker_errors(pool):
            return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Nothing to release: the worker is shared by every call of the process."""
