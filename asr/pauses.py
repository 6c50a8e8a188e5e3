"""What a pause inside one utterance is, against the utterance's other pauses: the assembler's
question when the other party spoke during a turn (did this speaker answer it, or go on?)."""

from __future__ import annotations

import enum
import itertools
import statistics
from collections.abc import Sequence

from turnscope.asr.events import Span
from turnscope.asr.settings import AssemblySettings

__all__ = ["Pause", "pause_kind"]


class Pause(enum.Enum):
    """The pause before a voiced span of an utterance."""

    ANSWER = "answer"  # >= answer_pause_ms and answer_margin_ms longer than the others' median
    REGULAR = "regular"  # within answer_margin_ms of the others' median: between its sentences
    OTHER = "other"  # neither, or no other pause to compare it with


def pause_kind(spans: Sequence[Span], index: int, cfg: AssemblySettings) -> Pause:
    """The pause before ``spans[index]``: an answer's (an agent's own regular pauses between
    sentences never are), one of the utterance's regular ones, or neither."""
    pauses = [b.start_ms - a.end_ms for a, b in itertools.pairwise(spans)]
    k = index - 1
    if k < 0:
        return Pause.OTHER
    others = pauses[:k] + pauses[k + 1 :]
    typical = statistics.median(others) if others else 0.0
    answer = max(cfg.answer_pause_ms, typical + cfg.answer_margin_ms)
    if cfg.answer_pause_ms > 0 and pauses[k] >= answer:
        return Pause.ANSWER
    regular = bool(others) and pauses[k] < typical + cfg.answer_margin_ms
    return Pause.REGULAR if regular else Pause.OTHER
