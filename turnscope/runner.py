"""Run a source through the pipeline with the standard sinks, score it, and write the outputs.

Shared by `replay`, `call` and `demo`, so every kind of run records and scores the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from turnscope.asr.settings import Settings
from turnscope.asr.transcriber import Transcriber
from turnscope.capture.source import Source
from turnscope.jsonio import write_json
from turnscope.live_view import LiveView
from turnscope.pipeline import PipelineResult, Sink, run_pipeline
from turnscope.records import result_document, transcript_document
from turnscope.scoring.contract import Contract
from turnscope.scoring.outcome import Outcome, score_outcome
from turnscope.sinks import ChannelRecorder, EventLog, LiveVerifier


@dataclass
class RunOutput:
    result: PipelineResult
    outcome: Outcome
    outdir: Path
    files: dict[str, Path]


async def run_and_record(
    source: Source,
    settings: Settings,
    contract: Contract,
    outdir: Path,
    *,
    evidence_class: str,
    console: Console | None = None,
    extra_sinks: Sequence[Sink] = (),
    extra_result: Callable[[], dict[str, Any]] | None = None,
    transcriber: Transcriber | None = None,
) -> RunOutput:
    """Run the pipeline, writing channel wavs as audio arrives and the documents at the end."""
    outdir.mkdir(parents=True, exist_ok=True)
    recorder = ChannelRecorder(outdir)
    events = EventLog()
    verifier = LiveVerifier(contract)
    sinks: list[Sink] = [recorder, events, verifier, *extra_sinks]
    if console is not None:
        budget = (contract.budgets or {}).get("max_latency_ms")
        sinks.append(LiveView(console, verifier, int(budget) if budget is not None else None))
    try:
        result = await run_pipeline(source, settings, sinks, transcriber=transcriber)
    finally:
        recorder.close()
    outcome = score_outcome(result.assembly.dialogue(), contract, evidence_class=evidence_class)
    files = {
        "caller_audio": recorder.paths["caller"],
        "agent_audio": recorder.paths["agent"],
        "transcript": write_json(
            outdir / "transcript.json", transcript_document(result, events.records)
        ),
        "result": write_json(
            outdir / "result.json",
            result_document(
                result,
                contract,
                outcome,
                evidence_class=evidence_class,
                extra=extra_result() if extra_result else None,
            ),
        ),
    }
    if outcome.bench is not None:
        files["bench"] = write_json(outdir / "bench.json", outcome.bench)
    return RunOutput(result, outcome, outdir, files)
