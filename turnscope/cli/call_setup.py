"""`turnscope call`'s way to reach the agent from its flags: sound devices (``--device``) or the
network (a URL over WebRTC or a phone line), each flag checked against the way chosen."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer

from turnscope.cli.call_options import remote_flags, remote_options
from turnscope.cli.options import TRANSPORT_FLAGS
from turnscope.errors import InputError

if TYPE_CHECKING:
    from turnscope.capture.transport import TransportOptions

NETWORK_ONLY = ("header", "bearer_env", "ice_server", "loopback_only", "param", "codec")
DEVICE_ONLY = ("caller_out", "agent_in", "stereo_in", "loopback_in", "rate")
# `call`'s sound-device flags: default, flag, help.
DEVICE_FLAGS: dict[str, tuple[Any, str, str]] = {
    "device": (False, "--device", "Call through sound devices instead of WebRTC."),
    "caller_out": (None, "--caller-out", "Device the scripted caller plays into (name or index)."),
    "agent_in": (None, "--agent-in", "Device the agent is recorded from."),
    "stereo_in": (None, "--stereo-in", "One 2-channel device recording both parties."),
    "caller_side": (
        "left", "--caller-side", "The --stereo-in side carrying the caller: left or right.",
    ),
    "loopback_in": (
        None, "--loopback-in",
        "Device that hears --caller-out, to calibrate (default: NAME_in for NAME_out).",
    ),
    "no_calibrate": (False, "--no-calibrate", "Skip calibration (the evidence is then degraded)."),
    "rate": (None, "--rate", "Device sample rate (default 48000 if the devices take it)."),
}  # fmt: skip


def device_flag(name: str) -> Any:
    """The declaration of `call`'s sound-device flag ``name``."""
    default, flag, text = DEVICE_FLAGS[name]
    return typer.Option(default, flag, help=text)


def call_options(flags: Mapping[str, Any]) -> TransportOptions:
    """The call's transport options from the command's flags (its ``locals()``); a missing
    folder for ``--agent-trace`` is refused here too, before any output folder is made."""
    from turnscope import transports

    if (trace := flags["agent_trace"]) is not None and not trace.parent.is_dir():
        raise InputError("no such folder for the agent trace", path=trace.parent)
    device, transport, url = flags["device"], flags["transport"], flags["url"]
    if device and transport != "webrtc":
        raise InputError("--device and --transport are different ways to call; pick one")
    if device or transport == "device":
        if flags["caller_side"] not in ("left", "right"):
            raise InputError(f"--caller-side must be left or right, not {flags['caller_side']!r}")
        if any(flags[k] for k in NETWORK_ONLY):
            raise InputError(
                "--header, --bearer-env, --ice-server, --loopback-only, --param and --codec "
                "are for calls over the network, not --device"
            )
        side = 0 if flags["caller_side"] == "left" else 1
        return transports.options(
            "device", url, flags=TRANSPORT_FLAGS, **{k: flags[k] for k in DEVICE_ONLY},
            calibrate=not flags["no_calibrate"], caller_side=side,
        )  # fmt: skip
    if url is None:
        raise InputError(
            "give the agent's URL, or --device with --caller-out and --agent-in",
            fix="e.g. turnscope call http://127.0.0.1:7860/api/offer --scenario refund-call; "
            "`turnscope agent --port 7860` serves the reference agent there",
        )
    device_only = flags["no_calibrate"] or flags["caller_side"] != "left"
    if device_only or any(flags[k] is not None for k in DEVICE_ONLY):
        raise InputError("--caller-out, --agent-in, --stereo-in, --caller-side ... need --device")
    return remote_options(url, **remote_flags(flags))
