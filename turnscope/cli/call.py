"""`turnscope call`: place a scripted call to a live voice agent and score it as it happens."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.call_options import (
    connect_timeout_option,
    loopback_option,
    media_timeout_option,
)
from turnscope.cli.call_setup import device_flag
from turnscope.cli.caller_flags import caller_llm_options
from turnscope.cli.closing import report_call
from turnscope.cli.console import fail_line, out, say
from turnscope.cli.exit_codes import ExitCode
from turnscope.cli.help import ASR, CALLER, DEVICE, OUTPUT, TRANSPORT, groups
from turnscope.cli.options import PipelineOptions, caller_voice_option
from turnscope.errors import CallSetupError

LLM_FLAGS = caller_llm_options()


def call(
    url: str | None = typer.Argument(
        None,
        help="The agent's offer URL (SmallWebRTC /api/offer, or WHIP), or its media-stream "
        "websocket (ws://.../ws, with --transport twilio|telnyx|plivo|exotel); not with --device.",
    ),
    scenario: Path = typer.Option(
        ...,
        "--scenario",
        help="Scenario YAML, or a shipped scenario's name (refund-call). `turnscope "
        "scenario check FILE` shows, with no call, when the caller says each line.",
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
    device: bool = device_flag("device"),
    caller_out: str | None = device_flag("caller_out"),
    agent_in: str | None = device_flag("agent_in"),
    stereo_in: str | None = device_flag("stereo_in"),
    caller_side: str = device_flag("caller_side"),
    loopback_in: str | None = device_flag("loopback_in"),
    no_calibrate: bool = device_flag("no_calibrate"),
    rate: int | None = device_flag("rate"),
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
    caller_llm: str | None = LLM_FLAGS[0],
    caller_llm_model: str | None = LLM_FLAGS[1],
    caller_llm_key_env: str | None = LLM_FLAGS[2],
    caller_voice: str | None = caller_voice_option(),
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
    from turnscope.actors.caller.scenario_file import load_scenario, voice_named
    from turnscope.actors.caller.voices.default import default_note
    from turnscope.caller_llm import caller_endpoint, recorded_turns
    from turnscope.cli.call_setup import call_options
    from turnscope.outdir import claim_output_dir, dropped_if_empty
    from turnscope.use_cases.call_run import place

    options = call_options(locals())
    voice = voice_named(caller_voice, Path.cwd(), "--caller-voice")
    sc = load_scenario(scenario, caller_voice=voice)
    llm = caller_endpoint(sc, caller_llm, caller_llm_model, caller_llm_key_env)
    flag = "--caller-voice" if caller_voice else None  # a voice nothing speaks in: said
    if (voice := default_note(sc, llm=llm is not None, flag=flag)) is not None:
        say(voice, markup=False)
    replay = recorded_turns(caller_from, sc) if caller_from is not None else None
    settings = PipelineOptions(settings_file, model=model, words=words).settings()
    name = f"{transports.folder_prefix(options)}-{sc.name}"
    outdir, made = claim_output_dir(output, name, force=force)
    try:
        with dropped_if_empty(made):  # a device not there: no empty runs/ folder left behind
            run = place(options, sc, settings, outdir, console=None if quiet else out, otlp=otlp,
                        agent_trace=agent_trace, caller_llm=llm, caller_from=replay)  # fmt: skip
    except CallSetupError as exc:  # place_call wrote the bundle that says why
        fail_line(f"{exc} (nothing was captured; wrote {outdir / 'result.json'})")
        return ExitCode.INCOMPLETE
    return report_call(run, model=settings.asr.model)


groups(
    call,
    {
        TRANSPORT: "signaling transport param codec header bearer_env ice_server loopback_only "
        "connect_timeout media_timeout",
        DEVICE: "device caller_out agent_in stereo_in caller_side loopback_in no_calibrate rate",
        CALLER: "scenario caller_voice caller_llm caller_llm_model caller_llm_key_env caller_from",
        ASR: "settings_file model words",
        OUTPUT: "output force agent_trace quiet",
    },
)


def register(app: typer.Typer) -> None:
    app.command("call", short_help="Call a live agent with a scripted or LLM caller; score it.")(
        call
    )
