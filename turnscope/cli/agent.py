"""`turnscope agent`: run the reference voice agent (SmallWebRTC and WHIP on 127.0.0.1, or on
sound devices with --device)."""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from turnscope.cli.console import fail_line, out, say
from turnscope.cli.help import DEVICE, OUTPUT, TRANSPORT, groups
from turnscope.cli.options import check_transport, number
from turnscope.errors import CallSetupError, InputError

if TYPE_CHECKING:
    from turnscope.actors.agent.core import AgentBehaviour
    from turnscope.actors.agent.device import DeviceAgentOptions

DEVICE_GONE = 4  # a device stopped while serving


def behaviour_from_options(
    scenario: Path | None, lines: list[str], knobs: dict[str, Any]
) -> AgentBehaviour:
    """The agent's behaviour: a scenario's agent side (default: the refund call) or --line
    prompts, with the knobs given on the command line on top."""
    from pydantic import ValidationError

    from turnscope.actors.agent.core import AgentBehaviour
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.configs import config_path
    from turnscope.jsonio import one_line

    given = {k: v for k, v in knobs.items() if v is not None}
    try:
        if lines:
            return AgentBehaviour.model_validate({"lines": [{"text": t} for t in lines], **given})
        sc = load_scenario(scenario or config_path("scenarios", "refund-call.yaml"))
        return AgentBehaviour.from_scenario(sc, **given)
    except ValidationError as exc:
        raise InputError(one_line(exc, prefix="agent")) from None


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
        None, "--drop-every", help="Drop every Nth audio frame.", callback=number(2)
    ),
    voice: str | None = typer.Option(None, "--voice", help="espeak-ng voice."),
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
    import asyncio

    from turnscope.actors.agent.device import DeviceAgentOptions
    from turnscope.actors.agent.server import AgentServer

    knobs: dict[str, Any] = {
        "latency_ms": latency_ms,
        "talk_over_ms": talk_over_ms,
        "drop_every": drop_every,
        "hangup_after_s": hangup_after_s,
        "silent_after_s": silent_after_s,
        "voice": voice,
        "never_answer": True if never_answer else None,
        "greet": False if no_greet else None,
    }
    if ignore_barge_ins:
        knobs["yield_ms"] = None
    behaviour = behaviour_from_options(scenario, line, knobs)
    if ignore_barge_ins:
        behaviour = behaviour.model_copy(update={"yield_ms": None})
    elif yield_ms is not None:
        behaviour = behaviour.model_copy(update={"yield_ms": yield_ms})
    if device:
        if transport != "webrtc":
            raise InputError("--device and --transport are different ways to serve; pick one")
        if not in_device or not out_device:
            raise InputError(
                "--device needs --in DEV and --out DEV (`turnscope devices` lists them)"
            )
        if drop_every is not None:
            raise InputError("--drop-every drops WebRTC frames; it does not apply to --device")
        options = DeviceAgentOptions(
            in_device, out_device, loopback_in=loopback_in, calibrate=not no_calibrate, rate=rate
        )
        return serve_devices(behaviour, options, truth_log)
    if in_device or out_device or loopback_in or no_calibrate or rate is not None:
        raise InputError("--in, --out, --loopback-in, --no-calibrate and --rate need --device")

    check_transport(transport)
    phone = transport if transport != "webrtc" else None

    async def serve() -> None:
        server = AgentServer(behaviour, port=port, truth_log=truth_log, dialect=phone)
        try:
            base = await server.start()
        except OSError as exc:
            raise InputError(
                f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", fix="pick another --port"
            ) from None
        ws = base.replace("http://", "ws://") + "/ws"
        if phone:
            say(f"reference agent on {ws} (a {phone} media stream)")
            call = f"turnscope call {ws} --transport {phone}"
        else:
            say(
                f"reference agent on {base}: SmallWebRTC {base}/api/offer, WHIP {base}/whip, "
                f"phone-line websocket {ws}"
            )
            call = f"turnscope call {base}/api/offer --loopback-only"
        say(f"call it: {call} --scenario configs/scenarios/refund-call.yaml")
        try:
            await asyncio.Event().wait()
        finally:
            await server.stop()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())
    return 0


def append_truth(path: Path | None, truth: dict[str, Any]) -> None:
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(truth) + "\n")


def serve_devices(
    behaviour: AgentBehaviour, options: DeviceAgentOptions, truth_log: Path | None
) -> int:
    """Run the device agent until Ctrl-C or SIGTERM; every call's truth goes to the log."""
    import asyncio

    from turnscope.actors.agent.device import DeviceAgent

    def ended(truth: dict[str, Any]) -> None:
        append_truth(truth_log, truth)
        say(f"call ended ({truth['end_reason']}): {len(truth['utterances'])} prompts")

    async def serve() -> str | None:
        agent = DeviceAgent(behaviour, options, on_session_end=ended)
        await agent.start()
        loop = asyncio.get_running_loop()
        for sig, why in ((signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, agent.stop, why)
        cal = agent.calibration
        timing = (
            f"calibrated ({cal.correction_ms:+.2f} ms, spread {cal.spread_ms:.2f} ms)"
            if cal
            else f"not calibrated ({agent.uncalibrated})"
        )
        out.print(
            f"reference agent on sound devices: hears {agent.capture.name!r}, speaks into "
            f"{agent.player.name!r}; timing {timing}",
            soft_wrap=True,
        )
        say("waiting for a call (a device call opens with its ring)")
        try:
            await agent.stopped.wait()
        finally:
            agent.close()
        reason = agent.stop_reason or ""
        return None if reason in ("interrupted", "terminated") else reason

    try:
        problem = asyncio.run(serve())
    except CallSetupError as exc:
        fail_line(str(exc))
        return DEVICE_GONE
    if problem:
        fail_line(f"{problem}; the device was unplugged or its sound server went away")
        return DEVICE_GONE
    return 0


groups(
    agent,
    {
        "Behaviour": "scenario line latency_ms yield_ms ignore_barge_ins talk_over_ms never_answer "
        "hangup_after_s silent_after_s drop_every voice no_greet",
        TRANSPORT: "port transport",
        DEVICE: "device in_device out_device loopback_in no_calibrate rate",
        OUTPUT: "truth_log",
    },
)


def register(app: typer.Typer) -> None:
    app.command("agent")(agent)
