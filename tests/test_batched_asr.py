"""Batched decoding: the same texts as one utterance at a time, and as faster-whisper's own
``transcribe`` of the same window (real model, synthetic and recorded human speech)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from batching import utterances
from common import VOICE_PAIRS, build_corpus
from realspeech import build_real_corpus

from turnscope.asr.context import Context, wants_context
from turnscope.asr.events import Utterance
from turnscope.asr.model import load_whisper
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import (
    Job,
    Transcriber,
    model_spec,
    transcribe_batch,
    window_seconds,
)
from turnscope.capture.file.source import FileSource
from turnscope.pipeline import run_pipeline

SETTINGS = load_settings()


def _utterances(wav: Path) -> list[Utterance]:
    """What the pipeline's endpointers hand the transcriber for ``wav``."""
    return utterances(wav, SETTINGS)


@pytest.fixture(scope="module")
def calls(tmp_path_factory) -> list[Path]:
    corpus = tmp_path_factory.mktemp("corpus")
    synthetic = build_corpus(
        corpus,
        scenarios=["refund-call", "barge-ins"],
        conditions=["clean", "10dB", "phone"],
        voice_pairs=VOICE_PAIRS[:1],
    )
    real = [c for c in build_real_corpus(corpus, conditions=("recorded",))
            if c.source in ("clips-a", "pyannote")]  # fmt: skip
    return [c.wav for c in synthetic[::2]] + [c.wav for c in real]


@pytest.fixture(scope="module")
def singles(calls) -> tuple[list[Job], list]:
    """Every utterance with the context the pipeline gives it, each decoded alone."""
    jobs, out = [], []
    for wav in calls:
        last = {}
        for utt in _utterances(wav):
            prev = last.get(utt.channel)
            ctx = None
            if prev and wants_context(prev[0], utt, SETTINGS.asr) and prev[1].text.strip():
                ctx = Context(prev[0].audio, prev[1].text.strip())
            tr = transcribe_batch([(utt, ctx)], SETTINGS.asr, SETTINGS.confirm)[0]
            jobs.append((utt, ctx))
            out.append(tr)
            last[utt.channel] = (utt, tr)
    return jobs, out


def test_a_batch_decodes_every_utterance_as_it_decodes_alone(singles):
    jobs, alone = singles
    assert len(jobs) >= 25 and any(ctx for _, ctx in jobs)
    assert any(u.duration_ms <= SETTINGS.asr.short_max_ms for u, _ in jobs)  # prompted ones
    together = transcribe_batch(jobs, SETTINGS.asr, SETTINGS.confirm)
    assert {t.batch for t in together} == {len(jobs)}
    for one, both in zip(alone, together, strict=True):
        assert both.text == one.text
        assert both.avg_logprob == pytest.approx(one.avg_logprob, abs=1e-4)
        assert both.no_speech_prob == pytest.approx(one.no_speech_prob, abs=1e-4)
        assert both.context_ms == one.context_ms


def _faster_whisper(utt: Utterance, ctx: Context | None) -> str:
    """faster-whisper's own transcribe of the same window, prompt and prefix."""
    asr = SETTINGS.asr
    model = load_whisper(model_spec(asr))
    audio = utt.audio if ctx is None else np.concatenate([ctx.audio, utt.audio])
    window = window_seconds(len(audio) / 16000, asr)
    frames = window * 100
    encode = model.encode

    def windowed(features):  # the encoder sees the window, not 30 s, as in turnscope
        return encode(features[..., :frames])

    short = utt.duration_ms <= asr.short_max_ms and ctx is None
    model.encode = windowed
    try:
        segments, _ = model.transcribe(
            audio.astype(np.float32), language=asr.language, beam_size=asr.beam_size,
            condition_on_previous_text=False, vad_filter=False, without_timestamps=True,
            initial_prompt=asr.short_prompt if short else None,
            prefix=ctx.text if ctx else None, chunk_length=window,
            temperature=list(asr.temperature),
        )  # fmt: skip
        return " ".join(s.text.strip() for s in segments if s.no_speech_prob <= asr.no_speech_max)
    finally:
        del model.encode


def test_the_decoding_is_faster_whispers_own(singles):
    from turnscope.asr.text import after_prefix, collapse_repetition, collapse_runs

    jobs, alone = singles
    picked = [k for k, (_, ctx) in enumerate(jobs) if ctx][:3] + list(range(0, len(jobs), 4))
    for k in picked:
        utt, ctx = jobs[k]
        text = _faster_whisper(utt, ctx)
        if ctx is not None and text:
            text = after_prefix(text, ctx.text)
        text = collapse_runs(collapse_repetition(text)[0])[0]
        if ctx is not None and alone[k].context_ms == 0:
            continue  # decoded again alone (it only repeated its context)
        assert alone[k].text == text, (utt.key, ctx.text if ctx else None)


def test_an_utterance_longer_than_a_window_is_decoded_in_windows(calls):
    wav = next(w for w in calls if "pyannote" in w.parent.name)
    utts = [u for u in _utterances(wav) if u.channel == "caller"]
    gap = np.zeros(8000, np.float32)
    audio = np.concatenate([x for u in utts for x in (u.audio, gap)])
    while len(audio) < 32 * 16000:  # two windows
        audio = np.concatenate([audio, audio])
    long = Utterance("caller", 99, 0.0, len(audio) / 16, (), 0.0, audio)
    tr = transcribe_batch([(long, None), (utts[0], None)], SETTINGS.asr)[0]
    assert tr.text == _faster_whisper(long, None)
    assert len(tr.text.split()) > 60


def test_word_times_are_the_same_batched(singles):
    jobs, _ = singles
    asr = SETTINGS.asr.model_copy(update={"word_timestamps": True})
    some = [j for j in jobs if j[1] is None][:10]
    one = [transcribe_batch([j], asr)[0] for j in some]
    both = transcribe_batch(some, asr)
    for a, b in zip(one, both, strict=True):
        assert a.text == b.text and a.words
        assert [(w.text, round(w.start_ms), round(w.end_ms)) for w in a.words] == [
            (w.text, round(w.start_ms), round(w.end_ms)) for w in b.words
        ]


def test_a_fast_replay_batches_and_keeps_every_text(calls):
    batched = SETTINGS
    alone = SETTINGS.model_copy(update={"asr": SETTINGS.asr.model_copy(update={"batch_size": 1})})
    transcriber = Transcriber(batched.asr, batched.confirm)
    transcriber.warm_up()
    wav = calls[0]
    runs = [asyncio.run(run_pipeline(FileSource.stereo(wav, chunk_ms=200), s))
            for s in (alone, batched)]  # fmt: skip
    texts = [[(h.key, h.transcription.text) for h in r.heard] for r in runs]
    assert texts[0] == texts[1]
    assert {h.transcription.batch for h in runs[0].heard} == {1}
    assert max(h.transcription.batch for h in runs[1].heard) > 1
