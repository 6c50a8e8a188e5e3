"""Run a source through the pipeline with the standard sinks, score it, and write the outputs.

Shared by `replay`, `call` and `demo`, so every kind of run records and scores the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from rich.console import Console

from turnscope import run_view
from turnscope.asr.settings import Settings
from turnscope.asr.transcriber import Transcriber
from turnscope.bundle_writer import BugAfterCapture, OrderedWriter, finish_report, keep_after_bug
from turnscope.capture.frames import CHANNELS, samples_to_ms
from turnscope.capture.source import Source
from turnscope.errors import TurnscopeError
from turnscope.explain import await_trace, latency_breakdown
from turnscope.interrupts import stop_on_signals
from turnscope.jsonio import write_json
from turnscope.live_view import LiveView, SpanFeed
from turnscope.offload import offload_bundle
from turnscope.pipeline import PipelineResult, RunNote, SaidSoFar, Sink, run_pipeline
from turnscope.reasons import Findings
from turnscope.records import (
    bundle_documents,
    producer_metadata,
    result_document,
    transcript_document,
)
from turnscope.run_view import Verdict
from turnscope.scoring.contract import Contract
from turnscope.scoring.evidence.bundle import (
    BundleIds,
    write_bundle,
    write_document,
)
from turnscope.scoring.evidence.continuity import continuity_report
from turnscope.scoring.evidence.documents import (
    ContinuityThresholds,
    LiveContinuityReport,
)
from turnscope.scoring.evidence.manifest import ManifestMetadata
from turnscope.scoring.evidence.result_parts import BreakdownRecord
from turnscope.scoring.evidence.results import ResultDocument
from turnscope.scoring.latency import Breakdown
from turnscope.scoring.outcome import Outcome, score_outcome
from turnscope.sinks import ChannelRecorder, EventLog, LiveVerifier
from turnscope.timeline_record import timeline_document


@dataclass
class RunOutput:
    result: PipelineResult
    outcome: Outcome
    outdir: Path
    files: dict[str, Path]
    breakdown: Breakdown | None = None  # each reply's latency split by the agent's events
    # result.json's script.voices: each caller voice, with how the project's ASR heard it
    voices: list[dict[str, Any]] = field(default_factory=list)

    @property
    def verdict(self) -> Verdict:
        """``pass``, ``fail``, or ``error`` (a run that could not be scored: one recording on
        both channels)."""
        return run_view.verdict(self)

    @property
    def replies(self) -> list[run_view.Reply]:
        """Each agent reply: its start, its latency, whether it met the budget, what was said."""
        return run_view.replies(self)

    @property
    def barge_ins(self) -> list[run_view.BargeIn]:
        """Each barge-in: when the caller cut in, how long the agent went on, if it yielded."""
        return run_view.barge_ins(self)

    @property
    def latency_split(self) -> list[run_view.Split | None]:
        """Each reply's endpointing / processing / delivery, where the agent said (RTVI or an
        ``agent_trace``); ``latency_split_median`` for the medians."""
        return run_view.splits(self)

    @property
    def latency_split_median(self) -> dict[str, float]:
        return self.breakdown.medians() if self.breakdown is not None else {}

    @property
    def scores(self) -> dict[str, float]:
        """The verifier's four sub-scores (latency, turn_taking, barge_in, content), 0-1."""
        return dict(self.outcome.verifier["result"]["components"])


