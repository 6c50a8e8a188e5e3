"""Writing a run's bundle in its fixed order, whatever fails: each write tried whatever became
of the one before (a full disk: RunIncomplete names what is missing), the report last and
named when it could not be made, and a bug while scoring or writing met by writing the bundle
all the same (BugAfterCapture, exit 3) with what could be made of each document."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from turnscope.errors import OutputError, TurnscopeError, brief
from turnscope.jsonio import write_text
from turnscope.pipeline import PipelineResult, RunNote
from turnscope.reasons import Findings
from turnscope.records import (
    bundle_documents,
    producer_metadata,
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
    LiveContinuityReport,
    Transcript,
    WaveformTimeline,
)
from turnscope.scoring.evidence.manifest import ManifestMetadata
from turnscope.scoring.evidence.results import ResultDocument
from turnscope.sinks import ChannelRecorder
from turnscope.timeline_record import timeline_channels, timeline_document

if TYPE_CHECKING:
    from turnscope.runner import RunOutput

T = TypeVar("T")


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
        found = Findings()
        note = found.warn(
            RunNote.REPORT_FAILED,
            f"report.html could not be made ({why}); the reason is in report-error.txt",
        )
        result.add(found)
        result_doc.warnings.append(note.message)
        if result_doc.warning_codes is not None:
            result_doc.warning_codes.append(note.code_name)
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
    events: list[dict[str, Any]],
    channel_ms: dict[str, float],
    bug: Exception,
    *,
    evidence_class: str,
    extra: dict[str, Any] | None,
    continuity: Callable[[], LiveContinuityReport],
    metadata: Callable[[], ManifestMetadata],
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
            verdict="error",
            error=error,
            degraded=[error],
            degraded_codes=[RunNote.NOT_SCORED.value],
            evidence_class=evidence_class,
        ),
    )
    docs = {
        "transcript_json": salvage(lambda: transcript_document(result, events), Transcript),
        "waveform_timeline_json": salvage(
            lambda: timeline_document(result, events, channel_ms),
            lambda: WaveformTimeline(channels=timeline_channels(channel_ms)),
        ),
    }
    continuity_doc = salvage(
        continuity, lambda: continuity_report([], [], [], degraded_reasons=[error])
    )
    documents = salvage(
        lambda: bundle_documents(
            docs["transcript_json"],
            docs["waveform_timeline_json"],
            result_doc,
            continuity_doc,
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
            metadata=salvage(metadata, lambda: ManifestMetadata(provider="turnscope")),
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
