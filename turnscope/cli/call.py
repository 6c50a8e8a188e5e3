"""`turnscope call`: place a scripted call to a live voice agent and score it as it happens."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from turnscope.cli.call_options import (
    connect_timeout_option,
    loopback_option,
    media_timeout_option,
    remote_flags,
    remote_options,
)
from turnscope.cli.closing import say_asr, say_report
from turnscope.cli.console import fail_line, out, say, warn_line
from turnscope.cli.help import ASR, CALLER, DEVICE, OUTPUT, TRANSPORT, groups
from turnscope.cli.options import PipelineOptions
from turnscope.cli.placement_notes import warn_first_turn_mid
from turnscope.errors import CallSetupError, InputError

if TYPE_CHECKING:
    from turnscope.live_call import AnyCallOptions
    from turnscope.runner import RunOutput

CALL_FAILED = 4  # the call could not be completed, or its evidence is degraded


def report(
    run: RunOutput, degraded: list[str], script: dict[str, Any] | None = None, *, model: str
) -> int:
    """Print the verdict, what the script exercised, how the call ended, the ASR model and
    (last) the report's path; the exit code."""
    from turnscope.cli.render import outcome_table

    for w in run.result.warnings:
        warn_line(w)
    out.print(outcome_table(run.outcome))
    if script is not None:
        planned = [
            f"{script[k]['exercised']} of {script[k]['planned']} planned {k.replace('_', '-')} "
            "exercised"
            for k in ("barge_ins", "backchannels")
            if script[k]["planned"]
        ]
        if planned:
            say("; ".join(planned))
    b = run.breakdown
    med = b.medians() if b is not None else {}
    if b is not None and med:
        split = [x for x in b.replies if x.missing is None]
        if split:
            out.print(
                f"latency split ({b.source}, {len(split)} of {len(b.replies)} replies, median): "
                + " / ".join(f"{k} {v:.0f}" for k, v in med.items())
                + " ms",
                soft_wrap=True,
            )
    r = run.result
    say(
        f"{len(r.assembly.turns)} turns, {len(r.assembly.backchannels)} backchannels, "
        f"{r.audio_ms / 1000:.1f} s of call; wrote {run.outdir}"
    )
    say_asr(model)
    if degraded:
        fail_line("degraded evidence: " + "; ".join(degraded))
    say_report(run.outdir)
    if degraded:
        return CALL_FAILED
    return 0 if run.outcome.passed else 1


