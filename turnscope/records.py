"""The documents a run writes: transcript.json (what was said, when) and result.json (verdict).

transcript.json (schema "turnscope.transcript.v1"):
  turns: the verifier's turns {speaker, start_ms, end_ms, text, interrupt} in start order, plus
         channel, confidence (mean word probability), words [{text, start_ms, end_ms,
         probability}], utterances (endpointer utterance keys) and asr {decided_ms, compute_ms};
  backchannels: [{speaker, start_ms, end_ms, text, utterance}] (kept out of the verifier);
  rejected: utterances that became no turn, with the reason;
  utterances: every endpointer utterance with its voiced spans and ASR metadata;
  events: every endpointer event (speech_start, speech_stop, end_of_turn, gap) with the refined
          audio time (at_ms) and the stream time it was decided (decided_ms).
All times are milliseconds on the call clock (0 = start of the recording or call).
"""

from __future__ import annotations

from typing import Any

from turnscope import __version__
from turnscope.pipeline import PipelineResult
from turnscope.scoring.contract import Contract
from turnscope.scoring.outcome import Outcome
from turnscope.scoring.verifier import verifier_facts


def _r(x: float | None, nd: int = 1) -> float | None:
    return None if x is None else round(x, nd)


def utterance_records(result: PipelineResult) -> list[dict[str, Any]]:
    out = []
    for h in result.heard:
        tr = h.transcription
        out.append(
            {
                "utterance": h.key,
                "channel": h.channel,
                "start_ms": _r(h.start_ms),
                "end_ms": _r(h.end_ms),
                "spans": [[_r(s.start_ms), _r(s.end_ms)] for s in h.spans],
                "decided_ms": _r(h.decided_ms),
                "text": tr.text,
                "asr": {
                    "compute_ms": _r(tr.asr_ms),
                    "avg_logprob": _r(tr.avg_logprob, 4),
                    "no_speech_prob": _r(tr.no_speech_prob, 4),
                    "confidence": _r(tr.confidence, 4),
                    "silero_speech_ratio": _r(tr.speech_ratio, 3),
                    "context_ms": _r(tr.context_ms),  # the previous utterance decoded before it
                    "rejected": tr.rejected,
                },
            }
        )
    return out


def transcript_document(result: PipelineResult, events: list[dict[str, Any]]) -> dict[str, Any]:
    a = result.assembly
    return {
        "schema": "turnscope.transcript.v1",
        "language": result.settings.asr.language,
        "duration_ms": _r(result.audio_ms),
        "turns": a.dialogue(),
        "backchannels": [b.to_dict() for b in a.backchannels],
        "rejected": [
            {
                "utterance": r.utterance,
                "start_ms": _r(r.start_ms),
                "end_ms": _r(r.end_ms),
                "reason": r.reason,
            }
            for r in a.rejected
        ],
        "utterances": utterance_records(result),
        "events": events,
    }


