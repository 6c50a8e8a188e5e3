"""Why a task failed, in the verifier's own facts: the sentence a CI report shows beside the
task (JUnit's failure message, the gate's FAIL line, the scorecard's task row)."""

from __future__ import annotations

from turnscope.scoring.verifier import PASS_FLOOR, Facts


def failure_reason(facts: Facts) -> str:
    """Each verifier dimension below its floor, said with what made it so ("" when none)."""
    scores = facts.components()
    parts = []
    if scores["latency"] < PASS_FLOOR:
        late = [g for g in facts.gaps if not g.ok]
        slowest = max(g.gap_ms for g in late)
        parts.append(
            f"{len(late)} of {len(facts.gaps)} replies outside the {facts.max_latency_ms} ms "
            f"latency budget (slowest {slowest} ms)"
        )
    if scores["turn_taking"] < PASS_FLOOR:
        parts.append(
            f"{len(facts.harmful)} of {facts.agent_turns} agent turns overlapped by the caller "
            "with no barge-in among them"
        )
    if scores["barge_in"] < PASS_FLOOR:
        missed = sum(1 for b in facts.barge_ins if not b.handled)
        parts.append(f"{missed} of {len(facts.barge_ins)} barge-ins not yielded to")
    if scores["content"] < PASS_FLOOR:
        parts.append("never said " + ", ".join(repr(k) for k in facts.keywords_missing))
    return "; ".join(parts)
