"""An utterance's spans at turn close: refined against its own room tone when it is a recording
played into silence (``stretch``), else against the channel's background (``refine``); spans
left empty dropped, and a lone short last span well after the speech (a click, a burst of
noise) left out."""

from __future__ import annotations

import numpy as np

from turnscope.asr.refine import Background, SpanRefiner
from turnscope.asr.settings import RefineSettings
from turnscope.asr.stretch import find_stretch, stretch_spans
from turnscope.capture.frames import SAMPLE_RATE

__all__ = ["closing_spans"]

LONE_SPAN_GAP = SAMPLE_RATE * 400 // 1000  # a last short span this far after the speech


def closing_spans(
    pcm: np.ndarray,
    base: int,
    spans: list[list[int]],
    energies: list[float],
    flen: int,
    refiner: SpanRefiner | None,
    refine: RefineSettings,
    background: Background | None,
    *,
    shortest: int,
    forced: bool,
) -> list[list[int]]:
    """The final spans (call-clock samples) of an utterance whose audio ``pcm`` starts at
    ``base``; ``shortest``: the shortest utterance in samples; ``forced``: ended by
    max_utterance_ms (its last span is kept, however short)."""
    stretch = None
    if spans and refiner is not None and refine.stretch_search_ms > 0:
        stretch = find_stretch(pcm, flen, max(energies, default=0.0))
    if stretch is not None:  # a recording's own room tone around it: judged against that
        out = stretch_spans(stretch, base, spans, refine)
    elif spans and refiner is not None:
        out = refiner.spans(pcm, base, spans, energies, background)
    else:
        out = spans
    out = [s for s in out if s[1] > s[0]]
    if not forced:
        # A last span too short to be an utterance of its own, well after the last word, is
        # a click or a burst of noise (pink noise at 10 dB SNR: 40 ms, 500 ms after it). A
        # final consonant's release comes much closer to the word it ends.
        while (
            len(out) > 1
            and out[-1][1] - out[-1][0] < shortest
            and out[-1][0] - out[-2][1] >= LONE_SPAN_GAP
        ):
            out.pop()
    return out
