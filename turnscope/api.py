"""The public API as plain functions: the two run paths (replay a recording, call an agent)
and every use case the CLI's commands are thin clients of.

``replay`` and ``call`` run the one pipeline (the same code the CLI runs) and write the run's
bundle; both return a ``RunOutput`` (the turns, the verdict, the WER, where the bundle is). The
use cases (``turnscope.use_cases``, ``turnscope.load.run``) each return a typed result: a
suite's run (``run_suite``) or score (``score_suite``), a load test (``load_test``), a fixture
added (``add_fixture``), the gate (``check_gate``, ``pin_baseline``), a loopback calibrated
(``calibrate_loopback``), the demo call (``demo``) and a call's closing summary
(``call_summary``); they load when first used. A script that calls them needs the usual
``if __name__ == "__main__":`` guard: the ASR worker is a spawned process that imports the main
module again.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from turnscope.asr.settings import Settings, load_settings
from turnscope.capture.file.source import FileSource
from turnscope.errors import InputError, UnusableRecording
from turnscope.outdir import claim_output_dir, dropped_if_empty, forget_run
from turnscope.runner import RunOutput, run_and_record
from turnscope.scoring.contract import Contract, resolve_contract

# The use cases and their typed results, imported when first used (a replay loads no WebRTC).
USE_CASES = {
    "run_suite": "turnscope.use_cases.suite_run",
    "SuiteRun": "turnscope.use_cases.suite_run",
    "SuiteProgress": "turnscope.use_cases.suite_run",
    "score_suite": "turnscope.use_cases.suite_score",
    "SuiteScore": "turnscope.use_cases.suite_score",
    "load_test": "turnscope.load.run",
    "LoadRun": "turnscope.load.run",
    "LoadObserver": "turnscope.load.run",
    "LoadPlan": "turnscope.load.plan",
    "add_fixture": "turnscope.use_cases.fixture_add",
    "AddedFixture": "turnscope.use_cases.fixture_add",
    "check_gate": "turnscope.use_cases.gate_run",
    "pin_baseline": "turnscope.use_cases.gate_run",
    "GateRun": "turnscope.use_cases.gate_run",
    "calibrate_loopback": "turnscope.use_cases.calibration",
    "LoopbackCalibration": "turnscope.use_cases.calibration",
    "demo": "turnscope.use_cases.demo",
    "CallRun": "turnscope.use_cases.call_run",
    "call_summary": "turnscope.use_cases.call_run",
    "CallSummary": "turnscope.use_cases.call_run",
}
__all__ = ["call", "replay", *USE_CASES]


def __getattr__(name: str) -> Any:
    module = USE_CASES.get(name)
    if module is None:
        raise AttributeError(f"module 'turnscope.api' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def replay(
    call: str | Path | None = None,
    *,
    caller: str | Path | None = None,
    agent: str | Path | None = None,
    caller_channel: int | str = "left",
    agent_offset_ms: float = 0.0,
    reference: str | Path | None = None,
    suite: str | Path | None = None,
    task: str | None = None,
    max_latency_ms: int | None = None,
    require: Sequence[str] = (),
    settings: Settings | None = None,
    outdir: str | Path | None = None,
    force: bool = False,
    realtime: bool = False,
    console: Console | None = None,
    agent_trace: str | Path | None = None,
) -> RunOutput:
    """Replay a recorded call (one stereo file, ``caller_channel`` ``"left"`` (or 0) or
    ``"right"`` (or 1) is the caller, as the CLI's ``--caller-channel``; or
    ``caller=`` and ``agent=`` mono files) through the pipeline, score it (against
    ``suite``/``task``, ``reference``, a latency budget, required words, when given) and write its
    bundle (``outdir``, or a new folder under ``runs/``). InputError for bad input."""
    settings = settings or load_settings()
    contract = resolve_contract(
        suite=suite, task=task, reference=reference, max_latency_ms=max_latency_ms, require=require
    )
    chunk_ms = settings.audio.chunk_ms if realtime else max(settings.audio.chunk_ms, 200)
    if call is not None and (caller or agent):
        raise InputError("give either one stereo CALL file or --caller and --agent, not both")
    if call is not None:
        side = {"left": 0, "right": 1, 0: 0, 1: 1}.get(caller_channel)  # type: ignore[call-overload]
        if side is None:
            raise InputError(f"caller_channel must be 'left' or 'right', not {caller_channel!r}")
        if agent_offset_ms:  # a flag that would do nothing is said, not ignored
            raise InputError(
                "--agent-offset-ms shifts the agent's own file (--caller A --agent B); a stereo "
                "file's two channels are on one clock: leave it out"
            )
        source = FileSource.stereo(call, caller_channel=side, chunk_ms=chunk_ms, realtime=realtime)
        stem = Path(call).stem
    elif caller and agent:
        if caller_channel not in ("left", 0):
            raise InputError(
                "--caller-channel picks the caller's side of one stereo CALL file; with --caller "
                "and --agent each file is its own party's: leave it out"
            )
        source = FileSource.two_mono(
            caller, agent, agent_offset_ms=agent_offset_ms, chunk_ms=chunk_ms, realtime=realtime
        )
        stem = Path(caller).stem
    else:
        raise InputError("give a stereo CALL file, or both --caller FILE and --agent FILE")
    folder, made = claim_output_dir(Path(outdir) if outdir is not None else None, stem, force=force)
    try:
        return asyncio.run(
            run_and_record(
                source,
                settings,
                contract,
                folder,
                evidence_class="captured_fixture",
                console=console,
                agent_trace=Path(agent_trace) if agent_trace is not None else None,
            )
        )
    except UnusableRecording:
        # A recording found unusable while it was decoded (no samples, every one NaN): bad
        # input, not a run. Nothing of it stays in the folder, so the corrected rerun needs
        # no --force (the folder held no run before: output_dir refuses one without --force).
        forget_run(folder, made=made)
        raise


def call(
    url: str | None,
    scenario: str | Path,
    *,
    transport: str = "webrtc",
    settings: Settings | None = None,
    contract: Contract | None = None,
    outdir: str | Path | None = None,
    force: bool = False,
    caller_llm: str | None = None,
    caller_llm_model: str | None = None,
    caller_llm_key_env: str | None = None,
    caller_from: str | Path | None = None,
    agent_trace: str | Path | None = None,
    otlp: str | None = None,
    **options: Any,
) -> RunOutput:
    """Call the agent at ``url`` with the scripted caller of ``scenario`` (a YAML path), score
    the call and write its bundle (a call that cannot be set up writes one saying why, then
    raises CallSetupError).

    ``transport`` is any registered transport (``turnscope.transports.names()``): ``webrtc``
    (a SmallWebRTC ``/api/offer``, or WHIP with ``signaling="whip"``), a phone line played as
    its carrier (``twilio``, ``telnyx``, ``plivo``, ``exotel``: ``url`` is the agent's
    media-stream websocket) or ``device`` (sound devices; ``url`` None). ``options`` are the
    transport's own, as the CLI's flags: ``headers``, ``ice_servers``, ``loopback_only``,
    ``connect_timeout_s``, ``media_timeout_s``, ``signaling``; ``params``, ``codec``;
    ``caller_out``, ``agent_in``, ``stereo_in``, ``loopback_in``, ``rate``, ``caller_side``,
    ``calibrate``. One a transport does not take is an InputError. ``caller_llm`` (an
    OpenAI-compatible base URL), ``caller_llm_model`` and ``caller_llm_key_env`` drive an
    LLM caller; ``caller_from`` replays a recorded call's LLM caller. ``otlp``: "HOST:PORT"
    (e.g. "127.0.0.1:4318") to receive the agent's OpenTelemetry spans on for the call."""
    from turnscope import transports
    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.caller_llm import caller_endpoint, recorded_turns
    from turnscope.live_call import place_call

    opts = transports.options(transport, url, **options)
    sc = load_scenario(scenario)
    llm = caller_endpoint(sc, caller_llm, caller_llm_model, caller_llm_key_env)
    replay = recorded_turns(Path(caller_from), sc) if caller_from is not None else None
    folder, made = claim_output_dir(
        Path(outdir) if outdir is not None else None,
        f"{transports.folder_prefix(opts)}-{sc.name}",
        force=force,
    )
    with dropped_if_empty(made):
        run, _, _ = asyncio.run(
            place_call(
                opts,
                sc,
                settings or load_settings(),
                contract or scenario_contract(sc),
                folder,
                console=None,
                agent_trace=Path(agent_trace) if agent_trace is not None else None,
                caller_llm=llm,
                caller_from=replay,
                otlp=otlp,
            )
        )
    return run
