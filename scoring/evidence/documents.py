"""The JSON documents of a bundle, one pydantic model each: built by the run, written with
``model_dump(mode="json")``, read back by the report through the same model.

Fields are declared in the order they are written, and every field has its empty value as
default: a failed set-up writes the same models with nothing measured, and a reader meets a
missing piece as its empty value. Parts another module owns the shape of (the verifier's result,
WER, settings, the latency split, a scripted call's report) are ``Open`` models
(result_parts.py: the keys readers rely on typed, any other kept as given); a transport's own
details stay a plain ``dict[str, Any]``.

Two ways in: building (``Model(...)``) and ``model_validate`` are strict (an unknown key or a
wrong type raises, so a document cannot drift from its model unnoticed); ``Model.read(data)``
tolerates other producers' documents: unknown keys are ignored, a malformed value becomes its
empty value (and is named in ``repaired``), a malformed list item is left out.

This module: the base, transcript.json, waveform_timeline.json, live_continuity_report.json;
results.py: result.json, structured_output.json, raw_provider_trace.json, redaction_metadata.json;
manifest.py: the manifest. The contract's rules for any producer's JSON: rules.py.
"""

from __future__ import annotations

import contextlib
import functools
from enum import StrEnum
from typing import Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    field_validator,
    model_serializer,
    model_validator,
)

CONTRACT_VERSION = "2026-05-13"  # the AgentClash schema_version of the manifest and reports
CONTINUITY_TYPE = "agentclash.voice.live_continuity_eval.v1"
ContinuityStatus = Literal["passed", "warn", "failed", "degraded"]
EvidenceStatus = Literal["available", "degraded"]
# A JSON number kept as written: turnscope writes whole ms for turns, other producers may not.
Number = int | float
Span = tuple[float, float]


_OMITTED = "x-omitted-when-none"


def omitted() -> Any:
    """A field written only when it has a value: None leaves the key out of the JSON."""
    return Field(default=None, json_schema_extra={_OMITTED: True})


@functools.cache
def _layout(cls: type[BaseModel]) -> tuple[frozenset[str], dict[str, str]]:
    """A model's fields left out when None, and its field names written under another name."""
    fields = cls.model_fields
    omit = frozenset(
        n
        for n, f in fields.items()
        if isinstance(f.json_schema_extra, dict) and _OMITTED in f.json_schema_extra
    )
    return omit, {n: f.alias for n, f in fields.items() if f.alias and f.alias != n}


def _tolerant(info: ValidationInfo) -> list[str] | None:
    """The list of repaired field names when reading tolerantly, else None."""
    context = info.context
    return context.get("repaired") if isinstance(context, dict) else None


D = TypeVar("D", bound="Document")


def _takes_lists(handler: ValidatorFunctionWrapHandler) -> bool:
    try:
        handler([])
    except ValidationError:
        return False
    return True


