"""Whisper decoding of many utterances in one CTranslate2 batch.

What ``WhisperModel.transcribe`` does for an utterance without timestamps (its log-mel features,
one encoder window per 30 s, the prompt, beam search with temperature fallback, the no-speech
skip, optional word times), done for a list of utterances at once: windows of the same length
whose start-of-transcript token sits at the same prompt position are encoded and decoded as one
batch. CTranslate2 decodes each item of a batch on its own, so an utterance's tokens and scores
do not depend on what it was batched with (``tests/test_batched_asr.py`` compares them); the
batch only shares the matrix work, which for tiny.en's beam search is most of the cost.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from faster_whisper import WhisperModel
    from faster_whisper.tokenizer import Tokenizer

MAX_WINDOW_S = 30  # Whisper's own input length
FRAMES_PER_SECOND = 100  # log-mel frames
CPU_ENCODE_BATCH = 2


@dataclass(frozen=True)
class DecodeRequest:
    """One utterance to decode: 16 kHz audio, the encoder window (s) its chunks are padded to,
    an initial prompt (text heard before it) and a prefix (text it must start with)."""

    audio: np.ndarray
    window_s: int
    initial_prompt: str | None = None
    prefix: str | None = None


@dataclass(frozen=True)
class DecodedWord:
    word: str  # with Whisper's leading space
    start: float  # s from the start of the request's audio
    end: float
    probability: float


@dataclass(frozen=True)
class DecodedSegment:
    """One window's text (faster-whisper's Segment, as far as turnscope reads it)."""

    text: str
    avg_logprob: float
    no_speech_prob: float
    words: tuple[DecodedWord, ...] | None = None


@dataclass(frozen=True)
class Options:
    """faster-whisper's transcription options for the decoding turnscope asks for."""

    language: str
    beam_size: int
    temperatures: tuple[float, ...]
    word_timestamps: bool
    defaults: dict[str, Any] = field(default_factory=dict)

    def __getattr__(self, name: str) -> Any:  # the rest as faster-whisper's own defaults
        try:
            return self.__dict__["defaults"][name]
        except KeyError:
            raise AttributeError(name) from None


@cache
def _transcribe_defaults() -> tuple[tuple[str, Any], ...]:
    """``WhisperModel.transcribe``'s keyword defaults, read from its signature, so a new
    faster-whisper's thresholds apply here too."""
    from faster_whisper import WhisperModel

    params = inspect.signature(WhisperModel.transcribe).parameters.values()
    return tuple((p.name, p.default) for p in params if p.default is not inspect.Parameter.empty)


def options(language: str, beam_size: int, temperatures: Sequence[float],
            word_timestamps: bool) -> Options:  # fmt: skip
    return Options(language, beam_size, tuple(temperatures), word_timestamps,
                   dict(_transcribe_defaults()))  # fmt: skip


@dataclass(eq=False)
class _Window:
    """One encoder window of one request."""

    request: int
    features: np.ndarray  # (mels, window frames)
    prompt: list[int]
    offset_s: float
    size: int  # content frames
    sot_at: int
    result: Any = None
    avg_logprob: float = 0.0
    encoded: Any = None  # the encoder output of its group, and how many windows that holds
    group_size: int = 0


def _tokenizer(model: WhisperModel, language: str) -> Tokenizer:
    from faster_whisper.tokenizer import Tokenizer

    return Tokenizer(
        model.hf_tokenizer, model.model.is_multilingual, task="transcribe", language=language
    )


