"""The temporal verifier: grades a voice transcript on latency, turn-taking, barge-in and content.

Semantics are fixed by the contract (docs: ../shared/contracts/verifier.md) down to the float,
including its quirks: turns are taken in list order (never sorted by time), a negative gap is
outside the budget, speakers other than "caller"/"agent" are ignored by every score but counted.
Anything turnscope adds (WER, backchannels, continuity) lives beside this result, never inside it.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

DEFAULT_MAX_LATENCY_MS = 1200
BARGE_IN_YIELD_MS = 600
PASS_FLOOR = 0.75
COMPONENTS = ("latency", "turn_taking", "barge_in", "content")


@dataclass(frozen=True)
class _Turn:
    speaker: str
    start_ms: int
    end_ms: int
    text: str
    interrupt: bool


def _normalise(turn: Mapping[str, Any]) -> _Turn:
    return _Turn(
        speaker=str(turn.get("speaker")),
        start_ms=int(turn.get("start_ms", 0)),
        end_ms=int(turn.get("end_ms", 0)),
        text=str(turn.get("text") or ""),
        interrupt=bool(turn.get("interrupt", False)),
    )


@dataclass(frozen=True)
class Gap:
    """An agent turn and the nearest caller turn before it in list order: the latency pairing."""

    caller: int  # list index
    agent: int
    gap_ms: int
    ok: bool  # 0 <= gap <= the latency budget


@dataclass(frozen=True)
class Overlap:
    """A caller turn overlapping an agent turn (strictly): a barge-in when the caller turn is an
    interrupt (``yield_ms``: how long the agent went on after it started), else talking over."""

    caller: int
    agent: int
    interrupt: bool
    yield_ms: int | None
    handled: bool | None


@dataclass(frozen=True)
class Facts:
    """Everything the verifier pairs and counts, from which its scores follow."""

    turns: int
    agent_turns: int
    max_latency_ms: int
    gaps: tuple[Gap, ...]
    overlaps: tuple[Overlap, ...]
    harmful: tuple[int, ...]  # agent turns overlapped by the caller with no interrupt among them
    keywords_found: tuple[str, ...]
    keywords_missing: tuple[str, ...]
    # Interrupts that overlapped no agent turn: no barge-in to score, but views still mark them.
    unmet_interrupts: tuple[int, ...] = ()

    # Views ask these per turn: indexed once, so a long call's views stay linear in its turns.
    @cached_property
    def barge_ins(self) -> tuple[Overlap, ...]:
        return tuple(o for o in self.overlaps if o.interrupt)

    @cached_property
    def _barge_ins_by_caller(self) -> dict[int, tuple[Overlap, ...]]:
        by: defaultdict[int, list[Overlap]] = defaultdict(list)
        for o in self.barge_ins:
            by[o.caller].append(o)
        return {caller: tuple(found) for caller, found in by.items()}

    @cached_property
    def _gap_by_agent(self) -> dict[int, Gap]:
        return {g.agent: g for g in self.gaps}

    def barge_ins_of(self, caller: int) -> tuple[Overlap, ...]:
        """The barge-ins one caller turn (list index) made, in the agent turns' list order."""
        return self._barge_ins_by_caller.get(caller, ())

    def gap_of(self, agent: int) -> Gap | None:
        """The latency pairing of one agent turn (list index); None when it was not timed."""
        return self._gap_by_agent.get(agent)

    def components(self) -> dict[str, float]:
        """The four sub-scores (rounded as the contract rounds them)."""
        inside = sum(1 for g in self.gaps if g.ok)
        barges = self.barge_ins
        handled = sum(1 for b in barges if b.handled)
        keywords = len(self.keywords_found) + len(self.keywords_missing)
        return {
            "latency": round(inside / len(self.gaps) if self.gaps else 1.0, 6),
            "turn_taking": round(
                1 - len(self.harmful) / self.agent_turns if self.agent_turns else 1.0, 6
            ),
            "barge_in": round(handled / len(barges) if barges else 1.0, 6),
            "content": round(len(self.keywords_found) / keywords if keywords else 1.0, 6),
        }


def _gaps(turns: Sequence[_Turn], max_latency: int) -> list[Gap]:
    out = []
    last: int | None = None
    # "Nearest caller turn at a smaller list index" is the last caller seen while walking the list.
    for i, turn in enumerate(turns):
        if turn.speaker == "caller":
            last = i
        elif turn.speaker == "agent" and last is not None:
            gap = turn.start_ms - turns[last].end_ms
            out.append(Gap(last, i, gap, 0 <= gap <= max_latency))
    return out


