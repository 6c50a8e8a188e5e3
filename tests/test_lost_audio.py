"""Where audio lost in transit fell, judged against the turns: a loss in a party's silence
leaves the evidence whole; one at a boundary, a share of a turn, or a stretch that could hide
an utterance degrades it (turnscope/lost_audio.py). The live calls are in test_live_calls."""

from __future__ import annotations

from turnscope.asr.assembly import Turn
from turnscope.capture.source import LostAudio
from turnscope.lost_audio import LossNote, lost_audio_findings

HIDE_MS = 80.0
TURNS = [
    Turn("agent", 1000.0, 3000.0, "hello there", False),
    Turn("caller", 3500.0, 4500.0, "hi", False),
    Turn("agent", 5000.0, 6000.0, "how can I help", False),
]


def _lost(*stretches: tuple[float, float]) -> list[LostAudio]:
    return [LostAudio("agent", s, s + ms, ms) for s, ms in stretches]


def _codes(lost: list[LostAudio]) -> list[LossNote]:
    return [n.code for n in lost_audio_findings(lost, TURNS, HIDE_MS).notes]


def test_loss_in_the_agents_silence_or_mid_turn_leaves_the_evidence_whole():
    # between turns (the caller speaking over it is not the agent's), and two packets mid-reply
    assert _codes(_lost((3600, 20), (4200, 40), (2000, 20), (2400, 20))) == []


def test_loss_at_a_boundary_degrades_naming_the_turn():
    found = lost_audio_findings(_lost((980, 20), (6030, 20)), TURNS, HIDE_MS)
    (note,) = found.notes
    assert note.code is LossNote.IN_TURNS
    assert "2 of its 2 turns" in note.message
    assert "#0 at 1.0 s: at its start" in note.message and "#2 at 5.0 s: at its end" in note.message


def test_a_share_of_a_turn_or_a_long_stretch_in_it_degrades():
    every_7th = _lost(*[(5100 + 140 * k, 20) for k in range(6)])  # 12% of the 1 s reply
    (note,) = lost_audio_findings(every_7th, TURNS, HIDE_MS).notes
    assert note.code is LossNote.IN_TURNS and "12% of its audio" in note.message
    (note,) = lost_audio_findings(_lost((2000, 100)), TURNS, HIDE_MS).notes
    assert "100 ms at once" in note.message


def test_a_stretch_between_turns_that_could_hide_an_utterance_degrades():
    (note,) = lost_audio_findings(_lost((4000, 100), (4400, 40)), TURNS, HIDE_MS).notes
    assert note.code is LossNote.COULD_HIDE_SPEECH
    assert "4.0 s (100 ms)" in note.message and "4.4 s" not in note.message


def test_the_index_finds_what_a_scan_finds():
    """LostIndex.between (bisection over stretches that never overlap) against a plain scan."""
    import random

    from turnscope.capture.source import LostIndex

    rng = random.Random(3)
    lost, at = [], 0.0
    for _ in range(300):
        at += rng.choice([20.0, 40.0, 400.0, 1500.0])
        ms = rng.choice([20.0, 40.0, 100.0])
        lost.append(LostAudio("agent", at, at + ms, ms))
        at += ms
    index = LostIndex(reversed(lost))
    for _ in range(500):
        a = rng.uniform(-100, at + 100)
        b = a + rng.uniform(0, 3000)
        assert index.between(a, b) == [x for x in lost if x.start_ms < b and x.end_ms > a]
