"""PortAudio access: loading it, listing sound devices, finding one by name or index, checking
that it can do what a call needs. Every problem is one line naming the device and the fix.

sounddevice is imported lazily: a machine without libportaudio2 still runs everything else, and
PortAudio reads the ALSA configuration only when it initialises, so the virtual devices
(capture/device_pulse.py) must be exposed before that; ``portaudio()`` does both.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import importlib
import os
import sys
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import Any, Literal

from turnscope.capture.device import pulse as device_pulse
from turnscope.errors import EnvironmentProblem, InputError

Kind = Literal["input", "output"]
PREFERRED_RATE = 48000
LIST_HINT = "`turnscope devices` lists them"

_state: dict[str, Any] = {"initialised": False, "alsa_config": None, "alsa_handler": None}


@dataclass(frozen=True)
class Device:
    """One PortAudio device, as `turnscope devices` shows it."""

    index: int
    name: str
    hostapi: str
    max_input_channels: int
    max_output_channels: int
    default_rate: float

    def channels(self, kind: Kind) -> int:
        return self.max_input_channels if kind == "input" else self.max_output_channels

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _expose_virtual_devices() -> None:
    """Point ALSA at turnscope's virtual devices when they run and nothing else was chosen."""
    if os.environ.get("ALSA_CONFIG_PATH"):
        return
    d = device_pulse.default_dir()
    if (d / "asoundrc").exists() and device_pulse.answering(d):
        os.environ["ALSA_CONFIG_PATH"] = device_pulse.environment(d)["ALSA_CONFIG_PATH"]


def _quiet_alsa() -> None:
    """alsa-lib prints its own notes ("underrun occurred") to stderr; the result counts and
    reports xruns instead, and the CLI promises one clear line, so give it a silent handler."""
    if _state.get("alsa_handler") is not None or not sys.platform.startswith("linux"):
        return
    try:
        lib = ctypes.CDLL(ctypes.util.find_library("asound") or "libasound.so.2")
        handler_type = ctypes.CFUNCTYPE(
            None, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p
        )
        handler = handler_type(lambda *_: None)
        lib.snd_lib_error_set_handler(handler)
        _state["alsa_handler"] = handler  # keep it alive as long as the library may call it
    except (OSError, AttributeError):
        _state["alsa_handler"] = False


def portaudio() -> ModuleType:
    """The sounddevice module with PortAudio initialised for the current ALSA configuration."""
    _expose_virtual_devices()
    imported_elsewhere = "sounddevice" in sys.modules  # initialised with an unknown config
    try:
        sd = importlib.import_module("sounddevice")
    except (OSError, ImportError) as exc:
        raise EnvironmentProblem(
            f"PortAudio is not available ({exc}); sound devices need it: "
            "apt-get install -y libportaudio2 (or ./scripts/setup.sh), then retry"
        ) from None
    _quiet_alsa()
    config = os.environ.get("ALSA_CONFIG_PATH")
    if not _state["initialised"]:
        if imported_elsewhere:
            rescan(sd)
        _state.update(initialised=True, alsa_config=config)
    elif _state["alsa_config"] != config:
        rescan(sd)
        _state["alsa_config"] = config
    return sd


def rescan(sd: ModuleType | None = None) -> None:
    """Re-read the device list (PortAudio only looks at start-up). Stops any open stream."""
    sd = sd or portaudio()
    with contextlib.suppress(Exception):
        sd._terminate()
    sd._initialize()


def _device(sd: ModuleType, index: int, d: Any) -> Device:
    apis = [a["name"] for a in sd.query_hostapis()]
    return Device(
        index=index,
        name=str(d["name"]),
        hostapi=apis[d["hostapi"]] if d["hostapi"] < len(apis) else str(d["hostapi"]),
        max_input_channels=int(d["max_input_channels"]),
        max_output_channels=int(d["max_output_channels"]),
        default_rate=float(d["default_samplerate"]),
    )


def list_devices() -> list[Device]:
    sd = portaudio()
    return [_device(sd, i, d) for i, d in enumerate(sd.query_devices())]


def find_device(spec: str | int, kind: Kind, *, channels: int = 1, option: str) -> Device:
    """The device ``spec`` (an index, or a name or unique part of one, matched the way
    sounddevice matches, preferring the devices that can ``kind``) with at least ``channels``
    channels; InputError naming it and the fix otherwise."""
    sd = portaudio()
    text = str(spec).strip()
    if text.isdigit():
        count = len(sd.query_devices())
        if int(text) >= count:
            raise InputError(
                f"{option} {text}: there is no sound device with index {text} "
                f"({count} devices; {LIST_HINT})"
            )
        index = int(text)
    else:
        index = _match(sd, text, kind, option)
    device = _device(sd, index, sd.query_devices(index))
    have = device.channels(kind)
    if have < channels:
        raise InputError(
            f"{option} {device.name!r} (device {device.index}) has {have} {kind} channel"
            f"{'' if have == 1 else 's'}, {channels} needed; pick another device ({LIST_HINT})"
        )
    return device


def _match(sd: ModuleType, text: str, kind: Kind, option: str) -> int:
    """sounddevice's name matching, among the devices that can ``kind`` first, then among all
    (so a device that exists but cannot ``kind`` is named, with its channel count)."""
    for among in (kind, None):
        try:
            return int(sd.query_devices(text, kind=among)["index"])
        except ValueError as exc:
            if str(exc).startswith("Multiple"):
                raise InputError(
                    f"{option} {text!r} matches several devices ({exc}); give the index or "
                    "the full name"
                ) from None
    raise InputError(f"{option} {text!r}: no sound device has that name ({LIST_HINT})")


def choose_rate(device: Device, kind: Kind, channels: int, rate: int | None, option: str) -> int:
    """The stream rate: the one asked for (checked), else 48 kHz if the device takes it, else its
    default rate."""
    sd = portaudio()
    check = sd.check_input_settings if kind == "input" else sd.check_output_settings
    candidates = [rate] if rate else [PREFERRED_RATE, round(device.default_rate)]
    last = ""
    for r in candidates:
        try:
            check(device=device.index, channels=channels, samplerate=r, dtype="float32")
            return int(r)
        except Exception as exc:  # sd.PortAudioError or ValueError: both mean "not this rate"
            last = str(exc)
    raise InputError(
        f"{option} {device.name!r}: {candidates[0]} Hz is not supported ({last}); "
        f"pass --rate with a rate the device supports (its default is {device.default_rate:.0f} Hz)"
    )
