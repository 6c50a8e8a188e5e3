"""`turnscope calibrate`: measure an output -> input loopback's round trip with a marker."""

from __future__ import annotations

import json

import typer

from turnscope.cli.console import fail_line, out
from turnscope.errors import CalibrationError, CallSetupError, InputError

FAILED = 4  # the measurement could not be made
# turnscope.capture.device.calibration.REPEATS, without importing the sound stack for --help
# (tests/test_cli_basics.py checks the two agree)
REPEATS = 5


def calibrate(
    out_device: str = typer.Option(..., "--out", help="Output device to play the marker on."),
    in_device: str = typer.Option(..., "--in", help="Input device that hears that output."),
    channel: int = typer.Option(0, "--channel", help="The input channel that hears it (0: left)."),
    repeat: int = typer.Option(REPEATS, "--repeat", help="Markers to play."),
    rate: int | None = typer.Option(None, "--rate", help="Sample rate (default 48000 if taken)."),
    as_json: bool = typer.Option(False, "--json", help="Print the measurement as JSON."),
) -> int:
    """Play a marker several times and find it in the input: the round trip, median and spread,
    and the latency PortAudio's stream times leave out (what a device call corrects)."""
    import asyncio

    from turnscope.capture.device.calibration import calibrate_devices
    from turnscope.capture.device.io import choose_rate, find_device

    if repeat < 1 or channel < 0:
        raise InputError("--repeat must be at least 1 and --channel at least 0")
    output = find_device(out_device, "output", option="--out")
    loopback = find_device(in_device, "input", channels=channel + 1, option="--in")
    out_rate = choose_rate(output, "output", 1, rate, "--out")
    in_rate = choose_rate(loopback, "input", channel + 1, rate, "--in")
    try:
        cal = asyncio.run(
            calibrate_devices(
                output,
                loopback,
                out_rate=out_rate,
                in_rate=in_rate,
                channel=channel,
                channels=channel + 1,
                repeats=repeat,
            )
        )
    except (CalibrationError, CallSetupError) as exc:
        fail_line(str(exc))
        return FAILED
    if as_json:
        print(json.dumps(cal.to_dict(), indent=2))
        return 0
    trips = cal.round_trips_ms
    out.print(
        f"round trip {output.name} -> {loopback.name}: {cal.round_trip_ms:.1f} ms median "
        f"(spread {max(trips) - min(trips):.1f} ms over {len(trips)} of {repeat} markers), "
        "callback to callback",
        soft_wrap=True,
    )
    out.print(
        f"left out by PortAudio's stream times: {cal.correction_ms:+.2f} ms median "
        f"(spread {cal.spread_ms:.2f} ms); a device call subtracts this from captured audio",
        soft_wrap=True,
    )
    return 0


def register(app: typer.Typer) -> None:
    app.command("calibrate")(calibrate)
