"""The public API's two run paths, as plain functions: replay a recording, call an agent.

Both run the one pipeline (the same code the CLI runs) and write the run's bundle; both
return a ``RunOutput`` (the turns, the verdict, the WER, where the bundle is). A script that
calls them needs the usual ``if __name__ == "__main__":`` guard: the ASR worker is a spawned
process that imports the main module again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path

from rich.console import Console

from turnscope.asr.settings import Settings, load_settings
from turnscope.capture.file.source import FileSource
from turnscope.errors import InputError, UnusableRecording
from turnscope.outdir import forget_run, output_dir
from turnscope.runner import RunOutput, run_and_record
from turnscope.scoring.contract import Contract, resolve_contract


def replay(
    call: str | Path | None = None,
    *,
    caller: str | Path | None = None,
    agent: str | Path | None = None,
    caller_channel: int = 0,
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
    """Replay a recorded call (one stereo file, ``caller_channel`` 0 = left is the caller; or
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
        source = FileSource.stereo(
            call, caller_channel=caller_channel, chunk_ms=chunk_ms, realtime=realtime
        )
        stem = Path(call).stem
    elif caller and agent:
        source = FileSource.two_mono(
            caller, agent, agent_offset_ms=agent_offset_ms, chunk_ms=chunk_ms, realtime=realtime
        )
        stem = Path(caller).stem
    else:
        raise InputError("give a stereo CALL file, or both --caller FILE and --agent FILE")
    new = outdir is None or not Path(outdir).exists()
    folder = output_dir(Path(outdir) if outdir is not None else None, stem, force=force)
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
        forget_run(folder, created=new)
        raise


def call(
    url: str,
    scenario: str | Path,
    *,
    headers: Mapping[str, str] | None = None,
    loopback_only: bool = False,
    transport: str = "webrtc",
    params: Mapping[str, str] | None = None,
    settings: Settings | None = None,
    contract: Contract | None = None,
    outdir: str | Path | None = None,
    force: bool = False,
) -> RunOutput:
    """Call the agent at ``url`` (a SmallWebRTC ``/api/offer``; or, with ``transport`` twilio,
    telnyx, plivo or exotel, its media-stream websocket, turnscope playing the carrier with
    ``params`` as the start's custom parameters) with the scripted caller of ``scenario`` (a
    YAML path), score the call and write its bundle. Raises CallSetupError when the call cannot
    be set up."""
    from turnscope.capture.script.scenario import load_scenario
    from turnscope.capture.telephony.call import TelephonyOptions
    from turnscope.capture.telephony.dialects import DIALECTS
    from turnscope.capture.webrtc.call import CallOptions
    from turnscope.live_call import place_call
    from turnscope.redact import register, register_url
    from turnscope.scoring.contract import scenario_contract

    sc = load_scenario(scenario)
    # Never written, wherever they turn up: header and parameter values, the URL's userinfo
    # and query values.
    register((headers or {}).values())
    register((params or {}).values())
    register_url(url)
    options: CallOptions | TelephonyOptions
    if transport == "webrtc":
        options = CallOptions(url, headers=dict(headers or {}), loopback_only=loopback_only)
    elif transport in DIALECTS:
        options = TelephonyOptions(
            url,
            dialect=transport,  # type: ignore[arg-type]
            params=dict(params or {}),
            headers=dict(headers or {}),
        )
    else:
        raise InputError(f"transport must be webrtc or one of {', '.join(DIALECTS)}")
    folder = output_dir(
        Path(outdir) if outdir is not None else None, f"call-{sc.name}", force=force
    )
    run, _, _ = asyncio.run(
        place_call(
            options,
            sc,
            settings or load_settings(),
            contract or scenario_contract(sc),
            folder,
            console=None,
        )
    )
    return run
