"""Why a task failed, in the verifier's own facts: the sentence a CI report shows beside the
task (JUnit's failure message, the gate's FAIL line, the scorecard's task row)."""

from __future__ import annotations

from turnscope.scoring.verifier import PASS_FLOOR, Facts


def failure_reason(facts: Facts) -> str:
    """Each verifier dimension below its floor, said with what made it so ("" when none)."""
    return "; ".join(dimension_failures(facts).values())


def dimension_failures(facts: Facts) -> dict[str, str]:
    """Each dimension below its floor and what made it so (the terminal's verdict table says
    it in the failing row)."""
    scores = facts.components()
    parts = {}
    if scores["latency"] < PASS_FLOOR:
        parts["latency"] = _latency(facts)
    if scores["turn_taking"] < PASS_FLOOR:
        parts["turn_taking"] = (
            f"{len(facts.harmful)} of {facts.agent_turns} agent turns overlapped by the caller "
            "with no barge-in among them"
        )
    if scores["barge_in"] < PASS_FLOOR:
        missed = sum(1 for b in facts.barge_ins if not b.handled)
        parts["barge_in"] = f"{missed} of {len(facts.barge_ins)} barge-ins not yielded to"
    if scores["content"] < PASS_FLOOR:
        parts["content"] = "never said " + ", ".join(repr(k) for k in facts.keywords_missing)
    return parts


def _latency(facts: Facts) -> str:
    """The replies outside the budget: the slow ones by the slowest, and those that began before
    the caller's turn ended (a negative gap: the verifier counts it out of budget) by the most
    overlap, so "slowest" never names a negative latency."""
    late = [g for g in facts.gaps if not g.ok]
    slow = [g.gap_ms for g in late if g.gap_ms > 0]
    early = [-g.gap_ms for g in late if g.gap_ms < 0]
    said = []
    if slow:
        said.append(f"slowest {max(slow)} ms")
    if early:
        said.append(
            f"{len(early)} began up to {max(early)} ms before the caller's turn ended"
            if len(early) > 1
            else f"1 began {early[0]} ms before the caller's turn ended"
        )
    return (
        f"{len(late)} of {len(facts.gaps)} replies outside the {facts.max_latency_ms} ms "
        f"latency budget ({'; '.join(said)})"
    )