def result_document(
    result: PipelineResult,
    contract: Contract,
    outcome: Outcome,
    *,
    evidence_class: str,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    info = result.info
    return {
        "schema": "turnscope.result.v1",
        "turnscope_version": __version__,
        "verdict": "pass" if outcome.passed else "fail",
        "failed_floors": outcome.failed_floors,
        "failures": outcome.failures,
        "verifier": outcome.verifier,
        "exercise": {d: e.to_dict() for d, e in outcome.exercise.items()},
        "not_exercised": outcome.not_exercised,
        "wer": outcome.wer.to_dict() if outcome.wer else None,
        "task": contract.to_dict(),
        "evidence_class": evidence_class,
        "source": {
            "transport": info.transport,
            "description": info.description,
            "realtime": info.realtime,
            "duration_ms": _r(info.duration_ms),
            "details": info.details,
        },
        "counts": {
            "turns": len(result.assembly.turns),
            "backchannels": len(result.assembly.backchannels),
            "rejected": len(result.assembly.rejected),
            "utterances": len(result.heard),
            "barge_ins": sum(1 for t in result.assembly.turns if t.interrupt),
        },
        "timings": {
            "audio_ms": _r(result.audio_ms),
            "wall_s": round(result.wall_s, 3),
            "asr_compute_s": round(result.asr_compute_s, 3),
            "realtime_factor": round(result.realtime_factor, 4),
        },
        "gaps_ms": {k: _r(v) for k, v in result.gaps_ms.items()},
        "warnings": result.warnings,
        "degraded": list(info.degraded),
        "settings": result.settings.model_dump(mode="json"),
        **(extra or {}),
    }


# --- the bundle's documents -------------------------------------------------------------------


def transcript_for_bundle(doc: dict[str, Any]) -> dict[str, Any]:
    """The transcript with the contract's turn fields (turn_index, language) on every turn."""
    turns = [
        {"turn_index": i, **t, "language": doc.get("language", "en")}
        for i, t in enumerate(doc["turns"])
    ]
    return {**doc, "turns": turns}


def timeline_document(
    result: PipelineResult, events: list[dict[str, Any]], channel_ms: dict[str, float]
) -> dict[str, Any]:
    """Channels with their artifact keys and durations, and a marker for every speech start and
    stop (caller), output start and stop (agent), output gap, barge-in and backchannel."""
    markers: list[dict[str, Any]] = []
    names = {
        ("caller", "speech_start"): "speech_start",
        ("caller", "speech_stop"): "speech_stop",
        ("agent", "speech_start"): "output_start",
        ("agent", "speech_stop"): "output_stop",
    }
    for e in events:
        key = names.get((e["channel"], e["type"]))
        if key:
            markers.append(
                {
                    "key": key,
                    "offset_ms": e["at_ms"],
                    "channel": e["channel"],
                    "decided_ms": e["decided_ms"],
                }
            )
        elif e["type"] == "gap":
            markers.append(
                {
                    "key": "audio_gap",
                    "offset_ms": e["start_ms"],
                    "duration_ms": round(e["at_ms"] - e["start_ms"], 1),
                    "channel": e["channel"],
                }
            )
    turns = result.assembly.turns
    facts = verifier_facts(result.assembly.dialogue())  # the dialogue the verifier scores
    for i, t in enumerate(turns):
        if t.speaker == "agent":
            for a, b in zip(t.spans, t.spans[1:], strict=False):
                markers.append(
                    {
                        "key": "output_gap",
                        "offset_ms": _r(a.end_ms),
                        "duration_ms": _r(b.start_ms - a.end_ms),
                        "turn_index": i,
                    }
                )
        if t.interrupt:
            marker = {"key": "barge_in", "offset_ms": _r(t.start_ms), "turn_index": i}
            barge_ins = facts.barge_ins_of(i)  # one per agent turn it overlapped; the first
            if barge_ins:
                marker["agent_stopped_after_ms"] = barge_ins[0].yield_ms
            markers.append(marker)
    for b in result.assembly.backchannels:
        markers.append(
            {
                "key": "backchannel",
                "offset_ms": _r(b.start_ms),
                "duration_ms": _r(b.end_ms - b.start_ms),
                "text": b.text,
            }
        )
    markers.sort(key=lambda m: (m["offset_ms"], m["key"]))
    return {
        "schema": "turnscope.waveform_timeline.v1",
        "channels": [
            {
                "channel": "caller",
                "artifact_key": "caller-audio",
                "duration_ms": _r(channel_ms.get("caller", 0.0)),
            },
            {
                "channel": "agent",
                "artifact_key": "agent-audio",
                "duration_ms": _r(channel_ms.get("agent", 0.0)),
            },
        ],
        "markers": markers,
        "turns": [
            {
                "turn_index": i,
                "speaker": t.speaker,
                "start_ms": _r(t.start_ms),
                "end_ms": _r(t.end_ms),
                "interrupt": t.interrupt,
            }
            for i, t in enumerate(turns)
        ],
    }


def producer_metadata(result: PipelineResult) -> dict[str, Any]:
    """Who produced the evidence and how (seed 003's producer metadata)."""
    s = result.settings
    info = result.info
    timing = info.timing_evidence or "not stated by the source"
    return {
        "producer": "turnscope",
        "producer_version": __version__,
        "asr": {
            "engine": "faster-whisper",
            "model": s.asr.model,
            "compute_type": s.asr.compute_type,
            "beam_size": s.asr.beam_size,
            "language": s.asr.language,
            "word_timestamps": s.asr.word_timestamps,
        },
        "vad": {
            "engine": "webrtcvad",
            "aggressiveness": s.vad.aggressiveness,
            "frame_ms": s.vad.frame_ms,
            "energy_gate_db": s.vad.energy_gate_db,
            "end_of_turn_ms": s.vad.end_of_turn_ms,
            "refine": s.refine.enabled,
            "second_opinion": "silero" if s.confirm.silero else None,
        },
        "language": s.asr.language,
        "transport": info.transport,
        "streaming_mode": "streaming" if info.realtime else "batched",
        "timing_evidence": timing,
        "speaker_diarization": "separate channels (no diarization needed)",
    }


def structured_output_document(
    result_doc: dict[str, Any],
    continuity: dict[str, Any],
    producer: dict[str, Any],
    wer_alignment: dict[str, Any] | None,
) -> dict[str, Any]:
    """The verifier result, WER (with alignment), the task contract and the run summary."""
    return {
        "schema_ref": "turnscope.structured_output.v1",
        "output": {
            "verdict": result_doc["verdict"],
            "failed_floors": result_doc.get("failed_floors", []),
            "failures": result_doc.get("failures", []),
            "verifier": result_doc.get("verifier"),
            "exercise": result_doc.get("exercise", {}),
            "wer": wer_alignment,
            "task": result_doc.get("task"),
            "continuity": {"status": continuity["status"], "metrics": continuity["metrics"]},
            "run": {
                "evidence_class": result_doc.get("evidence_class"),
                "counts": result_doc.get("counts"),
                "timings": result_doc.get("timings"),
                "warnings": result_doc.get("warnings", []),
                "degraded": result_doc.get("degraded", []),
            },
            "producer": producer,
        },
    }


def raw_trace_document(result: PipelineResult, producer: dict[str, Any]) -> dict[str, Any]:
    """Signaling, ICE/RTP statistics, frame loss, device timing: everything the transport saw."""
    details = {k: v for k, v in result.info.details.items() if k != "header_names"}
    return {
        "schema": "turnscope.raw_trace.v1",
        "transport": result.info.transport,
        "source": result.info.description,
        "details": details,
        "gaps_ms": {k: _r(v) for k, v in result.gaps_ms.items()},
        "producer": producer,
    }


def redaction_document(header_names: list[str]) -> dict[str, Any]:
    """What was deliberately left out of the bundle."""
    return {
        "schema": "turnscope.redaction.v1",
        "redacted": [
            {
                "what": f"HTTP header {name}",
                "reason": "credential sent to the agent; value never written",
            }
            for name in header_names
        ],
        "policy": "request header values and tokens are never written; audio and transcripts "
        "are kept in full",
    }
