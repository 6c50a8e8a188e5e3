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
        "verifier": outcome.verifier,
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
