"""The documents a run writes, built from the pipeline's result as the models of
scoring/evidence (documents.py, results.py) that the report reads them back through.

transcript.json (schema "turnscope.transcript.v1"):
  turns: the verifier's turns {speaker, start_ms, end_ms, text, interrupt} in start order, with
         turn_index and language (the contract's turn fields), channel, confidence (mean word
         probability), words [{text, start_ms, end_ms, probability}], utterances (endpointer
         utterance keys), spans and asr {decided_ms, compute_ms};
  backchannels: [{speaker, start_ms, end_ms, text, utterance}] (kept out of the verifier);
  rejected: utterances that became no turn, with the reason;
  utterances: every endpointer utterance with its voiced spans and ASR metadata (held_ms: how
              long a live caller turn's decode waited for the agent's answer);
  events: every endpointer event (speech_start, start_moved, speech_stop, end_of_turn, gap) with
          the refined audio time (at_ms) and the stream time it was decided (decided_ms).
All times are milliseconds on the call clock (0 = start of the recording or call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from turnscope import __version__
from turnscope.pipeline import PipelineResult, RunNote
from turnscope.reasons import Severity
from turnscope.scoring.contract import Contract
from turnscope.scoring.conversation import call_conversation
from turnscope.scoring.evidence.documents import (
    LiveContinuityReport,
    Transcript,
    UtteranceAsr,
    UtteranceRecord,
    WaveformTimeline,
)
from turnscope.scoring.evidence.results import (
    AsrInfo,
    ContinuitySummary,
    Counts,
    ProducerMetadata,
    RawProviderTrace,
    Redacted,
    RedactionMetadata,
    ResultDocument,
    RunSummary,
    SourceRecord,
    StructuredOutput,
    StructuredResult,
    Timings,
    VadInfo,
)
from turnscope.scoring.outcome import Outcome
from turnscope.scoring.turn_taking import turn_taking_of
from turnscope.scoring.voice_wer import voices_heard


def rounded(x: float | None, nd: int = 1) -> float | None:
    """``x`` to ``nd`` decimals, as documents write times (None stays None)."""
    return None if x is None else round(x, nd)


def utterance_records(result: PipelineResult) -> list[UtteranceRecord]:
    out = []
    for h in result.heard:
        tr = h.transcription
        out.append(
            UtteranceRecord(
                utterance=h.key,
                channel=h.channel,
                start_ms=rounded(h.start_ms),
                end_ms=rounded(h.end_ms),
                spans=[(rounded(s.start_ms), rounded(s.end_ms)) for s in h.spans],
                decided_ms=rounded(h.decided_ms),
                text=tr.text,
                asr=UtteranceAsr(
                    compute_ms=rounded(tr.asr_ms),
                    avg_logprob=rounded(tr.avg_logprob, 4),
                    no_speech_prob=rounded(tr.no_speech_prob, 4),
                    confidence=rounded(tr.confidence, 4),
                    silero_speech_ratio=rounded(tr.speech_ratio, 3),
                    context_ms=rounded(tr.context_ms),
                    rejected=tr.rejected,
                    held_ms=rounded(h.held_ms) if h.held_ms else None,
                ),
            )
        )
    return out


def _with_call_events(
    events: Sequence[Mapping[str, Any]], call_events: Sequence[Mapping[str, Any]]
) -> list[Mapping[str, Any]]:
    """The endpointer's events (in the order decided) with the call's own (a key press) put
    in at their time."""
    out = list(events)
    for ev in call_events:
        i = next((k for k, e in enumerate(out) if e.get("at_ms", 0.0) > ev["at_ms"]), len(out))
        out.insert(i, ev)
    return out


def transcript_document(result: PipelineResult, events: Sequence[Mapping[str, Any]]) -> Transcript:
    a = result.assembly
    language = result.settings.asr.language
    return Transcript(
        language=language,
        duration_ms=rounded(result.audio_ms),
        turns=[{"turn_index": i, **t, "language": language} for i, t in enumerate(a.dialogue())],
        backchannels=[b.to_dict() for b in a.backchannels],
        rejected=[
            {
                "utterance": r.utterance,
                "start_ms": rounded(r.start_ms),
                "end_ms": rounded(r.end_ms),
                "reason": r.reason,
            }
            for r in a.rejected
        ],
        utterances=utterance_records(result),
        events=_with_call_events(events, result.info.events),
    )


def result_document(
    result: PipelineResult,
    contract: Contract,
    outcome: Outcome,
    *,
    evidence_class: str,
    extra: Mapping[str, Any] | None = None,
) -> ResultDocument:
    """The verdict and what it was reached from; ``extra`` adds a scripted call's fields. Two
    channels holding one recording are not scored: ``verdict: error``, the reason in ``error``
    and its code in ``source.details.channels_alike``."""
    if result.channels_alike is not None:
        fields = _run_fields(result, contract, evidence_class=evidence_class, extra=extra)
        return ResultDocument(verdict="error", error=result.channels_alike.message(), **fields)
    return ResultDocument(
        verdict="pass" if outcome.passed else "fail",
        failed_floors=outcome.failed_floors,
        failures=outcome.failures,
        verifier=outcome.verifier,
        exercise={d: e.to_dict() for d, e in outcome.exercise.items()},
        not_exercised=outcome.not_exercised,
        wer=outcome.wer.to_dict() if outcome.wer else None,
        **_run_fields(result, contract, evidence_class=evidence_class, extra=extra),
    )


def unscored_document(
    result: PipelineResult,
    contract: Contract,
    error: str,
    *,
    evidence_class: str,
    extra: Mapping[str, Any] | None = None,
) -> ResultDocument:
    """The result of a captured run that could not be scored (``error`` says why): ``verdict:
    error``, with everything about the run that is known."""
    fields = _run_fields(result, contract, evidence_class=evidence_class, extra=extra)
    fields["degraded"] = [*fields["degraded"], error]
    fields["degraded_codes"] = [*fields["degraded_codes"], RunNote.NOT_SCORED.value]
    return ResultDocument(verdict="error", error=error, **fields)


def _run_fields(
    result: PipelineResult,
    contract: Contract,
    *,
    evidence_class: str,
    extra: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """result.json's fields about the run itself, whatever its verdict."""
    info = result.info
    a = result.assembly
    script, dialogue = (extra or {}).get("script"), a.dialogue()
    if script:  # how the project's ASR heard each caller voice (scoring/voice_wer.py)
        script = voices_heard(script, dialogue, result.settings.asr.model)
        extra = {**(extra or {}), "script": script}
    reported = info.details.get("reported_outcome")
    conversation = call_conversation(script, contract, dialogue, reported) if script else None
    details = info.details
    if result.channels_alike is not None:  # its code beside the transport's own details
        details = {**details, "channels_alike": result.channels_alike.to_dict()}
    found = result.findings
    return dict(
        turnscope_version=__version__,
        task=contract.to_dict(),
        evidence_class=evidence_class,
        source=SourceRecord(
            transport=info.transport,
            description=info.description,
            realtime=info.realtime,
            duration_ms=rounded(info.duration_ms),
            details=details,
        ),
        counts=Counts(
            turns=len(a.turns),
            backchannels=len(a.backchannels),
            rejected=len(a.rejected),
            utterances=len(result.heard),
            barge_ins=sum(1 for t in a.turns if t.interrupt),
        ),
        timings=Timings(
            audio_ms=rounded(result.audio_ms),
            wall_s=round(result.wall_s, 3),
            asr_compute_s=round(result.asr_compute_s, 3),
            realtime_factor=round(result.realtime_factor, 4),
        ),
        gaps_ms={k: rounded(v) for k, v in result.gaps_ms.items()},
        warnings=found.warnings,
        warning_codes=found.codes(Severity.WARNING),
        degraded=found.degraded,
        degraded_codes=found.codes(Severity.DEGRADED),
        settings=result.settings.model_dump(mode="json"),
        turn_taking=turn_taking_of(a, result, info, script),  # with the caller's own plan
        **(extra or {}),
        **({"conversation": conversation} if conversation is not None else {}),
    )


