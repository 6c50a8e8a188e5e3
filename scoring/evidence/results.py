"""The verdict and provenance documents: result.json (the run's result, beside the bundle's
artifacts), structured_output.json (the contract's normalised scoring output), the producer
metadata, raw_provider_trace.json and redaction_metadata.json. Models as in documents.py.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from turnscope.scoring.conversation import ConversationOutcome
from turnscope.scoring.evidence.documents import (
    ContinuityMetrics,
    ContinuityStatus,
    Document,
    omitted,
)
from turnscope.scoring.evidence.result_parts import (
    BreakdownRecord,
    CalibrationRecord,
    CallerTruth,
    ScriptReport,
    SettingsRecord,
    VerifierRecord,
    WerRecord,
)
from turnscope.scoring.turn_taking_model import TurnTaking

# --- producer metadata, raw_provider_trace.json, redaction_metadata.json ----------------------


class AsrInfo(Document):
    engine: str = ""
    model: str = ""
    compute_type: str = ""
    beam_size: int = 0
    language: str = ""
    word_timestamps: bool = False


class VadInfo(Document):
    engine: str = ""
    aggressiveness: int = 0
    frame_ms: int = 0
    energy_gate_db: float = 0.0
    end_of_turn_ms: int = 0
    refine: bool = False
    second_opinion: str | None = None


class ProducerMetadata(Document):
    """Who produced the evidence and how (seed 003's producer metadata)."""

    producer: str = "turnscope"
    producer_version: str = ""
    asr: AsrInfo = AsrInfo()
    vad: VadInfo = VadInfo()
    language: str = ""
    transport: str = ""
    streaming_mode: str = ""
    timing_evidence: str = ""
    speaker_diarization: str = ""


class RawProviderTrace(Document):
    """raw_provider_trace.json: everything the transport saw (signaling, ICE/RTP statistics,
    frame loss, device timing) and who produced the evidence."""

    schema_: str = Field("turnscope.raw_trace.v1", alias="schema")
    transport: str = ""
    source: str = ""
    error: str | None = omitted()  # why the call never started
    details: dict[str, Any] = Field(default_factory=dict)
    gaps_ms: dict[str, float] = Field(default_factory=dict)
    producer: ProducerMetadata | None = None


class Redacted(Document):
    what: str = ""
    reason: str = ""


REDACTION_POLICY = (
    "request header values and tokens are never written; audio and transcripts are kept in full"
)


class RedactionMetadata(Document):
    """redaction_metadata.json: what was deliberately left out of the bundle."""

    schema_: str = Field("turnscope.redaction.v1", alias="schema")
    redacted: list[Redacted] = Field(default_factory=list)
    policy: str = REDACTION_POLICY


# --- result.json and structured_output.json ---------------------------------------------------


class ExerciseRecord(Document):
    """Whether the call really exercised a dimension (scoring/exercise.py's ``to_dict``)."""

    exercised: bool = False
    count: int = 0
    planned: int | None = None
    note: str = ""


class TaskRecord(Document):
    """The task contract the run was scored against (scoring/contract.py's ``to_dict``)."""

    suite: str | None = None
    suite_path: str | None = None
    task_id: str | None = None
    budgets: dict[str, Any] | None = None
    required_content: list[Any] | None = None
    reference_source: str | None = None


class SourceRecord(Document):
    """What the source said about itself; ``details`` is the transport's own."""

    transport: str = ""
    description: str = ""
    realtime: bool = False
    duration_ms: float | None = None
    details: dict[str, Any] = Field(default_factory=dict)


class Counts(Document):
    """How many of each the run found (barge-ins: the caller's interrupting turns)."""

    turns: int = 0
    backchannels: int = 0
    rejected: int = 0
    utterances: int = 0
    barge_ins: int = 0


class Timings(Document):
    """The audio and what it cost (realtime_factor: wall time per second of audio)."""

    audio_ms: float = 0.0
    wall_s: float = 0.0
    asr_compute_s: float = 0.0
    realtime_factor: float = 0.0


class CallRecord(Document):
    end_reason: str | None = None


class ResultDocument(Document):
    """result.json: the verdict and everything it was reached from. A run that could not be
    scored (a call that never started) says ``verdict: error`` and why in ``error``; a scripted
    call adds its scenario, script report, caller truth, end and device calibration."""

    schema_: str = Field("turnscope.result.v1", alias="schema")
    turnscope_version: str = ""  # set by the writer (scoring does not import turnscope)
    verdict: str | None = None  # pass | fail | error
    error: str | None = omitted()
    failed_floors: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    verifier: VerifierRecord = Field(default_factory=VerifierRecord)
    exercise: dict[str, ExerciseRecord] = Field(default_factory=dict)
    not_exercised: list[str] = Field(default_factory=list)
    wer: WerRecord | None = None
    task: TaskRecord | None = None
    evidence_class: str | None = None
    source: SourceRecord | None = None
    counts: Counts | None = None
    timings: Timings | None = None
    gaps_ms: dict[str, float] = Field(default_factory=dict)
    warnings: list[str] = Field(default_factory=list)
    # Each warning's and degraded reason's code, in the same order (turnscope.reasons): what a
    # reader counts by. Left out by producers that do not give them.
    warning_codes: list[str] | None = omitted()
    degraded: list[str] = Field(default_factory=list)
    degraded_codes: list[str] | None = omitted()
    settings: SettingsRecord = Field(default_factory=SettingsRecord)
    scenario: str | None = omitted()
    script: ScriptReport | None = omitted()
    # A reacting caller's view of the outcome (scoring/conversation.py), from ``script``.
    conversation: ConversationOutcome | None = omitted()
    caller_truth: CallerTruth | None = omitted()
    call: CallRecord | None = omitted()
    calibration: CalibrationRecord | None = omitted()
    # Each reply's latency split into endpointing / processing / delivery by the agent's own
    # events (scoring/latency.py), when the agent told any.
    latency_breakdown: BreakdownRecord | None = omitted()
    # Turn-taking in Full-Duplex-Bench's terms (scoring/turn_taking.py).
    turn_taking: TurnTaking | None = omitted()


class ContinuitySummary(Document):
    status: ContinuityStatus | None = None
    metrics: ContinuityMetrics = ContinuityMetrics()


class RunSummary(Document):
    evidence_class: str | None = None
    counts: Counts | None = None
    timings: Timings | None = None
    warnings: list[str] = Field(default_factory=list)
    degraded: list[str] = Field(default_factory=list)


class StructuredResult(Document):
    """The verifier result, WER (with its word alignment), the task contract, the continuity
    status and the run summary, with the producer metadata."""

    verdict: str | None = None
    error: str | None = omitted()
    failed_floors: list[str] = Field(default_factory=list)
    failures: list[str] = Field(default_factory=list)
    verifier: VerifierRecord = Field(default_factory=VerifierRecord)
    exercise: dict[str, ExerciseRecord] = Field(default_factory=dict)
    wer: WerRecord | None = None  # with each channel's word alignment
    task: TaskRecord | None = None
    continuity: ContinuitySummary | None = None
    run: RunSummary | None = None
    producer: ProducerMetadata | None = None


class StructuredOutput(Document):
    """structured_output.json: ``{"schema_ref", "output"}`` as the contract's fixtures have it."""

    schema_ref: str = "turnscope.structured_output.v1"
    output: StructuredResult = StructuredResult()
