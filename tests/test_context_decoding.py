"""Decoding an utterance after the same speaker's previous one: when it applies, that only the
new words come back (real model, real speech), and that word times stay on the call clock."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from tests.speech import SR, clip, ms
from turnscope.asr.context import context_for, wants_context
from turnscope.asr.events import Span, Utterance
from turnscope.asr.settings import load_settings
from turnscope.asr.text import after_prefix as _after_prefix
from turnscope.asr.text import repeats_context
from turnscope.asr.transcriber import Transcriber, Transcription

PAD = np.zeros(int(0.15 * SR), dtype=np.float32)


def _utt(index: int, start_ms: float, speech: np.ndarray, channel: str = "caller") -> Utterance:
    end_ms = start_ms + ms(speech)
    return Utterance(
        channel=channel,
        index=index,
        start_ms=start_ms,
        end_ms=end_ms,
        spans=(Span(start_ms, end_ms),),
        decided_ms=end_ms + 600,
        audio=np.concatenate([PAD, speech, PAD]),
        audio_start_ms=start_ms - 150,
    )


def _blank(index: int, start_ms: float, dur_ms: float, channel: str = "caller") -> Utterance:
    return _utt(index, start_ms, np.zeros(int(dur_ms * SR / 1000), np.float32), channel)


def test_context_only_from_a_short_close_previous_utterance_of_the_same_speaker():
    asr = load_settings().asr  # context_max_ms 4000, context_gap_ms 3000
    prev = _blank(0, 0, 2000)
    assert wants_context(prev, _blank(1, 4000, 1000), asr)  # 2 s after it
    assert not wants_context(prev, _blank(1, 5100, 1000), asr)  # 3.1 s after it
    assert not wants_context(_blank(0, 0, 4100), _blank(1, 4600, 1000), asr)  # too long
    assert not wants_context(prev, _blank(1, 2500, 4100), asr)  # this one too long
    assert not wants_context(prev, _blank(1, 2500, 150), asr)  # a blip: no-speech check applies
    assert not wants_context(prev, _blank(0, 2500, 1000, "agent"), asr)  # the other party
    assert not wants_context(None, prev, asr)
    off = load_settings(asr={"context_max_ms": 0}).asr
    assert not wants_context(prev, _blank(1, 2500, 1000), off)
    heard = Transcription(text="Hi, where is my order?")
    ctx = context_for(prev, heard, _blank(1, 2500, 1000), asr)
    assert ctx is not None and ctx.text == "Hi, where is my order?" and ctx.audio is prev.audio
    # Nothing heard (a hum with no words, or rejected as non-speech): no context.
    assert context_for(prev, Transcription(text=" "), _blank(1, 2500, 1000), asr) is None
    rejected = Transcription(text="x", rejected="second opinion")
    assert context_for(prev, rejected, _blank(1, 2500, 1000), asr) is None


@pytest.mark.parametrize(
    ("text", "prefix", "expected"),
    [
        ("Hi, where is my order? 7429.", "Hi, where is my order?", "7429."),
        ("wait, do I have to send it back?", "wait", "do I have to send it back?"),
        ("Great. Thank you.", "Great. Thank you.", ""),
        # Not expected from faster-whisper, but the previous words must never come back.
        ("hi where is my order 7429", "Hi, where is my order?", "7429"),
    ],
)
def test_after_prefix(text, prefix, expected):
    assert _after_prefix(text, prefix) == expected


@pytest.mark.parametrize(
    ("text", "context", "repeats"),
    [
        ("Please go on.", "Sorry, please go on.", True),  # a click heard as the turn's end again
        ("please, go on", "Sorry, please go on.", True),
        ("Sorry, please go on.", "Sorry, please go on.", True),
        ("Go on, please.", "Sorry, please go on.", False),
        ("Can I track it?", "Hi, where is my order?", False),
        ("", "Hi, where is my order?", False),
    ],
)
def test_repeats_context(text, context, repeats):
    assert repeats_context(text, context) is repeats


def test_decoding_after_context_returns_only_the_new_words():
    settings = load_settings(asr={"word_timestamps": True})
    first = clip("Hi, where is my order?")
    second = clip("Can I track it?")
    prev = _utt(0, 500, first)
    utt = _utt(1, prev.end_ms + 400, second)
    transcriber = Transcriber(settings.asr, settings.confirm)
    heard = asyncio.run(transcriber(prev))
    ctx = context_for(prev, heard, utt, settings.asr)
    assert ctx is not None
    out = asyncio.run(transcriber(utt, ctx))
    assert "order" not in out.text.lower(), out.text
    assert "track" in out.text.lower(), out.text
    assert out.context_ms == pytest.approx(ms(prev.audio))
    # Word times are this utterance's, on the call clock.
    assert out.words and "track" in " ".join(w.text.lower() for w in out.words)
    for w in out.words:
        assert utt.audio_start_ms - 1 <= w.start_ms <= w.end_ms <= utt.end_ms + 200, w
