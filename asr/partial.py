"""Partial transcripts of a speaker's running utterance: what it has said so far, for a caller
that reacts to words while the agent is still speaking (``barge_in_on``).

Latency-first, as a live turn is: greedy decoding (beam 1, no temperature fallback), word times
(they cost little here and say when a phrase was spoken), a fixed short encoder window. A
partial is never evidence: it goes to the caller, never into turns or the transcript.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turnscope.asr.decode import DecodedSegment, DecodeRequest, decode_batch, options
from turnscope.asr.model import load_whisper
from turnscope.asr.settings import AsrSettings
from turnscope.asr.text import collapse_repetition
from turnscope.asr.transcriber import model_spec
from turnscope.capture.frames import SAMPLE_RATE

# The running utterance's last this-much audio is decoded: tiny.en on 2 cores decodes 8 s in a
# 10 s window in ~240-360 ms greedy, words included (a 15 s window: ~380 ms for 8 s).
MAX_AUDIO_MS = 8000
# A 10 s window: 15 s made Whisper mishear 2 s of audio ("sure how every fun policy" for "sure,
# our refund policy"), 10 s did not, and costs a third less for 8 s.
WINDOW_S = 10
# Several calls' partials decode as one batch, each over its last 4 s in a 5 s window: 8 of them
# take ~510 ms on 2 cores where 8 s windows take ~950 ms (one alone: ~360 ms). A phrase is still
# found as early in 4 of the 5 test lines; a short window hears less context, so one call alone
# keeps the 8 s (benchmarks/partials.py).
BATCH_AUDIO_MS = 4000
BATCH_WINDOW_S = 5
# Speech says ~3 words (~4-5 tokens) a second; a partial stops at 8 tokens a second of audio. A
# greedy decode of a window cut mid-word can loop on a phrase to Whisper's 448-token limit, and a
# batch waits for its longest item: uncapped, 8 calls' partials sometimes took 6 s.
TOKENS_PER_S = 8


@dataclass(frozen=True, slots=True)
class PartialWord:
    text: str
    start_ms: float  # call clock
    end_ms: float


@dataclass(frozen=True)
class PartialRequest:
    """The running utterance's audio (16 kHz float32) with call time ``from_ms`` at its first
    sample and ``upto_ms`` at its end."""

    audio: np.ndarray
    from_ms: float
    upto_ms: float


@dataclass(frozen=True)
class PartialText:
    """What the running utterance's audio from ``from_ms`` to ``upto_ms`` decoded to."""

    text: str
    words: tuple[PartialWord, ...]
    from_ms: float
    upto_ms: float


def transcribe_partial(
    audio: np.ndarray, from_ms: float, upto_ms: float, asr: AsrSettings
) -> PartialText:
    """Decode ``audio`` (16 kHz float32, call time ``from_ms`` at its first sample) on the ASR
    worker: greedy, with word times on the call clock."""
    return transcribe_partials([PartialRequest(audio, from_ms, upto_ms)], asr)[0]


def transcribe_partials(requests: list[PartialRequest], asr: AsrSettings) -> list[PartialText]:
    """Decode several running utterances in one batch (one per call), each over its last
    ``MAX_AUDIO_MS`` alone or ``BATCH_AUDIO_MS`` in company."""
    audio_ms, window_s = (MAX_AUDIO_MS, WINDOW_S) if len(requests) == 1 else (
        BATCH_AUDIO_MS, BATCH_WINDOW_S)  # fmt: skip
    keep = audio_ms * SAMPLE_RATE // 1000
    trimmed = [(r.audio[-keep:], max(r.from_ms, r.upto_ms - audio_ms)) for r in requests]
    model = load_whisper(model_spec(asr))
    opts = options(asr.language, 1, (0.0,), True)
    opts.defaults["max_new_tokens"] = TOKENS_PER_S * audio_ms // 1000 + 4
    decoded = decode_batch(model, [DecodeRequest(a, window_s) for a, _ in trimmed], opts)
    pairs = zip(decoded, trimmed, requests, strict=True)
    return [
        _text(segments, from_ms, r.upto_ms, asr.no_speech_limit(len(a) * 1000 / SAMPLE_RATE))
        for segments, (a, from_ms), r in pairs
    ]


def _text(
    segments: list[DecodedSegment], from_ms: float, upto_ms: float, no_speech_limit: float
) -> PartialText:
    """The words of a decoded running utterance (segments over ``no_speech_limit`` dropped, as
    a final of that length drops them)."""
    kept = [s for s in segments if s.no_speech_prob <= no_speech_limit]
    text, _ = collapse_repetition(" ".join(s.text.strip() for s in kept).strip())
    words = tuple(
        PartialWord(w.word.strip(), from_ms + w.start * 1000.0, from_ms + w.end * 1000.0)
        for s in kept
        for w in s.words or ()
    )
    return PartialText(text, words, from_ms, upto_ms)
