"""`turnscope call`: place a scripted call to a live voice agent and score it as it happens."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import typer

from turnscope import redact
from turnscope.cli.console import fail_line, out, warn_line
from turnscope.cli.options import PipelineOptions, check_transport, number
from turnscope.errors import CallSetupError, InputError

if TYPE_CHECKING:
    from turnscope.capture.device.call import DeviceCallOptions
    from turnscope.capture.telephony.call import TelephonyOptions
    from turnscope.capture.webrtc.call import CallOptions
    from turnscope.live_call import AnyCallOptions
    from turnscope.runner import RunOutput

CALL_FAILED = 4  # the call could not be completed, or its evidence is degraded


_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name (RFC 9110 token)


def parse_headers(pairs: list[str], bearer_env: str | None) -> dict[str, str]:
    """``Name: value`` options (and a bearer token from an environment variable). Every value
    is a secret from here on: scrubbed from all output, and never echoed in an error."""
    headers: dict[str, str] = {}
    for i, pair in enumerate(pairs, 1):
        name, sep, value = pair.partition(":")
        redact.register([pair, value])
        if not sep:
            raise InputError(
                f"--header #{i}: expected 'Name: value' (no colon found; the value is not shown)"
            )
        name = name.strip()
        if not _TOKEN.match(name):
            raise InputError(
                f"--header #{i}: the name is not a valid HTTP header name (letters, digits and "
                "!#$%&'*+.^_`|~- only; the value is not shown)"
            )
        if any(c in value for c in "\r\n\0"):
            raise InputError(
                f"--header {name}: the value contains a line break or NUL, which would split "
                "the request (the value is not shown)"
            )
        headers[name] = value.strip()
    if bearer_env:
        token = os.environ.get(bearer_env)
        if not token:
            raise InputError(f"--bearer-env {bearer_env}: that environment variable is empty")
        if any(c in token for c in "\r\n\0"):
            raise InputError(f"--bearer-env {bearer_env}: the token contains a line break or NUL")
        redact.register([token, f"Bearer {token}"])
        headers["Authorization"] = f"Bearer {token}"
    return headers


ICE_SCHEMES = ("stun", "stuns", "turn", "turns")


def _checked(url: str, schemes: tuple[str, ...], what: str, fix: str) -> str:
    """``url`` with one of ``schemes``, a host and a valid port (else bad input, exit 2)."""
    parts = urlsplit(url)
    if parts.scheme not in schemes or not parts.hostname:
        raise InputError(f"{redact.scrub(url)!r} is not {what}", fix=fix)
    try:
        parts.port  # noqa: B018 (raises on a port out of range)
    except ValueError as exc:
        raise InputError(f"{redact.scrub(url)!r}: {exc}") from None
    return url


def check_url(url: str) -> str:
    """The agent's offer URL: http(s) with a host."""
    return _checked(
        url, ("http", "https"), "an agent URL",
        "give the offer endpoint, e.g. http://127.0.0.1:7860/api/offer",
    )  # fmt: skip


def check_ws_url(url: str) -> str:
    """A phone-line agent's websocket URL: ws(s) with a host. Its query values are secrets
    from here on (they often carry the token)."""
    for pair in urlsplit(url).query.split("&"):
        if "=" in pair:
            redact.register([pair.split("=", 1)[1]])
    return _checked(
        url, ("ws", "wss"), "a media-stream websocket URL",
        "give the agent's websocket, e.g. ws://127.0.0.1:8765/ws",
    )  # fmt: skip


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``--param k=v`` options: the start message's custom parameters."""
    params: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--param {pair!r}: expected NAME=VALUE")
        params[key.strip()] = value
    return params


def telephony_options(
    url: str, transport: str, codec: str | None, params: list[str], headers: dict[str, str],
    connect_timeout: float,
) -> TelephonyOptions:  # fmt: skip
    """A phone-line call's options, checked."""
    from turnscope.capture.telephony.call import TelephonyOptions

    check_ws_url(url)
    if codec is not None and transport != "telnyx":
        raise InputError(f"--codec is for --transport telnyx ({transport} streams have one codec)")
    if codec not in (None, "mulaw", "alaw"):
        raise InputError(f"--codec must be mulaw or alaw, not {codec!r}")
    return TelephonyOptions(
        url,
        dialect=transport,  # type: ignore[arg-type]
        codec=codec,  # type: ignore[arg-type]
        params=parse_params(params),
        headers=headers,
        connect_timeout_s=connect_timeout,
    )


