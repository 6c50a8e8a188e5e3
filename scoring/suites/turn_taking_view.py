"""The scorecard's turn-taking block as rows any view draws (the scorecard page, `turnscope
bench`'s terminal table): one row per metric, one cell per tag, "not exercised" where no scored
task of the tag met the metric's condition (never a 0 or a pass), the gate's judgement when a
baseline or a limit was given.

The numbers are the scorecard's own (``card["turn_taking"]``, turn_taking_gate.card_section);
this module only words them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from turnscope.scoring.exercise import NOT_EXERCISED
from turnscope.scoring.suites.gate import worse_by
from turnscope.scoring.suites.turn_taking_gate import METRICS, Metric, metric_text

if TYPE_CHECKING:
    from turnscope.scoring.suites.gate import Cell

# What each metric is, in a reader's words (the gate and --floor use the key).
LABELS = {
    "pause_tor": "pause TOR (took the floor at a caller pause)",
    "backchannel_false_yield": "backchannel false-yield rate",
    # FDB's takeover: a reply of >= 1 s or > 3 words ("Yes, go ahead." after a barge-in is an
    # acknowledgment, not a takeover: t_resp still measures it).
    "smooth_tor": "smooth turn-taking TOR (a reply >= 1 s or > 3 words)",
    "interruption_tor": "user-interruption TOR (a reply >= 1 s or > 3 words after it)",
    "takeover_latency_ms": "takeover latency",
    "t_stop_ms": "t_stop (barge-in -> agent stopped)",
    "t_resp_ms": "t_resp (barge-in -> agent answered)",
    "pause_talk_over_ms": "talk-over at caller pauses",
}


class State(str, Enum):
    """How a cell reads: a value, a failure of the gate, a move against the baseline, or no
    value because nothing exercised it."""

    VALUE = "value"
    FAIL = "fail"
    WORSE = "worse"
    BETTER = "better"
    NOT_EXERCISED = "not_exercised"


@dataclass(frozen=True)
class ViewCell:
    text: str  # "0.250", "933 ms" or "not exercised"
    state: State
    tasks: int = 0  # scored tasks of the tag that measured the metric
    of: int = 0  # scored tasks of the tag
    delta: str = ""  # "was 0.000, +0.250" against the baseline
    why: str = ""  # the gate's failures, joined

    @property
    def under(self) -> str:
        """What a view prints under the value: how many tasks, the baseline's value."""
        many = f"{self.tasks} of {self.of} tasks" if self.tasks else ""
        return "; ".join(x for x in (many, self.delta) if x)


@dataclass(frozen=True)
class ViewRow:
    metric: str
    label: str
    better: str  # "lower is better" / "higher is better"
    cells: tuple[ViewCell, ...]


def _counts(card: Mapping[str, Any], tag: str, metric: str) -> tuple[int, int]:
    """(tasks that measured ``metric``, scored tasks) of ``tag``."""
    scored = [
        t
        for t in card.get("tasks") or []
        if t.get("verdict") != "void" and (tag == "all" or tag in (t.get("tags") or []))
    ]
    return sum(metric in (t.get("turn_taking") or {}) for t in scored), len(scored)


def _cell(m: Metric, value: Any, judged: Cell | None, counts: tuple[int, int]) -> ViewCell:
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        why = "; ".join(judged.failures) if judged else ""  # the baseline had it: a failure
        state = State.FAIL if why else State.NOT_EXERCISED
        return ViewCell(NOT_EXERCISED, state, *counts, why=why)
    state, delta = State.VALUE, ""
    if judged is not None and judged.baseline is not None:
        # The gate's own rule for which way is worse, not a second copy of it.
        worse = worse_by(judged.dim, float(value), judged.baseline)
        if worse:
            state = State.WORSE if worse > 0 else State.BETTER
        delta = f"was {metric_text(m, judged.baseline)}"
    if judged is not None and judged.failures:
        state = State.FAIL
    why = "; ".join(judged.failures) if judged else ""
    return ViewCell(metric_text(m, float(value)), state, *counts, delta=delta, why=why)


def tags_of(card: Mapping[str, Any]) -> list[str]:
    """The scorecard's tags in its own order ("all" last, as the scorecard puts it)."""
    return list(card.get("tags") or {})


def rows(card: Mapping[str, Any], cells: Sequence[Cell] = ()) -> list[ViewRow]:
    """One row per metric over the scorecard's tags; ``cells``: the gate's turn-taking cells
    (``gate(...).cells``), for failures and the baseline. Empty when the scorecard predates the
    turn-taking metrics (no ``turn_taking`` key)."""
    if "turn_taking" not in card:
        return []
    table = card.get("turn_taking") or {}
    judged = {(c.tag, c.dim): c for c in cells if c.dim in METRICS}
    out = []
    for name, m in METRICS.items():
        row = tuple(
            _cell(
                m,
                (table.get(tag) or {}).get(name),
                judged.get((tag, name)),
                _counts(card, tag, name),
            )
            for tag in tags_of(card)
        )
        better = "lower is better" if m.lower_is_better else "higher is better"
        out.append(ViewRow(name, LABELS.get(name, name), better, row))
    return out


def exercised_any(view: Sequence[ViewRow]) -> bool:
    """Whether any tag measured any metric (else one line says so instead of a table)."""
    return any(c.state is not State.NOT_EXERCISED for r in view for c in r.cells)


NONE_EXERCISED = (
    "turn-taking: no scored task exercised any condition (pauses, backchannels, barge-ins, "
    "ends of turn): every metric not exercised"
)
