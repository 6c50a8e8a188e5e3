"""A synthetic call's caller channel through the scenario's ``caller.acoustics``, as a live call
with that scenario sends it (`acoustics.py`: one code path).

Each caller line's voiced extent goes through ``acoustics.as_sent`` (room, level, clipping, a
line's own noise, the telephone line), keeps its length and lands where the line was placed, so
the truth (each line's first and last voiced sample) is the same as without acoustics; the
room's and codec's tail goes out after it. Then the call's ``Bed`` (the background at its SNR
under the caller's speech, lost packets, the tails) is mixed over the whole channel from sample
0, as the live caller's track mixes it into every frame from the call's start. Seeded by
``caller.acoustics.seed``: a corpus rendered twice is the same, sample for sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from turnscope.actors.caller import acoustics
from turnscope.actors.caller.scenario import Scenario
from turnscope.capture.frames import SAMPLE_RATE, to_int16
from turnscope.errors import InputError

FULL_SCALE = 32768.0  # to_int16 scales by 32767: the channel read back as the wav holds it


@dataclass(frozen=True)
class CallerLine:
    """A placed caller line: its script index, its voiced audio and its first voiced sample."""

    line: int
    voiced: np.ndarray
    start: int


@dataclass
class SentChannel:
    """The caller's channel as sent (float64, full scale 1), the speech in it alone (as sent,
    before the bed and losses), and what result.json's ``script.acoustics`` would record."""

    channel: np.ndarray
    speech: np.ndarray
    record: dict[str, Any] | None


def applies(scenario: Scenario) -> bool:
    """Whether the scenario's caller has acoustics (the call's or a line's)."""
    return acoustics.needs_bed(scenario)


def caller_channel(
    scenario: Scenario, lines: list[CallerLine], n: int, sample_rate: int
) -> SentChannel:
    """The caller's channel of ``n`` samples with ``lines`` sent through the caller's line."""
    if sample_rate != SAMPLE_RATE:
        raise InputError(
            f"caller.acoustics is rendered at {SAMPLE_RATE} Hz, as a live caller sends it: "
            f"render at sample_rate {SAMPLE_RATE}, not {sample_rate}",
            path=scenario.source,
        )
    sent = [(c, acoustics.as_sent(scenario, scenario.script[c.line], c.voiced)) for c in lines]
    pcm = np.zeros(n, np.int16)
    bed = acoustics.make_bed(scenario, [x for _, x in sent], SAMPLE_RATE)
    for c, x in sent:
        hi = min(n, c.start + x.size)
        pcm[c.start : hi] = to_int16(np.asarray(x[: hi - c.start]))
        tail = getattr(x, "tail", None)
        if tail is not None:  # the room after the line: outside its extent, as on a live call
            bed.after_at(to_int16(tail), c.start + x.size)
    speech = pcm.astype(np.float64) / FULL_SCALE
    channel = bed.mix_at(pcm, 0).astype(np.float64) / FULL_SCALE
    return SentChannel(channel, speech, acoustics.record(scenario, bed))


def placed_caller(
    scenario: Scenario, clips: list[Any], n: int, sample_rate: int
) -> SentChannel | None:
    """``caller_channel`` for a ``placement.Renderer``'s clips (None: a plain caller)."""
    if not applies(scenario):
        return None
    lines = [
        CallerLine(c.line, c.clip.audio[c.clip.start : c.clip.end], c.start)
        for c in clips
        if c.speaker == "caller"
    ]
    return caller_channel(scenario, lines, n, sample_rate)
