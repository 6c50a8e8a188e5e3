"""`turnscope agent`: run the reference voice agent (SmallWebRTC and WHIP on 127.0.0.1, or on
sound devices with --device)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from turnscope.cli.agent_output import say_listening, serve_devices
from turnscope.cli.help import DEVICE, OUTPUT, TRANSPORT, groups
from turnscope.cli.options import check_transport, number
from turnscope.errors import InputError


def agent(
    port: int = typer.Option(
        8080, "--port", help="Port on 127.0.0.1 (0: any free port).", callback=number(0, 65535)
    ),
    scenario: Path | None = typer.Option(
        None, "--scenario", help="Speak this scenario's agent lines."
    ),
    line: list[str] = typer.Option(
        [], "--line", help="A prompt (repeatable), instead of a scenario."
    ),
    latency_ms: int | None = typer.Option(
        None,
        "--latency-ms",
        help="Reply this long after the caller stops.",
        callback=number(0, 600_000),
    ),
    yield_ms: int | None = typer.Option(
        None, "--yield-ms", help="Stop this long after a barge-in.", callback=number(0, 600_000)
    ),
    ignore_barge_ins: bool = typer.Option(
        False, "--ignore-barge-ins", help="Keep talking through barge-ins."
    ),
    talk_over_ms: int | None = typer.Option(
        None,
        "--talk-over-ms",
        help="Reply this long after the caller STARTS.",
        callback=number(0, 600_000),
    ),
    never_answer: bool = typer.Option(False, "--never-answer", help="Never reply."),
    hangup_after_s: float | None = typer.Option(
        None, "--hangup-after-s", help="Hang up mid-call.", callback=number(0, 86400, above=True)
    ),
    silent_after_s: float | None = typer.Option(
        None,
        "--silent-after-s",
        help="Stop sending audio (without hanging up) mid-call.",
        callback=number(0, 86400, above=True),
    ),
    drop_every: int | None = typer.Option(
        None, "--drop-every", help="Lose every Nth audio packet on the way.", callback=number(2)
    ),
    drop_in_pauses: bool = typer.Option(
        False, "--drop-in-pauses", help="WebRTC: lose them only while the caller speaks."
    ),
    swap_every: int | None = typer.Option(
        None,
        "--swap-every",
        help="WebRTC: send every Nth packet after the next.",
        callback=number(2),
    ),
    dtx: bool = typer.Option(False, "--dtx", help="WebRTC: leave silence unsent (DTX)."),
    voice: str | None = typer.Option(
        None,
        "--voice",
        help="Its voice: an espeak-ng name (en-gb), piper:joe-us or piper:FILE.onnx.",
    ),
    no_greet: bool = typer.Option(False, "--no-greet", help="Wait for the caller to speak first."),
    transport: str = typer.Option(
        "webrtc",
        "--transport",
        help="webrtc, or answer a carrier's media-stream websocket on /ws: twilio, telnyx, "
        "plivo or exotel (the URL serves every transport; this only checks what arrives).",
    ),
    truth_log: Path | None = typer.Option(
        None, "--truth-log", help="Append each call's ground truth (JSON lines) here."
    ),
    device: bool = typer.Option(
        False, "--device", help="Serve on sound devices (--in, --out) instead of WebRTC."
    ),
    in_device: str | None = typer.Option(
        None, "--in", help="Device the agent hears the caller on (name or index)."
    ),
    out_device: str | None = typer.Option(None, "--out", help="Device the agent speaks into."),
    loopback_in: str | None = typer.Option(
        None,
        "--loopback-in",
        help="Device that hears --out, to calibrate (default: NAME_in for NAME_out).",
    ),
    no_calibrate: bool = typer.Option(False, "--no-calibrate", help="Skip calibration."),
    rate: int | None = typer.Option(None, "--rate", help="Device sample rate (default 48000)."),
) -> int:
    """Serve the reference agent until Ctrl-C; log when it really spoke (ground truth)."""
    from turnscope.actors.agent.device import DeviceAgentOptions
    from turnscope.use_cases.agent_serve import agent_behaviour, serve_agent, wire_knobs_apply

    knobs: dict[str, Any] = {
        "latency_ms": latency_ms, "talk_over_ms": talk_over_ms, "drop_every": drop_every,
        "hangup_after_s": hangup_after_s, "silent_after_s": silent_after_s, "voice": voice,
        "never_answer": True if never_answer else None, "greet": False if no_greet else None,
        "dtx": True if dtx else None, "drop_in_pauses": True if drop_in_pauses else None,
        "swap_every": swap_every,
    }  # fmt: skip
    if ignore_barge_ins and yield_ms is not None:  # one would be dropped without a word
        raise InputError("--ignore-barge-ins and --yield-ms: the agent ignores barge-ins or "
                         "yields to them after N ms; pick one")  # fmt: skip
    behaviour = agent_behaviour(scenario, line, knobs)
    if ignore_barge_ins:
        behaviour = behaviour.model_copy(update={"yield_ms": None})
    elif yield_ms is not None:
        behaviour = behaviour.model_copy(update={"yield_ms": yield_ms})
    phone = transport if check_transport(transport) != "webrtc" else None
    wire_knobs_apply(behaviour, device=device, phone=phone)
    if device:
        if transport != "webrtc":
            raise InputError("--device and --transport are different ways to serve; pick one")
        if not in_device or not out_device:
            raise InputError(
                "--device needs --in DEV and --out DEV (`turnscope devices` lists them)"
            )
        options = DeviceAgentOptions(
            in_device, out_device, loopback_in=loopback_in, calibrate=not no_calibrate, rate=rate
        )
        return serve_devices(behaviour, options, truth_log)
    if in_device or out_device or loopback_in or no_calibrate or rate is not None:
        raise InputError("--in, --out, --loopback-in, --no-calibrate and --rate need --device")
    serve_agent(behaviour, port=port, truth_log=truth_log, dialect=phone,
                on_listening=lambda base: say_listening(base, phone))  # fmt: skip
    return 0


groups(
    agent,
    {
        "Behaviour": "scenario line latency_ms yield_ms ignore_barge_ins talk_over_ms never_answer "
        "hangup_after_s silent_after_s drop_every drop_in_pauses swap_every dtx voice no_greet",
        TRANSPORT: "port transport",
        DEVICE: "device in_device out_device loopback_in no_calibrate rate",
        OUTPUT: "truth_log",
    },
)


def register(app: typer.Typer) -> None:
    app.command("agent", short_help="Serve the reference agent (logs when it really spoke).")(agent)