class ReportAudio(Sink):
    """Once the recording is complete, the report's audio is encoded on the bundle thread while
    the last utterances are transcribed (a replay waits for ASR there; the bundle comes sooner)."""

    def __init__(self, outdir: Path) -> None:
        self.outdir = outdir

    def on_audio_end(self) -> None:
        from turnscope.offload import work_pool
        from turnscope.scoring.report.listen import prepare

        work_pool("bundle").submit(prepare, self.outdir)


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
    agent_trace: Path | None = None,
    final_contract: Callable[[Contract], Contract] | None = None,
    stages: Sequence[Findings] = (),
    said: SaidSoFar | None = None,
) -> RunOutput:
    """Run the pipeline, writing channel wavs as audio arrives and the documents at the end;
    ``agent_trace``: the agent's own event log, to split each reply's latency by;
    ``final_contract``: the contract as the finished run settles it (scored with that);
    ``stages``: what the run's other stages find as it goes (the scripted caller's), assembled
    with the source's and the pipeline's into the run's evidence (and printed as found);
    ``said``: when the scripted caller sent its lines (``run_pipeline``)."""
    stop = getattr(source, "stop", None) or (lambda reason: None)
    recorder = ChannelRecorder(outdir, on_failure=stop)
    events = EventLog()
    verifier = LiveVerifier(contract)
    sinks: list[Sink] = [recorder, ReportAudio(outdir), events, verifier, *extra_sinks]
    if console is not None:
        budget = contract.max_latency_ms
        cap = int(budget) if budget is not None else None
        feed = next((s for s in extra_sinks if isinstance(s, SpanFeed)), None)  # --otlp
        sinks.append(LiveView(console, verifier, cap, watch=stages, spans=feed))
    # A signal while the source streams stops it; one while the bundle is written (the source
    # has ended: stop does nothing) lets the bundle finish rather than leave it half written.
    with stop_on_signals(stop):
        try:
            result = await run_pipeline(source, settings, sinks, transcriber=transcriber, said=said)
        finally:
            recorder.close()
        for found in stages:
            result.add(found)
        # From here on the call is captured: a bug must not cost its evidence. One met on the
        # loop (reading the agent's trace, the scripted caller's report) is handed to the
        # bundle's writer, which keeps what it can before the run fails with it.
        bug: Exception | None = None
        extra = None
        try:
            if agent_trace is not None:
                await await_trace(agent_trace, result)
            extra = extra_result() if extra_result else None
            # What the run itself settled (a reacting caller's lines: the WER reference).
            contract = final_contract(contract) if final_contract else contract
        except TurnscopeError:
            raise
        except Exception as exc:
            bug = exc
        # Scoring and the bundle (reports, pictures) take a fraction of a second of CPU; on the
        # event loop that stalled every other live call of the process (measured: caller audio
        # up to 1.4 s late when 8 concurrent calls ended together).
        return await offload_bundle(
            record_run,
            result,
            contract,
            outdir,
            recorder,
            events.records,
            evidence_class=evidence_class,
            extra=extra,
            agent_trace=agent_trace,
            bug=bug,
        )


def record_run(
    result: PipelineResult,
    contract: Contract,
    outdir: Path,
    recorder: ChannelRecorder,
    events: list[dict[str, Any]],
    *,
    evidence_class: str,
    extra: dict[str, Any] | None,
    agent_trace: Path | None = None,
    bug: Exception | None = None,
) -> RunOutput:
    """Score a finished run and write its documents and bundle (plain code: runs in a thread).

    Written in a fixed order, the most valuable first (the audio is on disk already): the
    transcript, the result, the other documents, the mixed audio, the manifest, the report.
    A write that fails (a full disk) does not stop the ones after it; the run then ends with
    one RunIncomplete error naming the folder and what is missing. A bug while scoring or
    writing (``bug``: one met before) does not stop them either: the bundle is written in the
    same order with what could be made (result.json says ``verdict: error`` and why), then
    BugAfterCapture ends the run (exit 3).
    """
    channel_ms = {ch: samples_to_ms(recorder.samples(ch)) for ch in CHANNELS}
    result.add(recording_findings(recorder, channel_ms, outdir))
    try:
        if bug is not None:
            raise bug
        return _score_and_write(
            result, contract, outdir, recorder, events, channel_ms,
            evidence_class=evidence_class, extra=extra, agent_trace=agent_trace,
        )  # fmt: skip
    except TurnscopeError:
        raise
    except Exception as exc:
        keep_after_bug(
            result, contract, outdir, events, channel_ms, exc,
            evidence_class=evidence_class, extra=extra,
            continuity=lambda: run_continuity(result, contract),
            metadata=lambda: bundle_metadata(result),
        )  # fmt: skip
        raise BugAfterCapture(outdir, exc) from exc


def recording_findings(
    recorder: ChannelRecorder, channel_ms: dict[str, float], outdir: Path
) -> Findings:
    """What the recording of the run lacks: a channel with no audio, a write that failed, the
    output folder removed under it."""
    found = Findings()
    for ch, ms in channel_ms.items():
        if ms <= 0:
            found.degrade(
                RunNote.CHANNEL_MISSING, f"the {ch} channel is missing (no audio captured)"
            )
    if recorder.failure is not None:
        found.degrade(RunNote.RECORDING_FAILED, recorder.failure)
    gone = recorder.lost()
    if gone:
        found.degrade(
            RunNote.OUTPUT_LOST,
            f"the output folder {outdir} lost {' and '.join(gone)} during the run (removed or "
            "replaced): the audio captured in it is gone; the rest of the evidence is written",
        )
    return found


