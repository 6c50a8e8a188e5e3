"""What one call of a load run came to: the facts the aggregate report is made of."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from turnscope.actors.caller.notes import CallerNote
from turnscope.capture.player import LATE_MS
from turnscope.otlp.records import SpansBy
from turnscope.reasons import Severity
from turnscope.scoring.exercise import barge_ins_happened
from turnscope.scoring.voice_wer import VoiceHeard, heard_in

Status = Literal["completed", "dropped", "setup_failed", "error", "not_run"]

# A reply is timed from the end of the caller turn before it: caller frames sent late just
# before that end reached the agent late, so the reply seems later by up to their lag.
END_WINDOW_MS = (300.0, 20.0)  # before, after the caller turn's end


CALLS = "calls"  # the folder, under a load run's, of its calls' bundles


class ReplyHop(BaseModel):
    """One hop of a reply (scoring.latency's Point names): the hops sum to its latency."""

    start: str  # caller_end_heard, turn_end, stt_final, llm_first_token, ...
    to: str  # ... first_sample_heard: the last hop is the unaccounted part
    ms: float


class Reply(BaseModel):
    """An agent turn timed against the caller turn before it (the verifier's pairing)."""

    at_ms: float  # the agent turn's start on the call's clock
    latency_ms: float
    caller_lag_ms: float = 0.0  # the worst send lag of the caller's frames at that turn's end
    hops: list[ReplyHop] = Field(default_factory=list)  # its split by the agent's events
    # Why this reply alone has no hops (the call's others do): the breakdown's reason for it.
    no_hops: str | None = None

    @property
    def on_time(self) -> bool:
        return self.caller_lag_ms <= LATE_MS


def lag_at(late: list[tuple[float, float]], end_ms: float) -> float:
    """The worst lag of the late caller frames around a caller turn's end (0: none late)."""
    lo, hi = end_ms - END_WINDOW_MS[0], end_ms + END_WINDOW_MS[1]
    return max((lag for at, lag in late if lo <= at <= hi), default=0.0)


class CallRecord(BaseModel):
    """One call: when it was planned and placed, how it ended, what it measured."""

    slot: int
    attempt: int = 1  # a caller's n-th call (a --duration run redials)
    worker: str = ""  # the process or Ray node that placed it
    status: Status
    kind: str | None = None  # why it failed or dropped, counted by kind
    reason: str | None = None
    planned_s: float  # after the run's start
    placed_s: float | None = None  # when its set-up began
    connected_s: float | None = None
    ended_s: float | None = None
    connect_ms: float | None = None
    duration_s: float | None = None
    passed: bool | None = None
    # What its verdict failed on: the floors, and any failure beyond them (the verifier's own
    # words: an agent that never spoke).
    failed_floors: list[str] = Field(default_factory=list)
    verdict_failures: list[str] = Field(default_factory=list)
    replies: list[Reply] = Field(default_factory=list)
    barge_in_yields_ms: list[float] = Field(default_factory=list)
    barge_ins_planned: int = 0
    barge_ins_exercised: int = 0
    unanswered: int = 0
    caller_max_send_lag_ms: float | None = None
    caller_late_frames: int = 0
    agent_lost_frames: int = 0
    degraded: list[str] = Field(default_factory=list)
    degraded_codes: list[str] = Field(default_factory=list)  # the same, as codes (counted)
    bundle: str | None = None
    missing: list[str] = Field(default_factory=list)  # what its bundle could not write
    breakdown_source: str | None = None  # what split its replies into hops (otlp, rtvi, ...)
    hops_missing: str | None = None  # why its replies have no hops (the breakdown's reasons)
    spans_by: SpansBy | None = None  # --otlp: how its spans were told from the other calls'
    voices: list[VoiceHeard] = Field(default_factory=list)  # each caller voice, as the ASR heard it
    # An LLM-driven caller (--caller-llm): how long its LLM took to answer each time, and
    # whether its LLM failed (the caller's failure, not the agent's: the call is degraded).
    caller_llm_ms: list[float] = Field(default_factory=list)
    caller_llm_failed: bool = False

    @property
    def placement_lag_s(self) -> float | None:
        return None if self.placed_s is None else max(0.0, self.placed_s - self.planned_s)


def finished_record(base: dict[str, Any], run: Any, call: Any, caller: Any) -> CallRecord:
    """The record of a call that connected and ran (``run``, ``call``, ``caller``: what
    ``place_call`` returned)."""
    from turnscope.scoring.verifier import verifier_facts

    dialogue = run.result.assembly.dialogue()
    facts = verifier_facts(dialogue)
    details = call.info.details
    script = caller.report()
    found = run.result.findings  # the call's, the caller's, the pipeline's, the runner's
    degraded = list(found.degraded)
    dropped = call.end_kind is not None and found.has(call.end_kind)  # its end degraded it
    late = getattr(call.caller_track, "late_at", [])
    hops, unsplit, source, why = _hops(run.breakdown)
    spans_by = (details.get("otlp") or {}).get("spans_by")
    return CallRecord(
        **base,
        status="dropped" if dropped else "completed",
        kind=(call.end_kind.value if call.end_kind else "other") if dropped else None,
        reason=call.end_reason,
        passed=run.outcome.passed,
        failed_floors=list(run.outcome.failed_floors),
        verdict_failures=list(run.outcome.failures),
        duration_s=round(run.result.audio_ms / 1000, 3),
        connect_ms=details.get("connect_ms"),
        replies=[
            Reply(
                at_ms=dialogue[g.agent]["start_ms"],
                latency_ms=g.gap_ms,
                caller_lag_ms=lag_at(late, dialogue[g.caller]["end_ms"]),
                hops=hops.get(g.agent, []),
                no_hops=unsplit.get(g.agent),
            )
            for g in facts.gaps
        ],
        barge_in_yields_ms=[float(o.yield_ms) for o in facts.barge_ins if o.yield_ms is not None],
        barge_ins_planned=script["barge_ins"]["planned"],
        barge_ins_exercised=barge_ins_happened(
            run.outcome.exercise, script["barge_ins"]["planned"]
        ),
        unanswered=len(script["unanswered_lines"]),
        caller_max_send_lag_ms=details.get("caller_max_send_lag_ms"),
        caller_late_frames=int(details.get("caller_late_frames") or 0),
        agent_lost_frames=int(details.get("agent_lost_frames") or 0),
        degraded=degraded,
        degraded_codes=[n.code_name for n in found.of(Severity.DEGRADED)],
        bundle=str(run.outdir),
        breakdown_source=source,
        hops_missing=why,
        spans_by=SpansBy(spans_by) if spans_by in SpansBy._value2member_map_ else None,
        voices=heard_in(run.voices),
        caller_llm_ms=[t.latency_ms for t in getattr(caller, "llm_turns", []) if t.latency_ms],
        caller_llm_failed=found.has(CallerNote.LLM_FAILED),
    )


def _hops(
    breakdown: Any,
) -> tuple[dict[int, list[ReplyHop]], dict[int, str], str | None, str | None]:
    """Each reply's hops by its agent turn (a reliable breakdown's only), why each of the
    others has none (when some have), the breakdown's source, and why there are none at all."""
    if breakdown is None:
        return {}, {}, None, "nothing from the agent split its replies (no --otlp, no RTVI)"
    if not breakdown.reliable:
        return {}, {}, breakdown.source, "; ".join(breakdown.reasons) or "unreliable"
    hops: dict[int, list[ReplyHop]] = {}
    unsplit: dict[int, str] = {}
    for r in breakdown.replies:
        if r.missing is None and r.hops:
            hops[r.agent_turn] = [ReplyHop(start=h.start.value, to=h.to.value, ms=h.ms)
                                  for h in r.hops]  # fmt: skip
        elif r.missing is not None:
            unsplit[r.agent_turn] = r.missing
    if not hops:
        return {}, {}, breakdown.source, "no reply could be split"
    return hops, unsplit, breakdown.source, None
