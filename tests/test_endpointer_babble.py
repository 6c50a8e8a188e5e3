"""The endpointer on a caller's lines over six-talker babble: the bed's nearer talkers are
background, not the caller (a span that never rises over the background's loud end)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.speech import SR, clip
from tests.test_endpointer import SETTINGS, run
from turnscope.actors.caller import acoustics
from turnscope.actors.caller.acoustic_keys import Acoustics
from turnscope.asr.events import EndOfTurn, SpeechStart

LINES = [
    "Hi, I bought headphones last week and they stopped working.",
    "Yes, the order number is four four seven two.",
    "Do I have to send the headphones back?",
    "Okay, thank you.",
    "Can I get a refund instead of a replacement?",
    "No, that is all. Goodbye.",
]
GAP = round(2.5 * SR)  # the pause between lines: where the babble alone is heard


def _on_babble(snr_db: float) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """The lines on one caller channel over babble at ``snr_db``, as a live caller sends them
    (actors/caller/acoustics.py's bed), and each line's (start, end) in ms."""
    clips = [clip(t) for t in LINES]
    a = Acoustics(noise="babble", snr_db=snr_db, seed=11)
    bed = acoustics.Bed(acoustics.bed_loop(a, acoustics.speech_level(clips), SR), None, SR)
    total = sum(c.size for c in clips) + GAP * (len(clips) + 1)
    total += -total % 320
    speech = np.zeros(total, np.float32)
    truth, pos = [], GAP
    for c in clips:
        speech[pos : pos + c.size] = c
        truth.append((pos * 1000 / SR, (pos + c.size) * 1000 / SR))
        pos += c.size + GAP
    pcm = np.round(np.clip(speech, -1, 1) * 32767).astype(np.int16)
    mixed = np.concatenate([bed.mix(pcm[k : k + 320], k) for k in range(0, total, 320)])
    return mixed, truth


@pytest.fixture(scope="module")
def babble_call():
    return _on_babble(15.0)


def _errors(utts, truth):
    """Per line, the one utterance over it and its edges' errors (ms); utterances over no line."""
    over = [[u for u in utts if u.start_ms < e and u.end_ms > s] for s, e in truth]
    extra = [u for u in utts if not any(u.start_ms < e and u.end_ms > s for s, e in truth)]
    return over, extra


def test_babble_between_lines_is_no_turn_and_bridges_none(babble_call):
    pcm, truth = babble_call
    utts = [e.utterance for e in run(pcm, channel="caller") if isinstance(e, EndOfTurn)]
    over, extra = _errors(utts, truth)
    # Before the rule: three of the six lines started 520-640 ms early and two ended over 1 s
    # late (a babble burst opened the turn, or kept it open, and the line joined it).
    assert not extra, [(round(u.start_ms), round(u.end_ms)) for u in extra]
    assert all(len(hits) == 1 for hits in over), "a line missed or split"
    assert len({id(h[0]) for h in over}) == len(truth), "two lines bridged into one turn"
    edges = [abs(h[0].start_ms - s) for h, (s, _) in zip(over, truth, strict=True)]
    edges += [abs(h[0].end_ms - e) for h, (_, e) in zip(over, truth, strict=True)]
    # The babble's talkers still touch some edges (a listener loses the quiet ends too).
    assert np.median(edges) <= 40 and max(edges) <= 300, sorted(round(x) for x in edges)


def test_the_rule_changes_nothing_on_a_quiet_line():
    """The rule reads the background's loud end: with the babble 60 dB under the caller it
    never drops a span, so every event is as it was without it."""
    pcm, _ = _on_babble(60.0)
    vad = SETTINGS.vad.model_copy(update={"span_over_background_db": 0})
    off = SETTINGS.model_copy(update={"vad": vad})
    on_events = run(pcm, channel="caller")
    off_events = run(pcm, settings=off, channel="caller")
    assert [type(e) for e in on_events] == [type(e) for e in off_events]
    ends = [e.utterance.end_ms for e in on_events if isinstance(e, EndOfTurn)]
    assert ends == [e.utterance.end_ms for e in off_events if isinstance(e, EndOfTurn)]
    assert sum(isinstance(e, SpeechStart) for e in on_events) >= len(LINES)
