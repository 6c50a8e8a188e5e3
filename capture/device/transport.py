"""The sound-device transport's registration: the caller played into one device, the agent
recorded from another (or both from one stereo device)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnscope.capture.device.call import DeviceCall, DeviceCallOptions
from turnscope.capture.transport import TransportSpec
from turnscope.errors import InputError

DEVICE_FIELDS = (
    ("caller-out", "caller_out"),
    ("agent-in", "agent_in"),
    ("stereo-in", "stereo_in"),
    ("loopback-in", "loopback_in"),
)


def _make(url: str | None, given: Mapping[str, Any]) -> DeviceCallOptions:
    if not given.get("caller_out"):
        raise InputError("--device needs --caller-out DEV (`turnscope devices` lists them)")
    if (given.get("agent_in") is None) == (given.get("stereo_in") is None):
        raise InputError("--device needs exactly one of --agent-in DEV and --stereo-in DEV")
    if given.get("caller_side", 0) not in (0, 1):
        raise InputError("--caller-side must be left or right")
    rate = given.get("rate")
    if rate is not None and rate <= 0:
        raise InputError(f"--rate must be a positive sample rate, not {rate}")
    return DeviceCallOptions(**given)


def _details(o: DeviceCallOptions) -> dict[str, Any]:
    devices = {flag: getattr(o, name) for flag, name in DEVICE_FIELDS}
    return {"devices": {k: v for k, v in devices.items() if v is not None}}


TRANSPORTS = (
    TransportSpec(
        name="device",
        source="desktop_audio",
        folder="device",
        url_schemes=(),
        takes=frozenset(
            (
                "caller_out",
                "agent_in",
                "stereo_in",
                "loopback_in",
                "calibrate",
                "rate",
                "caller_side",
                "media_timeout_s",
                "max_duration_s",
            )
        ),
        make=_make,
        open=DeviceCall,
        details=_details,
        secrets=lambda _o: ([], []),
    ),
)
