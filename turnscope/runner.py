"""Run a source through the pipeline with the standard sinks, score it, and write the outputs.

Shared by `replay`, `call` and `demo`, so every kind of run records and scores the same way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel
from rich.console import Console

from turnscope.asr.settings import Settings
from turnscope.asr.transcriber import Transcriber
from turnscope.capture.frames import CHANNELS, samples_to_ms
from turnscope.capture.source import Source
from turnscope.errors import OutputError, TurnscopeError, brief
from turnscope.explain import await_trace, latency_breakdown
from turnscope.interrupts import stop_on_signals
from turnscope.jsonio import write_json, write_text
from turnscope.live_view import LiveView
from turnscope.offload import offload_bundle
from turnscope.pipeline import PipelineResult, Sink, run_pipeline
from turnscope.records import (
    bundle_documents,
    producer_metadata,
    result_document,
    timeline_channels,
    timeline_document,
    transcript_document,
    unscored_document,
)
from turnscope.scoring.contract import Contract
from turnscope.scoring.evidence.bundle import (
    MANIFEST,
    BundleIds,
    seal,
    write_bundle,
    write_document,
)
from turnscope.scoring.evidence.continuity import continuity_report
from turnscope.scoring.evidence.documents import (
    ContinuityThresholds,
    LiveContinuityReport,
    Transcript,
    WaveformTimeline,
)
from turnscope.scoring.evidence.manifest import ManifestMetadata
from turnscope.scoring.evidence.results import ResultDocument
from turnscope.scoring.latency import Breakdown
from turnscope.scoring.outcome import Outcome, score_outcome
from turnscope.sinks import ChannelRecorder, EventLog, LiveVerifier

T = TypeVar("T")


@dataclass
class RunOutput:
    result: PipelineResult
    outcome: Outcome
    outdir: Path
    files: dict[str, Path]
    breakdown: Breakdown | None = None  # each reply's latency split by the agent's events


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
) -> RunOutput:
    """Run the pipeline, writing channel wavs as audio arrives and the documents at the end;
    ``agent_trace``: the agent's own event log, to split each reply's latency by."""
    stop = getattr(source, "stop", None) or (lambda reason: None)
    recorder = ChannelRecorder(outdir, on_failure=stop)
    events = EventLog()
    verifier = LiveVerifier(contract)
    sinks: list[Sink] = [recorder, ReportAudio(outdir), events, verifier, *extra_sinks]
    if console is not None:
        budget = (contract.budgets or {}).get("max_latency_ms")
        sinks.append(LiveView(console, verifier, int(budget) if budget is not None else None))
    # A signal while the source streams stops it; one while the bundle is written (the source
    # has ended: stop does nothing) lets the bundle finish rather than leave it half written.
    with stop_on_signals(stop):
        try:
            result = await run_pipeline(source, settings, sinks, transcriber=transcriber)
        finally:
            recorder.close()
        # From here on the call is captured: a bug must not cost its evidence. One met on the
        # loop (reading the agent's trace, the scripted caller's report) is handed to the
        # bundle's writer, which keeps what it can before the run fails with it.
        bug: Exception | None = None
        extra = None
        try:
            if agent_trace is not None:
                await await_trace(agent_trace, result)
            extra = extra_result() if extra_result else None
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
    for ch, ms in channel_ms.items():
        if ms <= 0:
            result.info.degraded.append(f"the {ch} channel is missing (no audio captured)")
    if recorder.failure is not None:
        result.info.degraded.append(recorder.failure)
    gone = recorder.lost()
    if gone:
        result.info.degraded.append(
            f"the output folder {outdir} lost {' and '.join(gone)} during the run (removed or "
            "replaced): the audio captured in it is gone; the rest of the evidence is written"
        )
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
            result, contract, outdir, recorder, events, channel_ms, exc,
            evidence_class=evidence_class, extra=extra,
        )  # fmt: skip
        raise BugAfterCapture(outdir, exc) from exc


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
    breakdown = latency_breakdown(result, agent_trace)
    if breakdown is not None and not breakdown.reliable:
        result.findings.append("latency breakdown unreliable: " + "; ".join(breakdown.reasons))
    result_doc = result_document(
        result, contract, outcome, evidence_class=evidence_class, extra=extra
    )
    if breakdown is not None:
        result_doc.latency_breakdown = breakdown.to_dict()
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
    if outcome.bench is not None:
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
    run = RunOutput(result, outcome, outdir, files, breakdown)
    writer.finish(recorder, run)
    return run


def finish_report(
    writer: OrderedWriter, result: PipelineResult, result_doc: ResultDocument
) -> None:
    """The report, last; one that could not be made names itself: a warning of the run (printed
    with the others) and in result.json, beside report-error.txt."""
    outdir = writer.outdir
    if MANIFEST in writer.missing:  # the report reads the bundle through its manifest
        return
    why = writer.attempt("report.html", lambda: write_report(outdir))
    if why:
        writer.written.remove("report.html")
        note = f"report.html could not be made ({why}); the reason is in report-error.txt"
        result.findings.append(note)
        result_doc.warnings.append(note)
        writer.attempt("result.json", lambda: write_document(outdir / "result.json", result_doc))
    if writer.missing or why:
        writer.attempt(MANIFEST, lambda: seal(outdir))  # cover whatever was written


class BugAfterCapture(Exception):
    """A bug in turnscope after the call was captured; the bundle was written all the same
    (the CLI's boundary makes it the internal error, exit 3, with its trace file)."""

    def __init__(self, outdir: Path, exc: Exception) -> None:
        super().__init__(
            f"{type(exc).__name__}: {brief(exc)}; the run's evidence is kept in {outdir} "
            "(result.json: verdict error)"
        )


def keep_after_bug(
    result: PipelineResult,
    contract: Contract,
    outdir: Path,
    recorder: ChannelRecorder,
    events: list[dict[str, Any]],
    channel_ms: dict[str, float],
    bug: Exception,
    *,
    evidence_class: str,
    extra: dict[str, Any] | None,
) -> None:
    """The bundle of a run whose scoring or writing met a bug: the same order as always, each
    document as made from the run where that still works, else with its empty values; any
    write that fails is left out (the bug is what the run reports)."""
    error = f"internal error (a bug in turnscope) after the capture: {type(bug).__name__}: "
    error += brief(bug)
    result_doc = salvage(
        lambda: unscored_document(
            result, contract, error, evidence_class=evidence_class, extra=extra
        ),
        lambda: ResultDocument(
            verdict="error", error=error, degraded=[error], evidence_class=evidence_class
        ),
    )
    docs = {
        "transcript_json": salvage(lambda: transcript_document(result, events), Transcript),
        "waveform_timeline_json": salvage(
            lambda: timeline_document(result, events, channel_ms),
            lambda: WaveformTimeline(channels=timeline_channels(channel_ms)),
        ),
    }
    continuity = salvage(
        lambda: run_continuity(result, contract),
        lambda: continuity_report([], [], [], degraded_reasons=[error]),
    )
    documents = salvage(
        lambda: bundle_documents(
            docs["transcript_json"],
            docs["waveform_timeline_json"],
            result_doc,
            continuity,
            producer=producer_metadata(result),
        ),
        lambda: bundle_documents(
            Transcript(),
            WaveformTimeline(channels=timeline_channels({})),
            result_doc,
            continuity_report([], [], [], degraded_reasons=[error]),
        ),
    )
    writer = OrderedWriter(outdir, tolerant=True)
    transcript = documents.pop("transcript_json")
    for name, doc in (("transcript.json", transcript), ("result.json", result_doc)):
        writer.attempt(name, lambda name=name, doc=doc: write_document(outdir / name, doc))
    with contextlib.suppress(Exception):
        write_bundle(
            outdir,
            documents,
            ids=BundleIds.new(f"turnscope-{outdir.name}"),
            metadata=salvage(
                lambda: bundle_metadata(result),
                lambda: ManifestMetadata(provider="turnscope"),
            ),
            attempt=writer.attempt,
        )
        finish_report(writer, result, result_doc)


def salvage(make: Callable[[], T], empty: Callable[[], T]) -> T:
    """``make()``, or ``empty()`` when making it meets a bug (the run reports that bug)."""
    try:
        return make()
    except Exception:
        return empty()


class RunIncomplete(TurnscopeError):
    """Part of a run's bundle could not be written (exit 4: what was written is kept).

    ``missing``: the files not written; ``run``: the scored run all the same (a load run still
    counts its latencies); ``call`` and ``caller``: set by a live call on its way out."""

    exit_code = 4

    def __init__(self, message: str, *, missing: list[str], run: RunOutput | None) -> None:
        super().__init__(message)
        self.missing = missing
        self.run = run
        self.call: Any = None
        self.caller: Any = None


class OrderedWriter:
    """Runs each write, remembering the ones that failed instead of stopping at the first."""

    def __init__(self, outdir: Path, *, tolerant: bool = False) -> None:
        self.outdir = outdir
        self.written: list[str] = []
        self.missing: list[str] = []
        self.cause: OutputError | None = None
        # Tolerant: any failure is a missing file (writing around a bug already being reported).
        self.catches: type[Exception] = Exception if tolerant else OutputError

    def attempt(self, name: str, write: Callable[[], Any]) -> Any:
        try:
            done = write()
        except self.catches as exc:
            self.missing.append(name)
            if isinstance(exc, OutputError):
                self.cause = self.cause or exc
            return None
        if name not in self.written:
            self.written.append(name)
        return done

    def finish(self, recorder: ChannelRecorder, run: RunOutput | None = None) -> None:
        """Raise RunIncomplete when something is missing (the recording included)."""
        if not self.missing and recorder.failure is None:
            return
        why = str(self.cause) if self.cause else recorder.failure
        kept = ", ".join(["caller.wav", "agent.wav", *self.written[:3]])
        gone = ", ".join(self.missing) if self.missing else "nothing else"
        cut = f"; {recorder.failure}" if recorder.failure and self.cause else ""
        raise RunIncomplete(
            f"{self.outdir}: the run's bundle is incomplete ({why}{cut}): kept {kept}"
            f"{' ...' if len(self.written) > 3 else ''}; could not write {len(self.missing)} "
            f"file(s): {gone}",
            missing=[
                *self.missing,
                *(f"{p.name} (cut short)" for p in recorder.paths.values() if recorder.failure),
            ],
            run=run,
        )


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


def write_report(outdir: Path) -> str | None:
    """report.html and timeline.png (which also seal the manifest over them); None, or why the
    report could not be made (also in report-error.txt). A write the disk refused is an
    OutputError (the writer names the report as missing)."""
    from turnscope.scoring.report.html import build_report

    try:
        build_report(outdir)
    except OutputError:
        raise
    except Exception as exc:  # the report is a view of the evidence: never fail the run for it
        why = f"{type(exc).__name__}: {brief(exc)}"
        write_text(outdir / "report-error.txt", why + "\n")
        return why
    return None