# --- the bundle's documents -------------------------------------------------------------------


def producer_metadata(result: PipelineResult) -> ProducerMetadata:
    """Who produced the evidence and how (seed 003's producer metadata)."""
    s = result.settings
    info = result.info
    return ProducerMetadata(
        producer_version=__version__,
        # the settings under their own names, beside the engines and what is derived
        asr=AsrInfo(engine="faster-whisper", **_shared(s.asr, AsrInfo)),
        vad=VadInfo(
            engine="webrtcvad",
            refine=s.refine.enabled,
            second_opinion="silero" if s.confirm.silero else None,
            **_shared(s.vad, VadInfo),
        ),
        language=s.asr.language,
        transport=info.transport,
        streaming_mode="streaming" if info.realtime else "batched",
        timing_evidence=info.timing_evidence or "not stated by the source",
        speaker_diarization="separate channels (no diarization needed)",
    )


def structured_output_document(
    result: ResultDocument,
    continuity: LiveContinuityReport,
    producer: ProducerMetadata | None,
    wer_alignment: dict[str, Any] | None,
) -> StructuredOutput:
    """The verifier result, WER (with alignment), the task contract and the run summary: what
    the structured output has in common with the result is the result's."""
    return StructuredOutput(
        output=StructuredResult(
            **_shared(result, StructuredResult, but=("wer",)),
            wer=wer_alignment,
            continuity=ContinuitySummary(status=continuity.status, metrics=continuity.metrics),
            run=RunSummary(**_shared(result, RunSummary)),
            producer=producer,
        )
    )