def _windows(model: WhisperModel, k: int, req: DecodeRequest, tok: Tokenizer) -> list[_Window]:
    """The request's encoder windows, as ``transcribe`` cuts them without timestamps: its
    features padded to ``window_s``, one window per ``window_s`` of audio."""
    from faster_whisper.audio import pad_or_trim

    frames = req.window_s * FRAMES_PER_SECOND
    features = model.feature_extractor(req.audio, chunk_length=req.window_s)
    content = features.shape[-1] - 1
    previous: list[int] = []
    if req.initial_prompt is not None:
        previous = tok.encode(" " + req.initial_prompt.strip())
    out = []
    for seek in range(0, content, frames):
        size = min(frames, content - seek)
        prompt = model.get_prompt(tok, previous if seek == 0 else [], without_timestamps=True,
                                  prefix=req.prefix if seek == 0 else None)  # fmt: skip
        chunk = pad_or_trim(features[:, seek : seek + size], frames)
        out.append(_Window(k, chunk, prompt, seek / FRAMES_PER_SECOND, size,
                           prompt.index(tok.sot)))  # fmt: skip
    return out


def _generate(model: WhisperModel, windows: list[_Window], opts: Options, tok: Tokenizer,
              suppress: list[int]) -> None:  # fmt: skip
    """Beam search (then the fallback temperatures) for windows of one length and prompt
    layout, in one batch; each window keeps the first result that needs no fallback, else the
    best, as ``generate_with_fallback`` chooses."""
    from faster_whisper.transcribe import get_compression_ratio

    encoded = _encode(model, windows)
    for w in windows:
        w.encoded, w.group_size = encoded, len(windows)
    todo = list(range(len(windows)))
    tried: dict[int, list[tuple[Any, float, bool]]] = {i: [] for i in todo}  # result, avg, cr ok
    for temperature in opts.temperatures:
        if not todo:
            break
        if temperature > 0:
            kwargs = {"beam_size": 1, "num_hypotheses": opts.best_of, "sampling_topk": 0,
                      "sampling_temperature": temperature}  # fmt: skip
        else:
            kwargs = {"beam_size": opts.beam_size, "patience": opts.patience}
        enc = encoded if len(todo) == len(windows) else _encode(model, [windows[i] for i in todo])
        max_len = model.max_length
        if opts.max_new_tokens is not None:
            max_len = max(len(windows[i].prompt) for i in todo) + opts.max_new_tokens
        results = model.model.generate(
            enc,
            [windows[i].prompt for i in todo],
            length_penalty=opts.length_penalty,
            repetition_penalty=opts.repetition_penalty,
            no_repeat_ngram_size=opts.no_repeat_ngram_size,
            max_length=max_len,
            return_scores=True,
            return_no_speech_prob=True,
            suppress_blank=opts.suppress_blank,
            suppress_tokens=suppress,
            max_initial_timestamp_index=round(opts.max_initial_timestamp / model.time_precision),
            **kwargs,
        )
        again = []
        for i, result in zip(todo, results, strict=True):
            tokens = result.sequences_ids[0]
            avg = result.scores[0] * (len(tokens) ** opts.length_penalty) / (len(tokens) + 1)
            ratio = get_compression_ratio(tok.decode(tokens).strip())
            fallback = False
            cr_ok = True
            if opts.compression_ratio_threshold is not None:
                cr_ok = ratio <= opts.compression_ratio_threshold
                fallback = not cr_ok
            low = opts.log_prob_threshold is not None and avg < opts.log_prob_threshold
            fallback = fallback or low
            silent = opts.no_speech_threshold is not None and (
                result.no_speech_prob > opts.no_speech_threshold and low
            )
            tried[i].append((result, avg, cr_ok))
            if fallback and not silent:
                again.append(i)
            else:
                windows[i].result, windows[i].avg_logprob = result, avg
        todo = again
    for i in todo:  # every temperature failed: the best below the ratio threshold, else any
        pool = [t for t in tried[i] if t[2]] or tried[i]
        best = max(pool, key=lambda t: t[1])
        windows[i].result, windows[i].avg_logprob = best[0], best[1]


