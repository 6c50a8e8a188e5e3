"""A turn is final (the live view prints it) about a merge gap after it ends, not once the
answer to it has ended too: paced as a live call is, real audio and the real model."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT
from turnscope.asr.settings import load_settings
from turnscope.capture.file.source import FileSource
from turnscope.capture.frames import AGENT, CALLER, PcmFrame
from turnscope.pipeline import Sink, TurnUpdate, run_pipeline

SAMPLE = ROOT / "recordings" / "refund-call.wav"


class _Finals(Sink):
    """The stream's position when each turn became final."""

    def __init__(self) -> None:
        self.position_ms = 0.0
        self.final: list[tuple[str, float, float]] = []  # speaker, end_ms, final at

    def on_frame(self, frame: PcmFrame) -> None:
        self.position_ms = max(self.position_ms, frame.end_ms)

    def on_update(self, update: TurnUpdate) -> None:
        self.final += [(t.speaker, t.end_ms, self.position_ms) for t in update.new_final]


# Paced in real time, the text's way back from the model is bounded (150 ms): alone, after the
# rest, as the project's other timing-bound tests run.
@pytest.mark.solo
def test_a_callers_line_is_final_before_the_long_answer_to_it_ends(tmp_path):
    """The recording's caller line (4.9-9.1 s) and the agent's 6.5 s answer 0.4 s after it:
    the line is final a merge gap after its end, while the answer is still being spoken."""
    audio, rate = sf.read(SAMPLE, dtype="float32")
    part = np.array(audio[int(4.5 * rate) : int(16.2 * rate)])  # ends before "Yes, go ahead"
    part[int(11.1 * rate) :, 0] = 0  # the caller's "wait" (15.7 s) left out: one answer
    path = tmp_path / "line-and-answer.wav"
    sf.write(path, part, rate)
    settings = load_settings()
    finals = _Finals()
    result = asyncio.run(run_pipeline(FileSource.stereo(path, realtime=True), settings, [finals]))
    turns = result.assembly.turns
    assert [t.speaker for t in turns] == [CALLER, AGENT], turns
    line, answer = turns
    speaker, end_ms, final_at = finals.final[0]
    assert (speaker, end_ms) == (CALLER, line.end_ms)
    gap = settings.assembly.merge_gap_ms
    # Final once the gap has passed and its text is in, whichever is later (the decode's own
    # time is the machine's: 660 ms alone once, 490 ms more beside the suite's other calls).
    text_in = line.decided_ms + line.asr_ms
    assert line.end_ms + gap <= final_at <= max(line.end_ms + gap, text_in) + 150, (final_at, line)
    assert final_at < answer.end_ms - 3000  # printed while the answer was being spoken
