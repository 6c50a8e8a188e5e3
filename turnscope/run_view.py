"""What a test wants of a run, as typed values: the verdict, each reply's latency, each
barge-in's yield, the latency split. The same facts the verifier scored (``verifier_facts`` on
the run's turns, with the contract's budget), not a second computation."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from turnscope.scoring.verifier import verifier_facts

if TYPE_CHECKING:
    from turnscope.runner import RunOutput

Verdict = Literal["pass", "fail", "error"]


@dataclass(frozen=True)
class Reply:
    """An agent turn timed from the caller turn before it (the verifier's pairing)."""

    start_ms: float  # the agent turn's start on the call clock
    latency_ms: int  # from the caller's end of turn to the agent's first sound
    within_budget: bool  # 0 <= latency <= the contract's max_latency_ms
    caller_said: str
    agent_said: str


@dataclass(frozen=True)
class BargeIn:
    """A caller turn that cut into an agent turn on purpose, and how the agent took it."""

    at_ms: float  # the caller's barge-in start
    yield_ms: int | None  # how long the agent went on after it began (None: not measurable)
    handled: bool | None  # the agent stopped within the verifier's allowance


@dataclass(frozen=True)
class Split:
    """One reply's latency split into the agent's own stages (``--agent-trace`` / RTVI)."""

    endpointing_ms: float
    processing_ms: float
    delivery_ms: float


def verdict(run: RunOutput) -> Verdict:
    if run.result.channels_alike is not None:
        return "error"  # one recording on both channels: not a call, not scored
    return "pass" if run.outcome.passed else "fail"


def _facts(run: RunOutput):
    raw = run.outcome.verifier.get("raw") or {}
    budget = raw.get("max_latency_ms")
    budgets = {"max_latency_ms": budget} if budget is not None else None
    return verifier_facts(run.result.assembly.dialogue(), budgets=budgets)


def replies(run: RunOutput) -> list[Reply]:
    dialogue = run.result.assembly.dialogue()
    return [
        Reply(float(dialogue[g.agent]["start_ms"]), g.gap_ms, g.ok,
              str(dialogue[g.caller].get("text", "")), str(dialogue[g.agent].get("text", "")))
        for g in _facts(run).gaps
    ]  # fmt: skip


def barge_ins(run: RunOutput) -> list[BargeIn]:
    dialogue = run.result.assembly.dialogue()
    return [
        BargeIn(float(dialogue[o.caller]["start_ms"]), o.yield_ms, o.handled)
        for o in _facts(run).overlaps
        if o.interrupt
    ]


def splits(run: RunOutput) -> list[Split | None]:
    """Each reply's split (None where the agent's events did not cover it); [] without any."""
    b = run.breakdown
    if b is None:
        return []
    return [
        None if r.missing is not None else Split(r.endpointing_ms, r.processing_ms, r.delivery_ms)
        for r in b.replies
    ]