def call(
    url: str | None = typer.Argument(
        None,
        help="The agent's offer URL (SmallWebRTC /api/offer, or WHIP), or its media-stream "
        "websocket (ws://.../ws, with --transport twilio|telnyx|plivo|exotel); not with --device.",
    ),
    scenario: Path = typer.Option(
        ..., "--scenario", help="Scenario YAML, or a shipped scenario's name (refund-call)."
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Replace the run already in the -o folder."),
    signaling: str = typer.Option("smallwebrtc", "--signaling", help="smallwebrtc or whip."),
    transport: str = typer.Option(
        "webrtc",
        "--transport",
        help="webrtc, or play the carrier on a phone line: twilio, telnyx, plivo or exotel.",
    ),
    param: list[str] = typer.Option(
        [], "--param", help="Phone line: a custom parameter of the start message, NAME=VALUE."
    ),
    codec: str | None = typer.Option(
        None, "--codec", help="Phone line, telnyx: mulaw (default) or alaw."
    ),
    header: list[str] = typer.Option([], "--header", help="Extra HTTP header 'Name: value'."),
    bearer_env: str | None = typer.Option(
        None, "--bearer-env", help="Send 'Authorization: Bearer $VAR' (the value is never saved)."
    ),
    ice_server: list[str] = typer.Option(
        [], "--ice-server", help="STUN/TURN URL (none by default)."
    ),
    loopback_only: bool = loopback_option(),
    connect_timeout: float = connect_timeout_option(),
    media_timeout: float | None = media_timeout_option(),
    device: bool = typer.Option(
        False, "--device", help="Call through sound devices instead of WebRTC."
    ),
    caller_out: str | None = typer.Option(
        None, "--caller-out", help="Device the scripted caller plays into (name or index)."
    ),
    agent_in: str | None = typer.Option(
        None, "--agent-in", help="Device the agent is recorded from."
    ),
    stereo_in: str | None = typer.Option(
        None, "--stereo-in", help="One 2-channel device recording both parties."
    ),
    caller_side: str = typer.Option(
        "left", "--caller-side", help="The --stereo-in side carrying the caller: left or right."
    ),
    loopback_in: str | None = typer.Option(
        None,
        "--loopback-in",
        help="Device that hears --caller-out, to calibrate (default: NAME_in for NAME_out).",
    ),
    no_calibrate: bool = typer.Option(
        False, "--no-calibrate", help="Skip calibration (the evidence is then degraded)."
    ),
    rate: int | None = typer.Option(
        None, "--rate", help="Device sample rate (default 48000 if the devices take it)."
    ),
    agent_trace: Path | None = typer.Option(
        None,
        "--agent-trace",
        help="The agent's own event log (JSON lines: a time and an event name), read after the "
        "call to split each reply's latency into endpointing, processing and delivery.",
    ),
    otlp: str | None = typer.Option(
        None,
        "--otlp",
        help="Receive the agent's OpenTelemetry spans (OTLP/HTTP, protobuf or JSON, POST "
        "/v1/traces) on HOST:PORT during the call (127.0.0.1:4318 with --otlp ''; OTLP/gRPC "
        "with grpc://HOST:PORT, the otlp-grpc extra); kept as agent_spans.json, they split "
        "each reply's latency hop by hop.",
    ),
    caller_llm: str | None = typer.Option(
        None,
        "--caller-llm",
        help="caller.driver llm: the OpenAI-compatible API its LLM answers on "
        "(http://HOST:PORT/v1: Ollama, llama.cpp's server, vLLM, a hosted API).",
    ),
    caller_llm_model: str | None = typer.Option(
        None, "--caller-llm-model", help="The model name to ask (default: caller.llm.model)."
    ),
    caller_llm_key_env: str | None = typer.Option(
        None, "--caller-llm-key-env", help="Environment variable holding the API key (never saved)."
    ),
    caller_from: Path | None = typer.Option(
        None,
        "--caller-from",
        help="A recorded call's bundle: replay its LLM caller's lines while the agent says the "
        "same things; ask the LLM only where it diverges.",
    ),
    settings_file: Path | None = typer.Option(None, "--settings", help="Settings YAML."),
    model: str | None = typer.Option(None, "--model", help="tiny.en (bundled) or a model folder."),
    words: bool | None = typer.Option(None, "--words/--no-words", help="Word timestamps."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live turn view."),
) -> int:
    """Call a live agent with a scripted caller (WebRTC, or sound devices with --device); score
    the call while it happens."""
    from turnscope import transports
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.caller_llm import caller_endpoint, recorded_turns
    from turnscope.outdir import output_dir

    if device and transport != "webrtc":
        raise InputError("--device and --transport are different ways to call; pick one")
    if device or transport == "device":
        if caller_side not in ("left", "right"):
            raise InputError(f"--caller-side must be left or right, not {caller_side!r}")
        if header or bearer_env or ice_server or loopback_only or param or codec:
            raise InputError(
                "--header, --bearer-env, --ice-server, --loopback-only, --param and --codec "
                "are for calls over the network, not --device"
            )
        options = transports.options(
            "device", url, caller_out=caller_out, agent_in=agent_in, stereo_in=stereo_in,
            loopback_in=loopback_in, rate=rate, calibrate=not no_calibrate,
            caller_side=0 if caller_side == "left" else 1,
        )  # fmt: skip
    else:
        if url is None:
            raise InputError("give the agent's URL, or --device with --caller-out and --agent-in")
        given = [caller_out, agent_in, stereo_in, loopback_in, rate]
        if any(v is not None for v in given) or no_calibrate:
            raise InputError("--caller-out, --agent-in, --stereo-in ... need --device")
        options = remote_options(url, **remote_flags(locals()))
    sc = load_scenario(scenario)
    warn_first_turn_mid(sc)
    llm = caller_endpoint(sc, caller_llm, caller_llm_model, caller_llm_key_env)
    replay = recorded_turns(caller_from) if caller_from is not None else None
    settings = PipelineOptions(settings_file, model=model, words=words).settings()
    kind = transports.folder_prefix(options)
    outdir = output_dir(output, f"{kind}-{sc.name}", force=force)
    if agent_trace is not None and not agent_trace.parent.is_dir():
        raise InputError("no such folder for the agent trace", path=agent_trace.parent)
    return run_call(
        options, sc, settings, outdir, quiet=quiet, agent_trace=agent_trace,
        caller_llm=llm, caller_from=replay, otlp=otlp,
    )  # fmt: skip


def run_call(  # type: ignore[no-untyped-def]
    options: AnyCallOptions, sc, settings, outdir: Path, *, quiet: bool,
    agent_trace: Path | None = None, caller_llm: Any = None, caller_from: Any = None,
    otlp: str | None = None,
) -> int:  # fmt: skip
    """Place the call; a call that cannot start leaves a result saying why (exit 4)."""
    import asyncio

    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.live_call import place_call

    contract = scenario_contract(sc)

    async def go() -> tuple[RunOutput, list[str], dict[str, Any]]:
        run, call, caller = await place_call(
            options,
            sc,
            settings,
            contract,
            outdir,
            console=None if quiet else out,
            agent_trace=agent_trace,
            caller_llm=caller_llm,
            caller_from=caller_from,
            otlp=otlp,
        )
        return run, list(call.info.degraded), caller.report()

    try:
        run, degraded, script = asyncio.run(go())
    except CallSetupError as exc:  # place_call wrote the bundle that says why
        fail_line(f"{exc} (nothing was captured; wrote {outdir / 'result.json'})")
        return CALL_FAILED
    return report(run, degraded, script, model=settings.asr.model)


groups(
    call,
    {
        TRANSPORT: "signaling transport param codec header bearer_env ice_server loopback_only "
        "connect_timeout media_timeout",
        DEVICE: "device caller_out agent_in stereo_in caller_side loopback_in no_calibrate rate",
        CALLER: "scenario caller_llm caller_llm_model caller_llm_key_env caller_from",
        ASR: "settings_file model words",
        OUTPUT: "output force agent_trace quiet",
    },
)


def register(app: typer.Typer) -> None:
    app.command("call")(call)
