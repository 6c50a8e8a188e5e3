"""Whisper's no-speech probability as the transcriber reads it: a short utterance (decoded with
the vocabulary prompt, where a click became "Okay." at 0.63) is held to ``no_speech_max``, a
longer one to ``no_speech_max_long`` (speech clipped 8x scored up to 0.62 there, and a whole
2 s agent turn vanished at 0.6; 3 s of non-speech decoded to "." at 0.94).

The real clipped call is tests/test_real_speech.py's ``clipped`` case; here the bounds alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from turnscope.asr.decode import DecodedSegment
from turnscope.asr.events import Utterance
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import _transcription

ASR = load_settings().asr


def _heard(duration_ms: float, no_speech_prob: float) -> str:
    utt = Utterance("agent", 0, 1000.0, 1000.0 + duration_ms, (), 0.0, np.zeros(16, np.float32))
    return _transcription(utt, None, [DecodedSegment(" Okay.", -0.6, no_speech_prob)], ASR).text


@pytest.mark.parametrize(
    ("duration_ms", "no_speech_prob", "kept"),
    [
        (400, 0.63, False),  # a click, heard through the prompt
        (ASR.short_max_ms, 0.55, True),
        (ASR.short_max_ms + 1, 0.62, True),  # clipped speech
        (3000, 0.94, False),  # seconds of noise
    ],
)
def test_a_segment_is_dropped_by_the_bound_for_its_utterances_length(
    duration_ms, no_speech_prob, kept
):
    assert ASR.no_speech_max < 0.62 < ASR.no_speech_max_long < 0.94
    assert (_heard(duration_ms, no_speech_prob) == "Okay.") is kept


@pytest.mark.parametrize(("window_ms", "kept"), [(400, False), (3000, True)])
def test_a_running_utterances_words_are_held_to_the_same_bound(window_ms, kept):
    """The caller's ear reads a running agent turn (asr/partial.py) by the rule its final
    transcript will follow: a long window's segment at 0.62 (clipped speech) is kept."""
    from turnscope.asr.partial import _text

    limit = ASR.no_speech_limit(window_ms)
    text = _text([DecodedSegment(" Okay.", -0.6, 0.62)], 0.0, float(window_ms), limit).text
    assert (text == "Okay.") is kept