def _shared(doc: BaseModel, model: type[BaseModel], but: Sequence[str] = ()) -> dict[str, Any]:
    """The values of ``doc``'s fields that ``model`` has too (by name), but for ``but``."""
    names = type(doc).model_fields.keys() & model.model_fields.keys()
    return {name: getattr(doc, name) for name in names if name not in but}


def raw_trace_document(
    result: ResultDocument, producer: ProducerMetadata | None
) -> RawProviderTrace:
    """Signaling, ICE/RTP statistics, frame loss, device timing: everything the transport saw
    (the header names are in the redaction metadata)."""
    source = result.source or SourceRecord()
    return RawProviderTrace(
        transport=source.transport,
        source=source.description,
        error=result.error,
        details={k: v for k, v in source.details.items() if k != "header_names"},
        gaps_ms=result.gaps_ms,
        producer=producer,
    )


def redaction_document(header_names: Sequence[str]) -> RedactionMetadata:
    """What was deliberately left out of the bundle."""
    return RedactionMetadata(
        redacted=[
            Redacted(
                what=f"HTTP header {name}",
                reason="credential sent to the agent; value never written",
            )
            for name in header_names
        ]
    )


def bundle_documents(
    transcript: Transcript,
    timeline: WaveformTimeline,
    result: ResultDocument,
    continuity: LiveContinuityReport,
    *,
    producer: ProducerMetadata | None = None,
    wer_alignment: dict[str, Any] | None = None,
) -> dict[str, BaseModel]:
    """The bundle's JSON documents by artifact kind, the transcript first: the same for a run
    and for a call that never started (its result and continuity say why)."""
    headers = (result.source or SourceRecord()).details.get("header_names") or []
    return {
        "transcript_json": transcript,
        "waveform_timeline_json": timeline,
        "structured_output_json": structured_output_document(
            result, continuity, producer, wer_alignment
        ),
        "live_continuity_report_json": continuity,
        "raw_provider_trace_json": raw_trace_document(result, producer),
        "redaction_metadata_json": redaction_document(list(headers)),
    }
