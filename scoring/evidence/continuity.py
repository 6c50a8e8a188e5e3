"""The live continuity report (agentclash.voice.live_continuity_eval.v1) from captured turns.

"Speech" is the caller, "output" the agent. Definitions (all from the captured channels):
- speech_start_count / speech_stop_count: caller turns (backchannels included) started / ended;
- output_event_count: agent turns (output starts);
- first-audio latency: for each caller turn, the time from its end to the first agent output
  that starts after it and before the caller's next turn (negative: the agent started early,
  counted as 0 ms); median and p90;
- output gaps: silences inside agent turns (between voiced spans); max and median;
- speech_no_output_count / ratio: caller turns the agent never answered before the caller's
  next turn or the end of the call;
- speech_start_during_output_count: caller speech (turns and backchannels) that started while
  the agent was speaking.
Status: degraded when the evidence is (frames lost, a channel missing, uncalibrated device
timing); otherwise failed, warn or passed from the thresholds below, configurable per task
(a task's ``continuity`` block).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from turnscope.scoring.evidence.documents import (
    ContinuityMetrics,
    ContinuityThresholds,
    LiveContinuityReport,
)

NOTE = "computed by turnscope from the captured caller and agent channels (VAD turns)"


def _ms(x: float) -> float:
    return round(max(0.0, float(x)), 1)


def continuity_metrics(
    turns: Sequence[Mapping[str, Any]],
    backchannels: Sequence[Mapping[str, Any]],
    output_spans: Sequence[Sequence[tuple[float, float]]],
) -> ContinuityMetrics:
    """Metrics from verifier-shape turns, backchannels, and each agent turn's voiced spans."""
    callers = sorted((t for t in turns if t["speaker"] == "caller"), key=lambda t: t["start_ms"])
    agents = sorted((t for t in turns if t["speaker"] == "agent"), key=lambda t: t["start_ms"])
    latencies: list[float] = []
    unanswered = 0
    for i, c in enumerate(callers):
        nxt = callers[i + 1]["start_ms"] if i + 1 < len(callers) else float("inf")
        replies = [a for a in agents if a["start_ms"] > c["start_ms"] and a["start_ms"] < nxt]
        if replies:
            latencies.append(max(0.0, replies[0]["start_ms"] - c["end_ms"]))
        else:
            unanswered += 1
    gaps = [b[0] - a[1] for spans in output_spans for a, b in itertools.pairwise(spans)]
    speech_starts = [t["start_ms"] for t in callers] + [b["start_ms"] for b in backchannels]
    during = sum(1 for s in speech_starts if any(a["start_ms"] < s < a["end_ms"] for a in agents))
    metrics = ContinuityMetrics(
        speech_start_count=len(speech_starts),
        speech_stop_count=len(callers) + len(backchannels),
        output_event_count=len(agents),
        speech_no_output_count=unanswered,
        speech_no_output_ratio=round(unanswered / len(callers), 4) if callers else 0.0,
        speech_start_during_output_count=during,
    )
    if latencies:
        metrics.median_first_audio_ms = _ms(np.median(latencies))
        metrics.p90_first_audio_ms = _ms(np.percentile(latencies, 90))
    if gaps:
        metrics.max_output_gap_ms = _ms(max(gaps))
        metrics.median_output_gap_ms = _ms(np.median(gaps))
    elif agents:
        metrics.max_output_gap_ms = metrics.median_output_gap_ms = 0.0
    return metrics


def continuity_report(
    turns: Sequence[Mapping[str, Any]],
    backchannels: Sequence[Mapping[str, Any]],
    output_spans: Sequence[Sequence[tuple[float, float]]],
    *,
    degraded_reasons: Sequence[str] = (),
    warnings: Sequence[str] = (),
    thresholds: ContinuityThresholds | None = None,
) -> LiveContinuityReport:
    """The report, its status and why (the run's warnings, e.g. an agent that did not greet,
    are caveats beside the degraded reasons)."""
    th = thresholds or ContinuityThresholds()
    m = continuity_metrics(turns, backchannels, output_spans)
    caveats = list(dict.fromkeys([*degraded_reasons, *warnings]))
    if not any(t["speaker"] == "agent" for t in turns):
        caveats.append("no agent speech was detected in the agent channel")
    m.evidence_status = "degraded" if degraded_reasons else "available"
    p90 = m.p90_first_audio_ms or 0.0
    gap = m.max_output_gap_ms or 0.0
    ratio = m.speech_no_output_ratio
    if degraded_reasons:
        status = "degraded"
    elif (
        p90 > th.fail_p90_first_audio_ms
        or gap > th.fail_max_output_gap_ms
        or (ratio > th.fail_no_output_ratio)
    ):
        status = "failed"
    elif (
        p90 > th.warn_p90_first_audio_ms
        or gap > th.warn_max_output_gap_ms
        or (ratio > th.warn_no_output_ratio)
    ):
        status = "warn"
    else:
        status = "passed"
    return LiveContinuityReport(
        status=status,
        passed=status == "passed",
        metrics=m,
        caveats=caveats,
        agentclash_notes=[NOTE],
        thresholds=th,
    )
