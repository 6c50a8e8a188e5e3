"""`turnscope calibrate` as a function: an output -> input loopback's round trip measured with a
marker, and the latency PortAudio's stream times leave out."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from turnscope.capture.device.calibration import REPEATS, Calibration, calibrate_devices
from turnscope.capture.device.io import choose_rate, find_device
from turnscope.errors import InputError


@dataclass(frozen=True)
class LoopbackCalibration:
    """The measurement, and the two devices' names as found."""

    output: str
    input: str
    repeats: int
    calibration: Calibration


def calibrate_loopback(
    out_device: str,
    in_device: str,
    *,
    channel: int = 0,
    repeats: int = REPEATS,
    rate: int | None = None,
) -> LoopbackCalibration:
    """Play a marker ``repeats`` times on ``out_device`` (a name or index) and find it on
    ``in_device``'s ``channel``. InputError for an unknown or unfit device; CalibrationError or
    CallSetupError when the measurement cannot be made."""
    if repeats < 1 or channel < 0:
        raise InputError("--repeat must be at least 1 and --channel at least 0")
    output = find_device(out_device, "output", option="--out")
    loopback = find_device(in_device, "input", channels=channel + 1, option="--in")
    out_rate = choose_rate(output, "output", 1, rate, "--out")
    in_rate = choose_rate(loopback, "input", channel + 1, rate, "--in")
    cal = asyncio.run(
        calibrate_devices(
            output,
            loopback,
            out_rate=out_rate,
            in_rate=in_rate,
            channel=channel,
            channels=channel + 1,
            repeats=repeats,
        )
    )
    return LoopbackCalibration(output.name, loopback.name, repeats, cal)
