"""`turnscope devices`: the sound devices PortAudio sees, for --caller-out/--agent-in/--in/--out."""

from __future__ import annotations

import json

import typer
from rich.table import Table

from turnscope.cli.console import out

VIRTUAL_HINT = (
    "no sound devices found; virtual ones for a headless machine: "
    'scripts/pulse.sh start (then `eval "$(scripts/pulse.sh env)"` in other shells)'
)


def devices(
    as_json: bool = typer.Option(False, "--json", help="Print the devices as JSON."),
) -> int:
    """List input and output devices: index, name, host API, channels, default rate."""
    from turnscope.capture.device.io import list_devices

    found = list_devices()
    if as_json:
        print(json.dumps([d.to_dict() for d in found], indent=2))
        return 0
    if not found:  # an empty table says less than the line
        out.print(VIRTUAL_HINT, soft_wrap=True)
        return 0
    table = Table(title="sound devices", title_justify="left")
    for name, justify in (
        ("index", "right"),
        ("name", "left"),
        ("host API", "left"),
        ("in", "right"),
        ("out", "right"),
        ("default rate", "right"),
    ):
        table.add_column(name, justify=justify)  # type: ignore[arg-type]
    for d in found:
        table.add_row(
            str(d.index),
            d.name,
            d.hostapi,
            str(d.max_input_channels),
            str(d.max_output_channels),
            f"{d.default_rate:.0f} Hz",
        )
    out.print(table)
    return 0


def register(app: typer.Typer) -> None:
    app.command("devices", short_help="List the sound devices (for --device calls).")(devices)
