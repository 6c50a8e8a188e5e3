"""Placing a scripted call against a live agent and recording it like any other run."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.console import Console

from turnscope import __version__, transports
from turnscope.actors.caller.caller import ScriptedCaller
from turnscope.actors.caller.lines import CallerLine, caller_lines, say_ahead
from turnscope.actors.caller.llm import LlmEndpoint
from turnscope.actors.caller.llm_driver import replayed_lines
from turnscope.actors.caller.own_line import spoken_spans
from turnscope.actors.caller.scenario import Scenario
from turnscope.asr.settings import Settings
from turnscope.asr.transcriber import Transcriber
from turnscope.bundle_writer import RunIncomplete
from turnscope.capture.transport import TransportOptions
from turnscope.errors import CallSetupError, InputError, SetupFailure
from turnscope.interrupts import stop_on_signals
from turnscope.offload import offload_stoppable
from turnscope.otlp.call import start_receiver, stop_receiver
from turnscope.otlp.shared import SharedSpans
from turnscope.partials import AgentPartials
from turnscope.pipeline import Sink
from turnscope.records import bundle_documents
from turnscope.runner import RunOutput, run_and_record
from turnscope.scoring.contract import Contract, Reference
from turnscope.scoring.evidence.bundle import BundleIds, write_bundle, write_document
from turnscope.scoring.evidence.continuity import continuity_report
from turnscope.scoring.evidence.documents import Transcript, WaveformTimeline
from turnscope.scoring.evidence.manifest import ManifestMetadata
from turnscope.scoring.evidence.results import ResultDocument, SourceRecord
from turnscope.settle import settle_heap
from turnscope.sinks import CallerHears
from turnscope.timeline_record import timeline_channels
from turnscope.use_cases.scenario_notes import needs_phone_line

LIVE_EVIDENCE = "live_lane"
# Any registered transport's options and call (``turnscope.transports``).
AnyCallOptions = TransportOptions
AnyCall = Any


def write_setup_failure(
    outdir: Path, options: TransportOptions, error: str, code: SetupFailure | None = None
) -> Path:
    """A call that never started still leaves a readable, valid bundle that says why: the run's
    own documents with their empty values, the error (``code``: its kind) and the degraded
    continuity beside."""
    outdir.mkdir(parents=True, exist_ok=True)
    transport, details = transports.failed_setup(options)
    result = ResultDocument(
        turnscope_version=__version__,
        verdict="error",
        error=error,
        degraded=[error],
        degraded_codes=[code.value] if code is not None else None,
        evidence_class=LIVE_EVIDENCE,
        source=SourceRecord(transport=transport, realtime=True, details=details),
    )
    write_document(outdir / "result.json", result)
    documents = bundle_documents(
        Transcript(),
        WaveformTimeline(channels=timeline_channels({})),
        result,
        continuity_report([], [], [], degraded_reasons=[error]),
    )
    return write_bundle(
        outdir,
        documents,
        ids=BundleIds.new(f"turnscope-{outdir.name}"),
        metadata=ManifestMetadata(provider="turnscope", transport=transport),
    )


async def place_call(
    options: AnyCallOptions,
    scenario: Scenario,
    settings: Settings,
    contract: Contract,
    outdir: Path,
    *,
    console: Console | None,
    agent_trace: Path | None = None,
    lines: list[CallerLine] | None = None,
    on_connected: Callable[[AnyCall], None] | None = None,
    caller_llm: LlmEndpoint | None = None,
    caller_from: list[dict[str, Any]] | None = None,
    otlp: str | SharedSpans | None = None,
) -> tuple[RunOutput, Any, ScriptedCaller]:
    """Connect (CallSetupError if that fails), run the scenario, record and score the call.

    WebRTC, sound devices or a phone line: only the source differs. ``lines``: the caller's
    lines already spoken (many calls of one scenario speak them once); ``on_connected``: told
    when the call is up; ``otlp``: HOST:PORT to receive the agent's OpenTelemetry spans on
    (OTLP/HTTP) for the call, kept as agent_spans.json and splitting each reply's latency (a
    load run's ``SharedSpans``: its one receiver's batches, this call's taken from them).
    """
    # A device that is unknown or unfit is an InputError here, before anything starts.
    keys = needs_phone_line(scenario)
    if keys is not None and transports.spec(options.transport).source != "telephony":
        raise InputError(keys, path=scenario.source)
    if scenario.caller.driver == "llm" and caller_llm is None and caller_from is None:
        raise InputError(
            "caller.driver is llm: give --caller-llm URL (an OpenAI-compatible chat-completions "
            "API, e.g. http://127.0.0.1:8000/v1) or --caller-from BUNDLE (a recorded call)",
            path=scenario.source,
        )
    receiver = await start_receiver(otlp, outdir, agent_trace)
    try:  # the receiver stops however the call ends, a set-up that failed included
        call = transports.open_call(options)
        transcriber = Transcriber(settings.asr, settings.confirm)
        try:
            lines = await _set_up(call, scenario, transcriber, lines, caller_from)
        except CallSetupError as exc:  # whoever placed the call: its bundle says why, here
            write_setup_failure(outdir, options, str(exc), exc.kind)
            raise
        if on_connected is not None:
            on_connected(call)
        caller = ScriptedCaller(
            scenario, call, settings, lines, llm_endpoint=caller_llm, replay=caller_from
        )
        caller.start()
        sinks: list[Sink] = [CallerHears(caller)]
        if receiver is not None:  # its spans file is the call's agent trace
            sinks.append(receiver)
            agent_trace = receiver.path
            receiver.clock = call.clock  # the live view places spans as they come by it
        partials = AgentPartials(caller, settings.asr, call.clock)
        if (
            scenario.needs_partials
        ):  # the agent's words as it speaks: only when a line waits on them
            sinks.append(partials)

        def extra() -> dict[str, Any]:
            doc = {
                "scenario": scenario.name,
                "script": caller.report(),
                "caller_truth": caller.truth(),
                "call": {"end_reason": call.end_reason},
            }
            if scenario.needs_partials:
                doc["script"]["partials"] = partials.stats.to_dict()
            if hasattr(call, "calibration_record"):  # sound devices
                doc["calibration"] = call.calibration_record()
            return doc

        try:
            # A signal from here on ends the call cleanly: everything captured is kept and scored.
            run = await run_and_record(
                call,
                settings,
                contract,
                outdir,
                evidence_class=LIVE_EVIDENCE,
                console=console,
                extra_result=extra,
                transcriber=transcriber,  # readied before the call connected
                agent_trace=agent_trace,
                extra_sinks=sinks,
                final_contract=lambda c: spoken_reference(c, scenario, caller),
                stages=[caller.found],
                said=lambda: spoken_spans(caller.records),
            )
        except RunIncomplete as exc:  # scored, but not all written: a load run still counts it
            exc.call, exc.caller = call, caller
            raise
        finally:
            await call.hangup("the call ended")
        return run, call, caller
    finally:
        await stop_receiver(receiver)


def spoken_reference(contract: Contract, scenario: Scenario, caller: ScriptedCaller) -> Contract:
    """A caller that reacts (branches, facts, an LLM) says what the agent made it say: its WER
    reference is the lines it really spoke, not the script's (the scenario's reference only)."""
    ref = contract.reference
    dynamic = scenario.reactive or scenario.caller.driver == "llm"
    if not dynamic or ref is None or not ref.scripted:
        return contract
    spoken = sorted(
        (r.sent["start_ms"], r.text)
        for r in caller.records
        if r.status == "spoken" and r.sent and r.kind != "dtmf" and "start_ms" in r.sent
    )
    texts = {**ref.texts, "caller": " ".join(text for _, text in spoken)}
    source = f"scenario {scenario.name}: the caller's lines as spoken"
    return dataclasses.replace(contract, reference=Reference(texts, ref.turns, source))


async def _set_up(
    call: AnyCall,
    scenario: Scenario,
    transcriber: Transcriber,
    spoken: list[CallerLine] | None,
    replay: list[dict[str, Any]] | None,
) -> list[CallerLine]:
    """Speak the caller's lines (unless ``spoken``) and a replayed LLM caller's, load the model,
    connect; the lines. A signal meanwhile is a set-up that did not finish (CallSetupError: the
    caller writes a bundle saying so)."""

    async def go() -> list[CallerLine]:
        # espeak-ng off the event loop: other calls of this process may be live. A signal
        # cancels this task, and the synthesis stops at its next line.
        texts = replayed_lines(replay)  # a recorded LLM caller's: at their recorded times
        lines = spoken if spoken is not None else await offload_stoppable(
            caller_lines, scenario, also=texts)  # fmt: skip
        if spoken is not None and texts:
            await offload_stoppable(say_ahead, scenario, [(text, None) for text in texts])
        # The model before the call: importing and loading it mid-call would stall the event
        # loop, and with it the outgoing audio.
        await transcriber.ready()
        settle_heap()
        await call.connect()
        return lines

    task = asyncio.ensure_future(go())
    why: list[str] = []

    def cancel(reason: str) -> None:
        why.append(reason)
        task.cancel()

    with stop_on_signals(cancel):
        try:
            return await task
        except asyncio.CancelledError:
            if why:
                raise CallSetupError(
                    f"{why[0]} while the call was being set up", SetupFailure.INTERRUPTED
                ) from None
            raise