class Document(BaseModel):
    """A document or part of one. See the module docstring for strict and tolerant reading."""

    model_config = ConfigDict(extra="forbid")

    @model_serializer(mode="wrap")
    def _as_written(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        # By hand rather than Field(exclude_if=...) and serialize_by_alias (pydantic 2.11+):
        # the project supports pydantic 2.6.
        omit, aliases = _layout(type(self))
        return {
            aliases.get(k, k): v for k, v in handler(self).items() if not (v is None and k in omit)
        }

    @model_validator(mode="before")
    @classmethod
    def _ignore_unknown(cls, data: Any, info: ValidationInfo) -> Any:
        forbids = cls.model_config.get("extra") == "forbid"
        if forbids and _tolerant(info) is not None and isinstance(data, dict):
            known = set(cls.model_fields) | set(_layout(cls)[1].values())
            return {k: v for k, v in data.items() if k in known}
        return data

    @field_validator("*", mode="wrap")
    @classmethod
    def _empty_when_malformed(
        cls, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        repaired = _tolerant(info)
        if repaired is None:
            return handler(value)
        try:
            return handler(value)
        except ValidationError:
            name = str(info.field_name)
            repaired.append(name)
            if isinstance(value, list) and _takes_lists(handler):  # keep the good items
                kept: list[Any] = []
                for item in value:
                    with contextlib.suppress(ValidationError):
                        kept += handler([item])
                return kept
            return cls.model_fields[name].get_default(call_default_factory=True)

    @classmethod
    def read(cls: type[D], data: Any, repaired: list[str] | None = None) -> D:
        """Tolerant reading (another producer's document, or a damaged one); the names of the
        fields that were malformed are appended to ``repaired``."""
        names = repaired if repaired is not None else []
        try:
            return cls.model_validate(data, context={"repaired": names})
        except ValidationError:  # not an object at all
            names.append(cls.__name__)
            return cls()


# --- transcript.json --------------------------------------------------------------------------


class Word(Document):
    text: str = ""
    start_ms: float = 0.0
    end_ms: float = 0.0
    probability: float = 0.0


class TurnAsr(Document):
    decided_ms: float = 0.0  # stream time the turn's last utterance was decided
    compute_ms: float = 0.0


class TranscriptTurn(Document):
    """The verifier's turn (speaker .. interrupt) with the contract's turn_index and language
    and what turnscope knows beside it."""

    turn_index: int = 0
    speaker: str = ""
    start_ms: Number = 0
    end_ms: Number = 0
    text: str = ""
    interrupt: bool = False
    channel: str = ""
    confidence: float | None = None  # mean word probability, when words are known
    words: list[Word] = []
    utterances: list[str] = []  # endpointer utterance keys
    spans: list[Span] = []  # voiced spans
    asr: TurnAsr | None = None
    language: str = ""
    # A line the caller sent that the ASR heard no words of: its turn, with no text.
    unheard: bool | None = omitted()


class BackchannelRecord(Document):
    """A short caller reaction kept out of the verifier's turns."""

    speaker: str = ""
    start_ms: Number = 0
    end_ms: Number = 0
    text: str = ""
    utterance: str = ""  # the endpointer utterance it was heard in


class RejectedRecord(Document):
    """An utterance that became no turn (``reason``: why)."""

    utterance: str = ""  # its endpointer utterance key
    start_ms: float = 0.0
    end_ms: float = 0.0
    reason: str = ""


class UtteranceAsr(Document):
    compute_ms: float | None = None
    avg_logprob: float | None = None
    no_speech_prob: float | None = None
    confidence: float | None = None
    silero_speech_ratio: float | None = None
    context_ms: float | None = None  # the previous utterance decoded in front of it
    rejected: str | None = None
    # A live caller turn's decode waited this long (call ms) for the agent's answer
    # (turnscope/answer_hold.py); absent where nothing waited.
    held_ms: float | None = omitted()


class UtteranceRecord(Document):
    """One endpointer utterance with its voiced spans and what the ASR made of it."""

    utterance: str = ""
    channel: str = ""
    start_ms: float = 0.0
    end_ms: float = 0.0
    spans: list[Span] = []
    decided_ms: float = 0.0
    text: str = ""
    asr: UtteranceAsr = UtteranceAsr()


class TranscriptEvent(Document):
    """An endpointer event: speech_start (first_in_utterance), start_moved (the open
    utterance's speech starts at at_ms, past a recording's room tone), speech_stop, end_of_turn
    (utterance, start_ms) or gap (start_ms, no decided_ms); at_ms is the refined audio time.
    A call event: dtmf (digit), at_ms when the key press was sent."""

    type: str = ""
    channel: str = ""
    utterance: str | None = omitted()
    start_ms: float | None = omitted()
    at_ms: float = 0.0
    decided_ms: float | None = omitted()
    first_in_utterance: bool | None = omitted()
    digit: str | None = omitted()


class Transcript(Document):
    """transcript.json: what was said and when (milliseconds on the call clock)."""

    schema_: str = Field("turnscope.transcript.v1", alias="schema")
    language: str = ""
    duration_ms: float = 0.0
    turns: list[TranscriptTurn] = []
    backchannels: list[BackchannelRecord] = []
    rejected: list[RejectedRecord] = []
    utterances: list[UtteranceRecord] = []
    events: list[TranscriptEvent] = []


# --- waveform_timeline.json -------------------------------------------------------------------


class TimelineChannel(Document):
    channel: str = ""
    artifact_key: str = ""
    duration_ms: float = 0.0


class GapCause(StrEnum):
    """Why an audio gap has no audio, where the source could tell (a WebRTC call's agent)."""

    LOST = "lost_in_transit"  # packets the RTP sequence numbers say were lost
    NOT_SENT = "not_sent"  # the sender sent nothing there (DTX in a pause): silence


class Marker(Document):
    """A moment on the timeline; which other fields it carries depends on its key."""

    key: str = ""  # speech_start/stop (caller), output_start/stop (agent), audio_gap, ...
    offset_ms: float = 0.0
    duration_ms: float | None = omitted()  # audio_gap, output_gap, backchannel
    channel: str | None = omitted()  # speech and output markers, audio_gap
    decided_ms: float | None = omitted()  # speech and output markers: when it was decided
    turn_index: int | None = omitted()  # output_gap, barge_in
    agent_stopped_after_ms: int | None = omitted()  # barge_in: the verifier's yield
    text: str | None = omitted()  # backchannel
    cause: GapCause | None = omitted()  # audio_gap, where the source could tell


class TimelineTurn(Document):
    turn_index: int = 0
    speaker: str = ""
    start_ms: float = 0.0
    end_ms: float = 0.0
    interrupt: bool = False


class WaveformTimeline(Document):
    """waveform_timeline.json: the channels, their markers, and the turns."""

    schema_: str = Field("turnscope.waveform_timeline.v1", alias="schema")
    channels: list[TimelineChannel] = []
    markers: list[Marker] = []
    turns: list[TimelineTurn] = []


# --- live_continuity_report.json --------------------------------------------------------------


class ContinuityThresholds(Document):
    """When the report says warn or failed (documented defaults; per task overridable)."""

    # p90 first-audio latency (ms) above which the report warns / fails
    warn_p90_first_audio_ms: float = 1200.0
    fail_p90_first_audio_ms: float = 2500.0
    # the longest silence inside an agent turn (ms)
    warn_max_output_gap_ms: float = 1500.0
    fail_max_output_gap_ms: float = 3000.0
    # the share of caller turns the agent never answered
    warn_no_output_ratio: float = 0.0
    fail_no_output_ratio: float = 0.25

    @classmethod
    def from_task(cls, task: dict[str, Any] | None) -> ContinuityThresholds:
        block = (task or {}).get("continuity") or {}
        return cls(**{k: float(v) for k, v in block.items() if k in cls.model_fields})


class ContinuityMetrics(Document):
    """The metrics seed 003 names (latencies and gaps only when there were any); the contract
    leaves metrics open, so another producer's extra metrics are kept."""

    model_config = ConfigDict(extra="allow")

    speech_start_count: int = 0  # caller turns and backchannels started
    speech_stop_count: int = 0  # ... and ended
    output_event_count: int = 0  # agent turns
    speech_no_output_count: int = 0  # caller turns the agent never answered
    speech_no_output_ratio: float = 0.0
    speech_start_during_output_count: int = 0  # caller speech begun while the agent spoke
    # from a caller turn's end to the agent's first output after it
    median_first_audio_ms: float | None = omitted()
    p90_first_audio_ms: float | None = omitted()
    # silences inside agent turns
    max_output_gap_ms: float | None = omitted()
    median_output_gap_ms: float | None = omitted()
    evidence_status: EvidenceStatus = "available"  # degraded: lost frames, a missing channel ...


class LiveContinuityReport(Document):
    """live_continuity_report.json (agentclash.voice.live_continuity_eval.v1); ``thresholds`` is
    turnscope's addition."""

    schema_version: str = CONTRACT_VERSION
    type: str = CONTINUITY_TYPE
    status: ContinuityStatus | None = None
    passed: bool = False
    metrics: ContinuityMetrics = ContinuityMetrics()
    caveats: list[str] = []
    agentclash_notes: list[str] = []
    thresholds: ContinuityThresholds | None = None