def _score_and_write(
    result: PipelineResult,
    contract: Contract,
    outdir: Path,
    recorder: ChannelRecorder,
    events: list[dict[str, Any]],
    channel_ms: dict[str, float],
    *,
    evidence_class: str,
    extra: dict[str, Any] | None,
    agent_trace: Path | None,
) -> RunOutput:
    outcome = score_outcome(result.assembly.dialogue(), contract, evidence_class=evidence_class)
    if result.channels_alike is not None:  # not a call: never passed (result.json: error)
        outcome.failures.append(result.channels_alike.message())
    breakdown = latency_breakdown(result, agent_trace)
    if breakdown is not None and not breakdown.reliable:
        unreliable = Findings()
        unreliable.warn(
            RunNote.BREAKDOWN_UNRELIABLE,
            "latency breakdown unreliable: " + "; ".join(breakdown.reasons),
        )
        result.add(unreliable)
    result_doc = result_document(
        result, contract, outcome, evidence_class=evidence_class, extra=extra
    )
    if breakdown is not None:
        result_doc.latency_breakdown = BreakdownRecord.model_validate(breakdown.to_dict())
    writer = OrderedWriter(outdir)
    documents = run_documents(result, outcome, contract, result_doc, events, channel_ms)
    files = {"caller_audio": recorder.paths["caller"], "agent_audio": recorder.paths["agent"]}
    transcript = documents.pop("transcript_json")
    files["transcript"] = writer.attempt(
        "transcript.json", lambda: write_document(outdir / "transcript.json", transcript)
    )
    files["result"] = writer.attempt(
        "result.json", lambda: write_document(outdir / "result.json", result_doc)
    )
    if outcome.bench is not None and result.channels_alike is None:  # else not scored
        files["bench"] = writer.attempt(
            "bench.json", lambda: write_json(outdir / "bench.json", outcome.bench)
        )
    files["manifest"] = write_bundle(
        outdir,
        documents,
        ids=BundleIds.new(f"turnscope-{outdir.name}"),
        metadata=bundle_metadata(result),
        attempt=writer.attempt,
    )
    finish_report(writer, result, result_doc)
    voices = getattr(result_doc.script, "voices", None) or []
    run = RunOutput(result, outcome, outdir, files, breakdown, voices=list(voices))
    writer.finish(recorder, run)
    return run


def run_documents(
    result: PipelineResult,
    outcome: Outcome,
    contract: Contract,
    result_doc: ResultDocument,
    events: list[dict[str, Any]],
    channel_ms: dict[str, float],
) -> dict[str, BaseModel]:
    """The bundle's JSON documents of a run, by artifact kind, the transcript first."""
    return bundle_documents(
        transcript_document(result, events),
        timeline_document(result, events, channel_ms),
        result_doc,
        run_continuity(result, contract),
        producer=producer_metadata(result),
        wer_alignment=outcome.wer.to_dict(with_alignment=True) if outcome.wer else None,
    )


def run_continuity(result: PipelineResult, contract: Contract) -> LiveContinuityReport:
    """The continuity report, with the thresholds of the suite's task when it sets them."""
    a = result.assembly
    task = None
    if contract.suite is not None and contract.task_id is not None:
        task = next(
            (t for t in contract.suite.get("tasks") or [] if str(t.get("id")) == contract.task_id),
            None,
        )
    return continuity_report(
        a.dialogue(),
        [b.to_dict() for b in a.backchannels],
        [[(s.start_ms, s.end_ms) for s in t.spans] for t in a.turns if t.speaker == "agent"],
        degraded_reasons=result.degraded,
        warnings=result.warnings,
        thresholds=ContinuityThresholds.from_task(task),
    )


def bundle_metadata(result: PipelineResult) -> ManifestMetadata:
    return ManifestMetadata(
        provider="turnscope",
        model=result.settings.asr.model,
        input_language=result.settings.asr.language,
        output_language=result.settings.asr.language,
        transport=result.info.transport,
        streaming_mode=producer_metadata(result).streaming_mode,
    )