def _encode(model: WhisperModel, windows: Sequence[_Window]) -> Any:
    """The encoder output of ``windows`` (one length), for one decoding batch. On a CPU the
    encoder runs ``CPU_ENCODE_BATCH`` windows at a time: larger batches of long windows cost
    more per window there (their attention no longer fits the caches; benchmarks/batching.py)."""
    import ctranslate2

    def run(ws: Sequence[_Window]) -> Any:
        batch = np.ascontiguousarray(np.stack([w.features for w in ws]))
        return model.model.encode(ctranslate2.StorageView.from_array(batch), to_cpu=False)

    if model.model.device != "cpu" or len(windows) <= CPU_ENCODE_BATCH:
        return run(windows)
    parts = [np.asarray(run(windows[i : i + CPU_ENCODE_BATCH]))
             for i in range(0, len(windows), CPU_ENCODE_BATCH)]  # fmt: skip
    return ctranslate2.StorageView.from_array(np.ascontiguousarray(np.concatenate(parts)))


def _words(model: WhisperModel, windows: list[_Window], tok: Tokenizer,
           opts: Options) -> dict[int, tuple[DecodedWord, ...]]:  # fmt: skip
    """Word times for kept windows, aligned in one batch per encoder group."""
    out: dict[int, tuple[DecodedWord, ...]] = {}
    groups: dict[int, list[int]] = {}
    for k, w in enumerate(windows):
        groups.setdefault(id(w.encoded), []).append(k)
    for members in groups.values():
        first = windows[members[0]]
        kept_all = len(members) == first.group_size  # in order: the encoding can be reused
        enc = first.encoded if kept_all else _encode(model, [windows[k] for k in members])
        segs = [[{"seek": round(windows[k].offset_s * FRAMES_PER_SECOND),
                  "start": windows[k].offset_s,
                  "end": windows[k].offset_s + windows[k].size / FRAMES_PER_SECOND,
                  "tokens": windows[k].result.sequences_ids[0]}] for k in members]  # fmt: skip
        model.add_word_timestamps(segs, tok, enc, [windows[k].size for k in members],
                                  opts.prepend_punctuations, opts.append_punctuations,
                                  last_speech_timestamp=0.0)  # fmt: skip
        for k, seg in zip(members, segs, strict=True):
            out[k] = tuple(
                DecodedWord(w["word"], w["start"], w["end"], float(w["probability"]))
                for w in seg[0].get("words", ())
            )
    return out


def decode_batch(
    model: WhisperModel, requests: Sequence[DecodeRequest], opts: Options
) -> list[list[DecodedSegment]]:
    """Each request's segments (one per window that was not skipped as no speech), decoded
    in as few batches as the windows' lengths and prompt layouts allow."""
    from faster_whisper.transcribe import get_suppressed_tokens

    tok = _tokenizer(model, opts.language)
    suppress = get_suppressed_tokens(tok, opts.suppress_tokens) if opts.suppress_tokens else []
    windows = [w for k, req in enumerate(requests) for w in _windows(model, k, req, tok)]
    groups: dict[tuple[int, int], list[_Window]] = {}
    for w in windows:
        groups.setdefault((w.features.shape[-1], w.sot_at), []).append(w)
    for group in groups.values():
        _generate(model, group, opts, tok, suppress)
    kept = [w for w in windows if not _skipped(w, opts)]
    words = _words(model, kept, tok, opts) if opts.word_timestamps and kept else {}
    out: list[list[DecodedSegment]] = [[] for _ in requests]
    for k, w in enumerate(kept):
        text = tok.decode(w.result.sequences_ids[0])
        if not text.strip():
            continue
        out[w.request].append(
            DecodedSegment(text, w.avg_logprob, w.result.no_speech_prob, words.get(k))
        )
    return out


def _skipped(w: _Window, opts: Options) -> bool:
    """faster-whisper's no-speech skip: likely silence, unless the log probability is high."""
    if opts.no_speech_threshold is None or w.result.no_speech_prob <= opts.no_speech_threshold:
        return False
    return not (opts.log_prob_threshold is not None and w.avg_logprob > opts.log_prob_threshold)