def _overlapping(turns: Sequence[_Turn]) -> dict[int, list[int]]:
    """For each agent turn (list index), the caller turns overlapping it (strictly: the caller
    starts before the agent ends and ends after it starts), in list order.

    One sweep instead of every agent against every caller: agents by end time; each adds the
    callers that start before its end to a list kept sorted by end; those ending after its start
    are that list's tail. Time near-linear in turns plus overlaps (scoring 64k turns pair by
    pair took 82 s). Only comparisons of the same two fields: the contract's rule, whatever the
    order or the values of the times.
    """
    agents = sorted(
        (i for i, t in enumerate(turns) if t.speaker == "agent"), key=lambda i: turns[i].end_ms
    )
    callers = sorted(
        (i for i, t in enumerate(turns) if t.speaker == "caller"), key=lambda i: turns[i].start_ms
    )
    by_end: list[tuple[int, int]] = []  # (caller end, caller index), sorted
    added = 0
    out: dict[int, list[int]] = {}
    for ai in agents:
        a = turns[ai]
        while added < len(callers) and turns[callers[added]].start_ms < a.end_ms:
            ci = callers[added]
            bisect.insort(by_end, (turns[ci].end_ms, ci))
            added += 1
        # Callers ending strictly after the agent's start: past every (a.start_ms, any index).
        first = bisect.bisect_right(by_end, (a.start_ms, len(turns)))
        out[ai] = sorted(ci for _, ci in by_end[first:])
    return out


def _overlaps(turns: Sequence[_Turn]) -> tuple[list[Overlap], list[int]]:
    overlapping_of = _overlapping(turns)
    found: list[Overlap] = []
    harmful: list[int] = []
    for ai in sorted(overlapping_of):
        a = turns[ai]
        overlapping = overlapping_of[ai]
        for ci in overlapping:
            c = turns[ci]
            if c.interrupt:
                held = a.end_ms - c.start_ms
                found.append(Overlap(ci, ai, True, held, held <= BARGE_IN_YIELD_MS))
            else:
                found.append(Overlap(ci, ai, False, None, None))
        if overlapping and not any(turns[ci].interrupt for ci in overlapping):
            harmful.append(ai)
    return found, harmful


def verifier_facts(
    dialogue: Sequence[Mapping[str, Any]],
    *,
    budgets: Mapping[str, Any] | None = None,
    required_content: Sequence[Any] | None = None,
) -> Facts:
    """The pairs and counts ``score_voice_episode`` scores, for views that explain the score.

    Same normalisation and the same errors as the verifier (a turn whose times are not numbers
    raises ValueError/TypeError).
    """
    turns = [_normalise(t) for t in dialogue]
    max_latency = int((budgets or {}).get("max_latency_ms", DEFAULT_MAX_LATENCY_MS))
    overlaps, harmful = _overlaps(turns)
    met = {o.caller for o in overlaps}
    spoken = " ".join(t.text for t in turns if t.speaker == "agent").lower()
    required = [str(kw) for kw in required_content or []]
    return Facts(
        turns=len(turns),
        agent_turns=sum(1 for t in turns if t.speaker == "agent"),
        max_latency_ms=max_latency,
        gaps=tuple(_gaps(turns, max_latency)),
        overlaps=tuple(overlaps),
        harmful=tuple(harmful),
        unmet_interrupts=tuple(
            i for i, t in enumerate(turns) if t.speaker == "caller" and t.interrupt and i not in met
        ),
        keywords_found=tuple(kw for kw in required if kw.lower() in spoken),
        keywords_missing=tuple(kw for kw in required if kw.lower() not in spoken),
    )


def score_voice_episode(
    dialogue: Sequence[Mapping[str, Any]] | None,
    *,
    budgets: Mapping[str, Any] | None = None,
    required_content: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Score one voice transcript (a list of turns) against a task's budgets and keywords.

    Returns ``{"result": {scalar, components, pass_fail, explanation}, "raw": {...}}`` exactly as
    the contract specifies. Raises ValueError/TypeError for a turn whose times are not numbers.
    """
    if not dialogue:
        return {
            "result": {
                "scalar": 0.0,
                "components": {},
                "pass_fail": {"voice": False},
                "explanation": "empty transcript",
            },
            "raw": {"modality": "voice"},
        }
    facts = verifier_facts(dialogue, budgets=budgets, required_content=required_content)
    components = facts.components()
    scalar = round(sum(components.values()) / len(components), 6)
    floors = {f"{name}_floor": value >= PASS_FLOOR for name, value in components.items()}
    floors_met = all(floors.values())
    return {
        "result": {
            "scalar": scalar,
            "components": components,
            "pass_fail": {"voice": floors_met, **floors},
            "explanation": (
                "all voice dimensions met the floor"
                if floors_met
                else "a voice dimension fell below the floor"
            ),
        },
        "raw": {
            "modality": "voice",
            "turns": facts.turns,
            "max_latency_ms": facts.max_latency_ms,
            "floors_met": floors_met,
        },
    }


def failed_floors(result: Mapping[str, Any]) -> list[str]:
    """Names of the components whose floor failed in a verifier result (``result["result"]``)."""
    pass_fail = result.get("pass_fail", {})
    return [name for name in COMPONENTS if pass_fail.get(f"{name}_floor") is False]