def check_ice_server(url: str) -> str:
    """A STUN/TURN URL (RFC 7064/7065): stun:HOST[:PORT], turn:HOST[:PORT][?transport=...]."""
    scheme, sep, rest = url.partition(":")
    host = rest.split("?", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0]
    if not sep or scheme.lower() not in ICE_SCHEMES or not host:
        raise InputError(
            f"--ice-server {redact.scrub(url)!r}: not a STUN/TURN URL",
            fix="e.g. stun:stun.example.com:3478 or turn:turn.example.com:3478",
        )
    return url


def report(run: RunOutput, degraded: list[str], script: dict[str, Any] | None = None) -> int:
    """Print the verdict, what the script exercised and how the call ended; the exit code."""
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
            out.print("; ".join(planned))
    b = run.breakdown
    if b is not None and b.replies:
        split = [x for x in b.replies if x.missing is None]
        if split:
            med = {
                k: sorted(getattr(x, f"{k}_ms") for x in split)[len(split) // 2]
                for k in ("endpointing", "processing", "delivery")
            }
            out.print(
                f"latency split ({b.source}, {len(split)} of {len(b.replies)} replies, median): "
                + " / ".join(f"{k} {v:.0f}" for k, v in med.items())
                + " ms",
                soft_wrap=True,
            )
    r = run.result
    out.print(
        f"{len(r.assembly.turns)} turns, {len(r.assembly.backchannels)} backchannels, "
        f"{r.audio_ms / 1000:.1f} s of call; wrote {run.outdir}"
    )
    if degraded:
        fail_line("degraded evidence: " + "; ".join(degraded))
        return CALL_FAILED
    return 0 if run.outcome.passed else 1


def device_options(
    caller_out: str | None,
    agent_in: str | None,
    stereo_in: str | None,
    caller_side: str,
    loopback_in: str | None,
    no_calibrate: bool,
    rate: int | None,
) -> DeviceCallOptions:
    """The --device options, checked for sense (which devices exist is checked later)."""
    from turnscope.capture.device.call import DeviceCallOptions

    if not caller_out:
        raise InputError("--device needs --caller-out DEV (`turnscope devices` lists them)")
    if (agent_in is None) == (stereo_in is None):
        raise InputError("--device needs exactly one of --agent-in DEV and --stereo-in DEV")
    if caller_side not in ("left", "right"):
        raise InputError(f"--caller-side must be left or right, not {caller_side!r}")
    if rate is not None and rate <= 0:
        raise InputError(f"--rate must be a positive sample rate, not {rate}")
    return DeviceCallOptions(
        caller_out,
        agent_in=agent_in,
        stereo_in=stereo_in,
        loopback_in=loopback_in,
        calibrate=not no_calibrate,
        rate=rate,
        caller_side=0 if caller_side == "left" else 1,
    )


def remote_options(
    url: str,
    *,
    transport: str,
    signaling: str,
    header: list[str],
    bearer_env: str | None,
    ice_server: list[str],
    loopback_only: bool,
    connect_timeout: float,
    media_timeout: float | None,
    param: list[str],
    codec: str | None,
) -> CallOptions | TelephonyOptions:
    """A WebRTC or phone-line call's options from the command line, checked (``call`` and
    ``load`` share them)."""
    from turnscope.capture.webrtc.call import CallOptions

    check_transport(transport)
    if (param or codec) and transport == "webrtc":
        raise InputError("--param and --codec are for phone lines (--transport twilio ...)")
    if signaling not in ("smallwebrtc", "whip"):
        raise InputError(f"--signaling must be smallwebrtc or whip, not {signaling!r}")
    headers = parse_headers(header, bearer_env)
    if url.startswith(("ws:", "wss:")) and transport == "webrtc":
        raise InputError(
            f"{redact.scrub(url)!r} is a websocket: a phone line",
            fix="say which carrier's messages to speak: --transport twilio (or telnyx, "
            "plivo, exotel)",
        )
    if transport != "webrtc":
        if ice_server or loopback_only or signaling != "smallwebrtc" or media_timeout:
            raise InputError(
                "--ice-server, --loopback-only, --signaling and --media-timeout are WebRTC "
                "options (a phone agent sends no audio while it listens; a dead one stops "
                "answering the websocket's pings)"
            )
        return telephony_options(url, transport, codec, param, headers, connect_timeout)
    check_url(url)
    for server in ice_server:
        check_ice_server(server)
    return CallOptions(
        url,
        signaling=signaling,  # type: ignore[arg-type]
        headers=headers,
        ice_servers=ice_server,
        loopback_only=loopback_only,
        connect_timeout_s=connect_timeout,
        media_timeout_s=5.0 if media_timeout is None else media_timeout,
    )


def call(
    url: str | None = typer.Argument(
        None,
        help="The agent's offer URL (SmallWebRTC /api/offer, or WHIP), or its media-stream "
        "websocket (ws://.../ws, with --transport twilio|telnyx|plivo|exotel); not with --device.",
    ),
    scenario: Path = typer.Option(..., "--scenario", help="Scenario YAML (configs/scenarios)."),
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
    loopback_only: bool = typer.Option(
        False, "--loopback-only", help="Keep every ICE candidate on 127.0.0.1 (local agents)."
    ),
    connect_timeout: float = typer.Option(
        10.0, "--connect-timeout", help="Seconds.", callback=number(0, 3600, above=True)
    ),
    media_timeout: float | None = typer.Option(
        None,
        "--media-timeout",
        help="WebRTC: end the call when no agent audio arrives this long (default 5 s).",
        callback=number(0, 3600, above=True),
    ),
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
    settings_file: Path | None = typer.Option(None, "--settings", help="Settings YAML."),
    model: str | None = typer.Option(None, "--model", help="tiny.en (bundled) or a model folder."),
    words: bool | None = typer.Option(None, "--words/--no-words", help="Word timestamps."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live turn view."),
) -> int:
    """Call a live agent with a scripted caller (WebRTC, or sound devices with --device); score
    the call while it happens."""
    from turnscope.capture.script.scenario import load_scenario
    from turnscope.outdir import output_dir

    options: AnyCallOptions
    check_transport(transport)
    if (param or codec) and transport == "webrtc":
        raise InputError("--param and --codec are for phone lines (--transport twilio ...)")
    if device:
        if transport != "webrtc":
            raise InputError("--device and --transport are different ways to call; pick one")
        if url is not None:
            raise InputError(f"a --device call takes no URL (got {url!r})")
        if header or bearer_env or ice_server or loopback_only:
            raise InputError("--header, --bearer-env, --ice-server and --loopback-only are WebRTC")
        options = device_options(
            caller_out, agent_in, stereo_in, caller_side, loopback_in, no_calibrate, rate
        )
    else:
        if url is None:
            raise InputError("give the agent's URL, or --device with --caller-out and --agent-in")
        given = [caller_out, agent_in, stereo_in, loopback_in, rate]
        if any(v is not None for v in given) or no_calibrate:
            raise InputError("--caller-out, --agent-in, --stereo-in ... need --device")
        options = remote_options(
            url,
            transport=transport,
            signaling=signaling,
            header=header,
            bearer_env=bearer_env,
            ice_server=ice_server,
            loopback_only=loopback_only,
            connect_timeout=connect_timeout,
            media_timeout=media_timeout,
            param=param,
            codec=codec,
        )
    sc = load_scenario(scenario)
    settings = PipelineOptions(settings_file, model=model, words=words).settings()
    kind = "device" if device else "call" if transport == "webrtc" else "phone"
    outdir = output_dir(output, f"{kind}-{sc.name}", force=force)
    if agent_trace is not None and not agent_trace.parent.is_dir():
        raise InputError("no such folder for the agent trace", path=agent_trace.parent)
    return run_call(options, sc, settings, outdir, quiet=quiet, agent_trace=agent_trace)


def run_call(  # type: ignore[no-untyped-def]
    options: AnyCallOptions, sc, settings, outdir: Path, *, quiet: bool,
    agent_trace: Path | None = None,
) -> int:  # fmt: skip
    """Place the call; a call that cannot start leaves a result saying why (exit 4)."""
    import asyncio

    from turnscope.live_call import place_call, write_setup_failure
    from turnscope.scoring.contract import scenario_contract

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
        )
        return run, list(call.info.degraded), caller.report()

    try:
        run, degraded, script = asyncio.run(go())
    except CallSetupError as exc:
        write_setup_failure(outdir, options, str(exc))
        fail_line(f"{exc} (nothing was captured; wrote {outdir / 'result.json'})")
        return CALL_FAILED
    return report(run, degraded, script)


def register(app: typer.Typer) -> None:
    app.command("call")(call)
