"""Partial transcripts of a speaker's running utterance: what it has said so far, for a caller
that reacts to words while the agent is still speaking (``barge_in_on``).

Latency-first, as a live turn is: greedy decoding (beam 1, no temperature fallback), word times
(they cost little here and say when a phrase was spoken), a fixed short encoder window. A
partial is never evidence: it goes to the caller, never into turns or the transcript.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turnscope.asr.decode import DecodeRequest, decode_batch, options
from turnscope.asr.model import load_whisper
from turnscope.asr.settings import AsrSettings
from turnscope.asr.text import collapse_repetition
from turnscope.asr.transcriber import model_spec
from turnscope.capture.frames import SAMPLE_RATE

# The running utterance's last this-much audio is decoded: tiny.en on 2 cores decodes 8 s in a
# 10 s window in ~240 ms greedy, words included (2 s: ~160 ms; a 15 s window: ~380 ms for 8 s).
MAX_AUDIO_MS = 8000
# A 10 s window: 15 s made Whisper mishear 2 s of audio ("sure how every fun policy" for "sure,
# our refund policy"), 10 s did not, and costs a third less for 8 s.
WINDOW_S = 10


@dataclass(frozen=True, slots=True)
class PartialWord:
    text: str
    start_ms: float  # call clock
    end_ms: float


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
    model = load_whisper(model_spec(asr))
    opts = options(asr.language, 1, (0.0,), True)
    segments = decode_batch(model, [DecodeRequest(audio, WINDOW_S)], opts)[0]
    kept = [s for s in segments if s.no_speech_prob <= asr.no_speech_max]
    text, _ = collapse_repetition(" ".join(s.text.strip() for s in kept).strip())
    words = tuple(
        PartialWord(w.word.strip(), from_ms + w.start * 1000.0, from_ms + w.end * 1000.0)
        for s in kept
        for w in s.words or ()
    )
    return PartialText(text, words, from_ms, upto_ms)


def max_samples() -> int:
    return MAX_AUDIO_MS * SAMPLE_RATE // 1000
