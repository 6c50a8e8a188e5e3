"""The aggregate of a load run: latency across calls and over time, barge-ins, unanswered
turns, failures by kind, and the harness's own health (so an overloaded harness is never read
as a slow agent)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from turnscope.capture.player import LATE_MS, MAX_SEND_LAG_MS
from turnscope.load.hops import HopsReport, hops_report, not_separable_line
from turnscope.load.plan import PLACEMENT_SLACK_S, LoadPlan
from turnscope.load.record import CallRecord
from turnscope.load.stats import Percentiles
from turnscope.otlp.records import OtlpSummary
from turnscope.scoring.voice_wer import VoiceAcross, pool_voices

WINDOWS = 10  # latency over time: the run cut in this many spans (each at least MIN_WINDOW_S)
MIN_WINDOW_S = 5.0


class Window(BaseModel):
    """Replies whose agent turn began in [start_s, end_s) of the run, and the calls up then."""

    start_s: float
    end_s: float
    calls_up: int  # the most calls connected at once in the span
    latency_ms: Percentiles


class Harness(BaseModel):
    """How well the harness itself kept up: placement, caller audio, agent audio received."""

    placement_lag_max_s: float | None = None
    calls_placed_late: int = 0  # later than PLACEMENT_SLACK_S after their planned start
    caller_max_send_lag_ms: float | None = None
    caller_late_frames: int = 0  # caller frames sent more than 20 ms late, all calls
    calls_caller_audio_late: int = 0  # calls whose caller audio went out > 200 ms late
    agent_lost_frames: int = 0
    max_calls_up: int = 0


class LoadReport(BaseModel):
    """load.json: the run's plan, its counts and aggregates, and every call's record."""

    target: str
    transport: str
    scenario: str
    plan: LoadPlan
    loops: int
    where: str  # "this machine" or the Ray cluster's address
    wall_s: float
    placed: int
    completed: int
    passed: int
    failures: dict[str, dict[str, int]] = Field(default_factory=dict)  # status -> kind -> calls
    # status -> kind -> the first such call's reason: why, not only how many (a reason every
    # call hit, such as bad input found in the workers, is read here).
    failure_reasons: dict[str, dict[str, str]] = Field(default_factory=dict)
    # Completed calls whose verdict failed, and how many failed each floor (a call counts once
    # per floor): "0 passed" says why on the page and in the terminal, not only per bundle.
    verdicts_failed: int = 0
    floors_failed: dict[str, int] = Field(default_factory=dict)
    verdict_reason: str | None = None  # the first such call's failure beyond the floors
    latency_ms: Percentiles
    # The budget each reply is held to (the scenario's task's max_latency_ms, else the
    # verifier's default) and which it is: the terminal and load.html mark what is over it.
    latency_budget_ms: int | None = None
    latency_budget_source: str = ""
    # The replies whose caller turn ended with the caller's audio on time: what the agent did,
    # with none of the harness's lateness in it.
    latency_on_time_ms: Percentiles | None = None
    latency_over_time: list[Window] = Field(default_factory=list)
    barge_in_yield_ms: Percentiles
    barge_ins_planned: int = 0
    barge_ins_exercised: int = 0
    unanswered_turns: int = 0
    calls_with_unanswered: int = 0
    # An LLM-driven caller (--caller-llm): its LLM's answer times across the calls, and the
    # calls its LLM failed (the caller's failure: degraded, never counted against the agent).
    caller_llm_ms: Percentiles | None = None
    calls_caller_llm_failed: int = 0
    # Calls whose own evidence is degraded, by the code of why (a call counts once per code):
    # their figures are in the aggregate; each call's result.json says what to trust.
    calls_degraded: dict[str, int] = Field(default_factory=dict)
    # each caller voice across the calls: the project's ASR WER pooled over its words
    voices: list[VoiceAcross] = Field(default_factory=list)
    harness: Harness
    per_worker: dict[str, int] = Field(default_factory=dict)  # calls placed by loop or node
    # each reply's hops across calls (the agent's spans with --otlp, or its RTVI events)
    hops: HopsReport | None = None
    otlp: OtlpSummary | None = None  # --otlp: what the run's one receiver took in
    degraded: list[str] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    calls: list[CallRecord] = Field(default_factory=list)

    @property
    def failed(self) -> int:
        return sum(sum(k.values()) for s, k in self.failures.items() if s != "not_run")


def _spans(records: Sequence[CallRecord]) -> list[tuple[float, float]]:
    """When each call that connected was up (one without an end: to the end of the run)."""
    return [
        (r.connected_s, r.ended_s if r.ended_s is not None else math.inf)
        for r in records
        if r.connected_s is not None
    ]


def _most_up(spans: Sequence[tuple[float, float]], probes: Sequence[float]) -> int:
    """The most calls up at any of ``probes`` (a maximum is reached at some call's start)."""
    return max((sum(1 for a, b in spans if a <= t < b) for t in probes), default=0)


def _windows(records: Sequence[CallRecord]) -> list[Window]:
    timed = [
        (r.connected_s + x.at_ms / 1000, x.latency_ms)
        for r in records
        if r.connected_s is not None
        for x in r.replies
    ]
    if not timed:
        return []
    spans = _spans(records)
    span = max(t for t, _ in timed) + 1e-6
    width = max(MIN_WINDOW_S, span / WINDOWS)
    out = []
    for k in range(math.ceil(span / width)):
        lo, hi = k * width, (k + 1) * width
        out.append(
            Window(
                start_s=round(lo, 1),
                end_s=round(hi, 1),
                calls_up=_most_up(spans, [lo] + [a for a, _ in spans if lo <= a < hi]),
                latency_ms=Percentiles.of([v for t, v in timed if lo <= t < hi]),
            )
        )
    return out


SHOWN_CALLS = 4  # calls named per kind of incomplete bundle (load.json has every one)


def incomplete_bundles(records: Sequence[CallRecord]) -> str | None:
    """One line for the calls whose bundle could not be written whole, by what is missing
    (bounded however many calls: a few named for each, load.json has them all)."""
    by_missing: dict[tuple[str, ...], list[str]] = {}
    for r in records:
        if r.missing:
            name = Path(r.bundle).name if r.bundle else f"slot {r.slot + 1}"
            by_missing.setdefault(tuple(r.missing), []).append(name)
    if not by_missing:
        return None
    parts = []
    for missing, calls in by_missing.items():
        named = ", ".join(calls[:SHOWN_CALLS]) + (
            f" and {len(calls) - SHOWN_CALLS} more" if len(calls) > SHOWN_CALLS else ""
        )
        parts.append(f"{', '.join(missing)} missing in {named}")
    total = sum(len(c) for c in by_missing.values())
    more = f"; and {len(parts) - SHOWN_CALLS} other sets" if len(parts) > SHOWN_CALLS else ""
    head = f"{total} call(s) could not write their whole bundle: "
    return head + "; ".join(parts[:SHOWN_CALLS]) + more


def aggregate(
    records: Sequence[CallRecord],
    plan: LoadPlan,
    *,
    target: str,
    transport: str,
    scenario: str,
    loops: int,
    where: str,
    wall_s: float,
    problems: Sequence[str] = (),
    warnings: Sequence[str] = (),
    otlp: OtlpSummary | None = None,
) -> LoadReport:
    """The report of every record (one per call; slots that never dialled as ``not_run``)."""
    records = sorted(records, key=lambda r: (r.planned_s, r.slot, r.attempt))
    failures: dict[str, Counter[str]] = {}
    reasons: dict[str, dict[str, str]] = {}
    for r in records:
        if r.status != "completed":
            failures.setdefault(r.status, Counter())[r.kind or "other"] += 1
            if r.reason:
                reasons.setdefault(r.status, {}).setdefault(r.kind or "other", r.reason)
    placed = [r for r in records if r.placed_s is not None]
    lags = [r.placement_lag_s or 0.0 for r in placed]
    late = [r for r in placed if (r.placement_lag_s or 0) > PLACEMENT_SLACK_S]
    audio_late = [r for r in records if (r.caller_max_send_lag_ms or 0) > MAX_SEND_LAG_MS]
    send_lags = [r.caller_max_send_lag_ms for r in records if r.caller_max_send_lag_ms is not None]
    spans = _spans(records)
    harness = Harness(
        placement_lag_max_s=round(max(lags), 3) if lags else None,
        calls_placed_late=len(late),
        caller_max_send_lag_ms=max(send_lags) if send_lags else None,
        caller_late_frames=sum(r.caller_late_frames for r in records),
        calls_caller_audio_late=len(audio_late),
        agent_lost_frames=sum(r.agent_lost_frames for r in records),
        max_calls_up=_most_up(spans, [a for a, _ in spans]),
    )
    degraded = list(problems)
    if late:
        degraded.append(
            f"{len(late)} of {len(placed)} calls were placed more than {PLACEMENT_SLACK_S:g} s "
            f"after their planned time (up to {max(lags):.1f} s): the harness could not place "
            "this load on time (fewer --calls, a lower --rate, or more cores / --ray)"
        )
    if audio_late:
        degraded.append(
            f"{len(audio_late)} call(s) sent the caller's audio more than {MAX_SEND_LAG_MS:.0f} ms "
            "late: the "
            "harness was overloaded, their latencies are not the agent's"
        )
    warnings = list(warnings)
    if (late_line := late_frames_line(harness)) is not None:
        warnings.append(late_line)
    incomplete = incomplete_bundles(records)
    if incomplete:
        degraded.append(incomplete)
    not_run = failures.get("not_run")
    if not_run:
        degraded.append(
            f"{sum(not_run.values())} planned call(s) did not run: "
            + ", ".join(f"{k} {n}" for k, n in sorted(not_run.items()))
        )
    llm_failed = sum(1 for r in records if r.caller_llm_failed)
    if llm_failed:
        degraded.append(
            f"{llm_failed} call(s) ended early because the caller's LLM failed (the caller's "
            "failure, not the agent's): check the --caller-llm endpoint under this load"
        )
    llm_ms = [ms for r in records for ms in r.caller_llm_ms]
    verdicts = [r for r in records if r.status == "completed" and r.passed is False]
    per_worker = Counter(r.worker for r in placed)
    hops = hops_report(records)
    unseparated = not_separable_line(records)
    if unseparated:
        warnings.append(unseparated)
    if otlp is not None:
        warnings += [f"--otlp: {p}" for p in otlp.problems]
    return LoadReport(
        target=target,
        transport=transport,
        scenario=scenario,
        plan=plan,
        loops=loops,
        where=where,
        wall_s=round(wall_s, 2),
        placed=len(placed),
        completed=sum(1 for r in records if r.status == "completed"),
        passed=sum(1 for r in records if r.passed),
        failures={s: dict(sorted(c.items())) for s, c in sorted(failures.items())},
        failure_reasons=reasons,
        verdicts_failed=len(verdicts),
        floors_failed=dict(sorted(Counter(f for r in verdicts for f in r.failed_floors).items())),
        verdict_reason=next((w for r in verdicts for w in r.verdict_failures), None),
        latency_ms=Percentiles.of([x.latency_ms for r in records for x in r.replies]),
        latency_on_time_ms=Percentiles.of(
            [x.latency_ms for r in records for x in r.replies if x.on_time]
        ),
        latency_over_time=_windows(records),
        barge_in_yield_ms=Percentiles.of([y for r in records for y in r.barge_in_yields_ms]),
        barge_ins_planned=sum(r.barge_ins_planned for r in records),
        barge_ins_exercised=sum(r.barge_ins_exercised for r in records),
        unanswered_turns=sum(r.unanswered for r in records),
        calls_with_unanswered=sum(1 for r in records if r.unanswered),
        caller_llm_ms=Percentiles.of(llm_ms) if llm_ms or llm_failed else None,
        calls_caller_llm_failed=llm_failed,
        calls_degraded=dict(
            sorted(Counter(c for r in records for c in set(r.degraded_codes)).items())
        ),
        voices=pool_voices(v for r in records for v in r.voices),
        harness=harness,
        per_worker=dict(sorted(per_worker.items())),
        hops=hops,
        otlp=otlp,
        degraded=degraded,
        warnings=list(warnings),
        calls=list(records),
    )


def late_frames_line(h: Harness) -> str | None:
    """What caller frames sent late do to the replies timed from them (None when none was)."""
    if not h.caller_late_frames:
        return None
    return (
        f"{h.caller_late_frames} caller frames went out more than {LATE_MS:.0f} ms late (worst "
        f"{h.caller_max_send_lag_ms or 0:.0f} ms): a reply timed from a turn that ended then "
        "seems later by up to that (the harness was busy); the 'on time' row leaves those "
        "replies out"
    )


def verdicts_line(r: LoadReport) -> str | None:
    """How many completed calls failed their verdict, and on what (None when none did)."""
    if not r.verdicts_failed:
        return None
    floors = ", ".join(f"{floor} {n}" for floor, n in r.floors_failed.items())
    return (
        f"verdict failed in {r.verdicts_failed} of {r.completed} completed call(s)"
        + (f"; floors failed: {floors}" if floors else "")
        + (f"; the first call's other failure: {r.verdict_reason}" if r.verdict_reason else "")
        + " (each call's report.html shows its verdict)"
    )


def degraded_calls_line(r: LoadReport) -> str | None:
    """How many calls' own evidence is degraded, and why, by code (None when none is)."""
    calls = sum(1 for c in r.calls if c.degraded_codes)
    if not calls:
        return None
    why = ", ".join(f"{code} {n}" for code, n in r.calls_degraded.items())
    return (
        f"evidence degraded in {calls} of {len(r.calls)} call(s): {why} (each call's "
        "result.json says why; their replies are in the aggregate)"
    )


def missed_barge_ins_line(r: LoadReport) -> str | None:
    """Planned barge-ins that never happened in calls that completed: those calls do not test
    barge-in (None when each was exercised; a call cut short says so in its own line)."""
    done = [c for c in r.calls if c.status == "completed"]
    planned = sum(c.barge_ins_planned for c in done)
    missed = sum(max(0, c.barge_ins_planned - c.barge_ins_exercised) for c in done)
    if missed <= 0:
        return None
    return (
        f"{missed} of the {planned} barge-ins planned in completed calls were not exercised: "
        "those calls do not test barge-in (each call's report says why)"
    )


def missing_slots(
    records: Sequence[CallRecord],
    plan: LoadPlan,
    why: str,
    worker_of: dict[int, str],
    *,
    interrupted: bool = False,
) -> list[CallRecord]:
    """A not_run record for every planned caller that never dialled (its worker died, or the
    run was stopped before its time: ``interrupted``, a signal; ``why`` says which)."""
    dialled = {r.slot for r in records}
    return [
        CallRecord(
            slot=s.index,
            worker=worker_of.get(s.index, ""),
            status="not_run",
            kind="interrupted" if interrupted else "worker lost",
            reason=why,
            planned_s=s.offset_s,
        )
        for s in plan.slots()
        if s.index not in dialled
    ]
