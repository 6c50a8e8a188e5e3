"""`turnscope calibrate`: measure an output -> input loopback's round trip with a marker."""

from __future__ import annotations

import json

import typer

from turnscope.capture.device.defaults import REPEATS
from turnscope.cli.console import fail_line, out
from turnscope.cli.exit_codes import ExitCode
from turnscope.errors import CalibrationError, CallSetupError


def calibrate(
    out_device: str = typer.Option(
        ..., "--out", help="Output device to play the marker on (`turnscope devices` lists them)."
    ),
    in_device: str = typer.Option(
        ..., "--in", help="Input device that hears that output (`turnscope devices` lists them)."
    ),
    channel: int = typer.Option(0, "--channel", help="The input channel that hears it (0: left)."),
    repeat: int = typer.Option(REPEATS, "--repeat", help="Markers to play."),
    rate: int | None = typer.Option(None, "--rate", help="Sample rate (default 48000 if taken)."),
    as_json: bool = typer.Option(False, "--json", help="Print the measurement as JSON."),
) -> int:
    """Play a marker several times and find it in the input: the round trip, median and spread,
    and the latency PortAudio's stream times leave out (what a device call corrects)."""
    from turnscope.use_cases.calibration import calibrate_loopback as measure

    try:
        found = measure(out_device, in_device, channel=channel, repeats=repeat, rate=rate)
    except (CalibrationError, CallSetupError) as exc:
        fail_line(str(exc))
        return ExitCode.INCOMPLETE  # the measurement could not be made
    cal = found.calibration
    if as_json:
        print(json.dumps(cal.to_dict(), indent=2))
        return 0
    trips = cal.round_trips_ms
    out.print(
        f"round trip {found.output} -> {found.input}: {cal.round_trip_ms:.1f} ms median "
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
    app.command("calibrate", short_help="Measure a sound-device loopback's round trip.")(calibrate)
