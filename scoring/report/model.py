"""What a bundle's report shows, read once from the bundle: envelopes, turns, and the verifier's
view of them (latency gaps, barge-ins, overlaps) with the scores, WER and continuity beside.

The verifier's view is ``verifier_facts`` on the bundle's turns, in their list order, so the
picture explains the score rather than a second opinion of it. Every optional piece may be
missing or malformed; the report then says so in ``notes`` instead of failing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from turnscope.asr.assembly import Backchannel
from turnscope.scoring.evidence.documents import (
    GapCause,
    LiveContinuityReport,
    Transcript,
    TranscriptTurn,
    UtteranceRecord,
    WaveformTimeline,
)
from turnscope.scoring.evidence.results import (
    ResultDocument,
    RunSummary,
    StructuredOutput,
    TaskRecord,
)
from turnscope.scoring.exercise import Exercise, exercise_from_dict
from turnscope.scoring.report.conversation import ConversationView, conversation_view
from turnscope.scoring.report.reading import (
    Envelope,
    check_bundle,
    envelope,
    number,
    read_document,
    wav_ms,
)
from turnscope.scoring.verifier import DEFAULT_MAX_LATENCY_MS, Facts, verifier_facts
from turnscope.scoring.verifier import failed_floors as verifier_failed_floors

CHANNELS = ("caller", "agent")


@dataclass(frozen=True)
class TurnView:
    index: int
    speaker: str
    start_ms: float
    end_ms: float
    text: str
    interrupt: bool


@dataclass(frozen=True)
class LatencyGap:
    """An agent turn and the caller turn before it in list order (the verifier's pairing)."""

    caller: int
    agent: int
    caller_end_ms: float
    agent_start_ms: float
    gap_ms: int
    ok: bool


@dataclass(frozen=True)
class BargeIn:
    """A caller interrupt; ``agent`` is the agent turn it overlapped (None: nothing to yield)."""

    caller: int
    agent: int | None
    at_ms: float
    yield_ms: int | None
    ok: bool | None


@dataclass(frozen=True)
class Overlap:
    """Both channels' turns at once: a barge-in, or the agent talking over the caller."""

    caller: int
    agent: int
    start_ms: float
    end_ms: float
    kind: str  # "barge_in" | "talk_over"


@dataclass(frozen=True)
class AudioGap:
    channel: str
    start_ms: float
    duration_ms: float
    cause: GapCause | None = None  # lost in transit, or not sent, where the source could tell


@dataclass
class ReportModel:
    bundle: Path
    duration_ms: float
    max_latency_ms: int
    envelopes: dict[str, Envelope | None]
    voiced: dict[str, list[tuple[float, float]]]
    turns: list[TurnView]
    facts: Facts  # the verifier's pairs and counts on these turns; the rest renders them
    gaps: list[LatencyGap]
    barge_ins: list[BargeIn]
    overlaps: list[Overlap]
    harmful: set[int]  # agent turns the verifier counts as talking over the caller
    backchannels: list[Backchannel]
    audio_gaps: list[AudioGap]
    verdict: str | None  # pass | fail | error (the run could not be scored) | None
    error: str | None
    verifier: dict[str, Any]
    failed_floors: list[str]
    required_content: list[str]
    wer: dict[str, Any] | None
    continuity: dict[str, Any]
    degraded: list[str]
    warnings: list[str]
    run: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    exercise: dict[str, Exercise] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # why it failed beyond the floors
    latency_breakdown: dict[str, Any] | None = None  # result.json's, when the agent told any
    agent_events: list[tuple[float, str]] = field(default_factory=list)  # (ms, name): RTVI
    conversation: ConversationView | None = None  # a reacting caller's decisions and outcome
    voices: list[dict[str, Any]] = field(default_factory=list)  # caller voices the ASR heard
    conditions: dict[str, Any] | None = None  # the caller's line (result.json script.acoustics)


def _heard_voices(script: Any) -> list[dict[str, Any]]:
    """The caller voices result.json's script says the project's ASR heard (``asr``)."""
    voices = script.get("voices") if isinstance(script, Mapping) else None
    return [v for v in voices or [] if isinstance(v, Mapping) and isinstance(v.get("asr"), Mapping)]


def _caller_conditions(script: Any) -> dict[str, Any] | None:
    """What the caller's line did to its speech, as result.json's script records it (its noise,
    room, codec, losses, dysfluencies and seeds: ``acoustics``); None for a plain caller."""
    found = script.get("acoustics") if isinstance(script, Mapping) else None
    return dict(found) if isinstance(found, Mapping) and found else None


def _turns(doc: Transcript) -> list[TurnView]:
    return [
        TurnView(i, t.speaker, number(t.start_ms), number(t.end_ms), t.text, t.interrupt)
        for i, t in enumerate(doc.turns)
    ]


def _voiced(doc: Transcript) -> dict[str, list[tuple[float, float]]]:
    """Every voiced span the VAD found, per channel (rejected utterances included)."""
    out: dict[str, list[tuple[float, float]]] = {ch: [] for ch in CHANNELS}
    sources: Sequence[UtteranceRecord | TranscriptTurn] = doc.utterances or doc.turns
    for u in sources:
        ch = u.channel or getattr(u, "speaker", "")
        if ch in out:
            out[ch] += [(number(a), number(b)) for a, b in u.spans]
    return out


# --- the verifier's view ----------------------------------------------------------------------


def facts_of(turns: Sequence[TurnView], max_latency_ms: int, required: Sequence[str]) -> Facts:
    """The verifier's facts on the turns shown; their list indices are positions in ``turns``."""
    dialogue = [
        {
            "speaker": t.speaker,
            "start_ms": t.start_ms,
            "end_ms": t.end_ms,
            "text": t.text,
            "interrupt": t.interrupt,
        }
        for t in turns
    ]
    budgets = {"max_latency_ms": max_latency_ms}
    return verifier_facts(dialogue, budgets=budgets, required_content=required)


def latency_gaps(turns: Sequence[TurnView], facts: Facts) -> list[LatencyGap]:
    """Each latency pairing the verifier timed, placed on the turns' own times."""
    return [
        LatencyGap(
            turns[g.caller].index,
            turns[g.agent].index,
            turns[g.caller].end_ms,
            turns[g.agent].start_ms,
            g.gap_ms,
            g.ok,
        )
        for g in facts.gaps
    ]


def overlaps(
    turns: Sequence[TurnView], facts: Facts
) -> tuple[list[Overlap], list[BargeIn], set[int]]:
    """Overlaps, barge-ins with how fast the agent yielded, and the harmful agent turns."""
    found: list[Overlap] = []
    barges: list[BargeIn] = []
    for o in facts.overlaps:
        c, a = turns[o.caller], turns[o.agent]
        kind = "barge_in" if o.interrupt else "talk_over"
        lo, hi = max(a.start_ms, c.start_ms), min(a.end_ms, c.end_ms)
        found.append(Overlap(c.index, a.index, lo, hi, kind))
        if o.interrupt:
            barges.append(BargeIn(c.index, a.index, c.start_ms, o.yield_ms, o.handled))
    for i in facts.unmet_interrupts:  # marked, though the verifier has nothing to score
        barges.append(BargeIn(turns[i].index, None, turns[i].start_ms, None, None))
    barges.sort(key=lambda b: (b.at_ms, b.caller))
    return found, barges, {turns[i].index for i in facts.harmful}


# --- assembling the model ---------------------------------------------------------------------


def _dedupe(items: Sequence[Any]) -> list[str]:
    return list(dict.fromkeys(str(x) for x in items if x))


def _duration(
    timeline: WaveformTimeline, transcript: Transcript, turns: Sequence[TurnView]
) -> float:
    cands = [number(transcript.duration_ms)]
    cands += [number(c.duration_ms) for c in timeline.channels]
    cands += [t.end_ms for t in turns]
    return max(cands, default=0.0)


def seconds_per_row(duration_ms: float) -> float:
    """Timeline row length in ms: a short call fills one row; long calls wrap a minute per row,
    and very long ones widen rows so there are never more than ~30 (HTML and PNG stay small)."""
    if duration_ms <= 60_000:
        return max(10_000.0, float(np.ceil(duration_ms / 5000.0) * 5000.0))
    return 60_000.0 * max(1.0, float(np.ceil(duration_ms / (30 * 60_000.0))))


def _json(doc: Any) -> dict[str, Any]:
    """A part of a document as the views take it: only what the bundle said (nothing for None)."""
    return doc.model_dump(mode="json", exclude_unset=True) if doc is not None else {}


def _json_or_none(doc: Any) -> dict[str, Any] | None:
    return None if doc is None else _json(doc)


def read_report(bundle: Path, plot_px: int) -> ReportModel:
    """Read everything the report needs; ``plot_px`` sets the envelope resolution (~1 bin/px).
    turnscope's documents and other producers' alike, through the models turnscope writes with;
    result.json (turnscope's own) fills in what the structured output does not say."""
    paths = check_bundle(bundle)
    notes: list[str] = []
    transcript = read_document(Transcript, paths["transcript_json"], notes)
    timeline = read_document(WaveformTimeline, paths["waveform_timeline_json"], notes)
    structured = read_document(StructuredOutput, paths["structured_output_json"], notes).output
    continuity_doc = read_document(
        LiveContinuityReport, paths["live_continuity_report_json"], notes
    )
    result = read_document(ResultDocument, bundle / "result.json", notes)

    turns = _turns(transcript)
    wavs = {ch: paths[f"{ch}_audio"] for ch in CHANNELS}
    duration = max(_duration(timeline, transcript, turns), *(wav_ms(p) for p in wavs.values()))
    bin_ms = max(10.0, round(seconds_per_row(duration) / plot_px))
    envelopes = {ch: envelope(p, bin_ms, notes) for ch, p in wavs.items()}

    task = structured.task or result.task or TaskRecord()
    verifier = _json(structured.verifier) or _json(result.verifier)
    budget = (task.budgets or {}).get("max_latency_ms")
    if budget is None:
        budget = (verifier.get("raw") or {}).get("max_latency_ms", DEFAULT_MAX_LATENCY_MS)
    max_latency = int(number(budget, DEFAULT_MAX_LATENCY_MS))

    required = [str(k) for k in task.required_content or []]
    facts = facts_of(turns, max_latency, required)
    found, barges, harmful = overlaps(turns, facts)
    run = structured.run or RunSummary()
    reported = _json(continuity_doc)
    continuity = {
        **_json(structured.continuity),
        **{k: reported[k] for k in ("status", "metrics", "caveats", "thresholds") if k in reported},
    }
    degraded = _dedupe([*run.degraded, *result.degraded])
    if continuity.get("status") == "degraded" and not degraded:  # another producer's bundle
        degraded = _dedupe([*degraded, *(continuity.get("caveats") or [])])
    agent_starts = [t.start_ms for t in turns if t.speaker == "agent"]
    return ReportModel(
        latency_breakdown=_json(result.latency_breakdown) or None,
        conversation=conversation_view(
            _json_or_none(result.script), result.conversation, agent_starts
        ),
        bundle=bundle,
        duration_ms=duration,
        max_latency_ms=max_latency,
        envelopes=envelopes,
        voiced=_voiced(transcript),
        turns=turns,
        facts=facts,
        gaps=latency_gaps(turns, facts),
        barge_ins=barges,
        overlaps=found,
        harmful=harmful,
        backchannels=[
            Backchannel(
                b.speaker or "caller",
                number(b.start_ms),
                number(b.end_ms),
                b.text,
                b.utterance,
            )
            for b in transcript.backchannels
        ],
        agent_events=[
            (number(m.offset_ms), str(m.text or ""))
            for m in timeline.markers
            if m.key == "agent_event"
        ],
        audio_gaps=[
            AudioGap(str(m.channel), number(m.offset_ms), number(m.duration_ms), m.cause)
            for m in timeline.markers
            if m.key == "audio_gap"
        ],
        verdict=structured.verdict or result.verdict,
        error=structured.error or result.error,
        verifier=verifier,
        failed_floors=list(
            structured.failed_floors
            or result.failed_floors
            or verifier_failed_floors(verifier.get("result") or {})
        ),
        required_content=required,
        wer=_json_or_none(structured.wer if "wer" in structured.model_fields_set else result.wer),
        voices=_heard_voices(_json_or_none(result.script)),
        conditions=_caller_conditions(_json_or_none(result.script)),
        continuity=continuity,
        degraded=degraded,
        warnings=_dedupe(run.warnings or result.warnings),
        run={
            "evidence_class": run.evidence_class or result.evidence_class,
            "source": _json(result.source),
            "task": _json(task),
            "producer": _json(structured.producer),
            "counts": _json(run.counts or result.counts),
        },
        notes=notes,
        exercise=exercise_from_dict(
            {d: _json(x) for d, x in (structured.exercise or result.exercise).items()}
        ),
        failures=_dedupe(structured.failures or result.failures),
    )
