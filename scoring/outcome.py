"""Scoring a finished (or running) call: the verifier verdict, WER and the bench row."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnscope.scoring.channel_swap import ChannelsSwapped, channels_swapped
from turnscope.scoring.contract import Contract
from turnscope.scoring.exercise import Exercise, exercise
from turnscope.scoring.suites.bench import bench_result, scored_row, void_row
from turnscope.scoring.suites.why import dimension_failures
from turnscope.scoring.verifier import (
    Facts,
    failed_floors,
    score_voice_episode,
    verifier_facts,
)
from turnscope.scoring.wer import WerReport, channel_texts, measure_wer


@dataclass(frozen=True)
class Outcome:
    """The verdict of one call against its contract."""

    verifier: dict[str, Any]
    wer: WerReport | None
    bench: dict[str, Any] | None
    exercise: dict[str, Exercise] = field(default_factory=dict)
    # Why the call failed beyond the verifier's floors (an agent that never spoke passes every
    # floor of a task without required content: the verifier has nothing to hold against it).
    failures: list[str] = field(default_factory=list)
    # A recording whose channels are the wrong way round (told by the reference's words).
    swapped: ChannelsSwapped | None = None
    facts: Facts | None = None  # what the verifier paired and counted (views say why from it)

    @property
    def passed(self) -> bool:
        return bool(self.verifier["result"]["pass_fail"].get("voice")) and not self.failures

    @property
    def not_exercised(self) -> list[str]:
        """Dimensions scored without evidence (their 1.0 is the verifier's vacuous score)."""
        return [d for d, e in self.exercise.items() if not e.exercised]

    @property
    def failing(self) -> dict[str, str]:
        """Each dimension below its floor and what made it so, in the verifier's facts."""
        return dimension_failures(self.facts) if self.facts is not None else {}

    @property
    def failed_floors(self) -> list[str]:
        return failed_floors(self.verifier["result"])


def verify(dialogue: Sequence[Mapping[str, Any]], contract: Contract) -> dict[str, Any]:
    """The unchanged verifier on the dialogue, with the contract's budgets and keywords."""
    return score_voice_episode(
        list(dialogue),
        budgets=contract.verifier_budgets,
        required_content=contract.required_content,
    )


def planned_replies(contract: Contract) -> int:
    """How many replies the task's plan expects of the agent (0: none, or not known)."""
    plan = contract.planned
    return (plan.replies or 0) if plan is not None else 0


def score_outcome(
    dialogue: Sequence[Mapping[str, Any]], contract: Contract, *, evidence_class: str
) -> Outcome:
    """Verifier, WER against the contract's reference (if any), and a bench result when the
    contract names a suite task."""
    verifier = verify(dialogue, contract)
    facts = verifier_facts(
        dialogue, budgets=contract.verifier_budgets, required_content=contract.required_content
    )
    failures = []
    callers = sum(1 for t in dialogue if t.get("speaker") == "caller")
    if callers and not facts.agent_turns:
        failures.append(
            f"the agent never spoke: every caller turn went unanswered ({callers} of {callers})"
        )
    elif callers and not facts.gaps and (planned := planned_replies(contract)):
        # it spoke (a greeting), but after no caller turn: latency "not exercised" is then no
        # pass of the call (an agent in a crowd that never found the caller's end of turn)
        failures.append(
            f"the agent answered none of the caller's {callers} turn(s) ({planned} replies planned)"
        )
    wer = swapped = None
    if contract.reference is not None:
        heard = channel_texts(dialogue)
        wer = measure_wer(contract.reference.texts, heard)
        swapped = channels_swapped(contract.reference.texts, heard)
        if swapped is not None:
            failures.append(swapped.message())
    bench = None
    if contract.suite is not None and contract.task_id is not None:
        rows = []
        for task in contract.suite.tasks:
            if task.id == contract.task_id:
                rows.append(scored_row(task, list(dialogue), evidence_class))
            else:
                rows.append(void_row(task, evidence_class))
        bench = bench_result(contract.suite, rows)
    found = exercise(facts, contract.planned)
    return Outcome(verifier, wer, bench, found, failures, swapped, facts)
