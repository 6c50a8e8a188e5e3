"""`turnscope synth`: render a scenario into a labelled two-channel test call."""

from __future__ import annotations

from pathlib import Path

import typer
from rich import box
from rich.table import Table

from turnscope.cli.console import out, say, warn_line
from turnscope.cli.options import caller_voice_option, number
from turnscope.errors import InputError


def synth(
    scenario: Path = typer.Argument(..., help="Scenario YAML (see configs/scenarios/)."),
    output: Path = typer.Option(..., "-o", "--output", help="Folder to write the call into."),
    caller_voice: str | None = caller_voice_option(),
    agent_voice: str | None = typer.Option(
        None,
        "--agent-voice",
        help="Voice for every agent line: espeak-ng (en-gb) or Piper (piper:joe-us, "
        "piper:PATH.onnx).",
    ),
    snr_db: float | None = typer.Option(
        None,
        "--snr-db",
        help="Add pink noise per channel at this SNR (dB).",
        callback=number(-20, 80),
    ),
    telephone: bool = typer.Option(
        False, "--telephone", help="Pass both channels through an 8 kHz mu-law phone line."
    ),
    seed: int | None = typer.Option(None, "--seed", help="Seed of the --snr-db noise (default 0)."),
) -> int:
    """Write call.wav (left caller, right agent), caller.wav, agent.wav, truth.json and
    reference.json for SCENARIO into the output folder."""
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.actors.caller.synth import render, write_call
    from turnscope.use_cases.scenario_notes import synth_asks_no_llm, synth_has_no_agent

    if seed is not None and snr_db is None:  # it would seed nothing
        raise InputError("--seed seeds the noise --snr-db adds: give --snr-db too, or leave "
                         "--seed out (a scenario's caller.acoustics has its own)")  # fmt: skip
    sc = load_scenario(scenario)
    for note in (synth_asks_no_llm(sc), synth_has_no_agent(sc)):
        if note is not None:
            warn_line(note)
    call = render(sc, caller_voice=caller_voice, agent_voice=agent_voice, snr_db=snr_db,
                  telephone=telephone, seed=seed or 0)  # fmt: skip
    paths = write_call(call, output)
    table = Table(
        title=f"{call.scenario}: {call.duration_ms / 1000:.1f} s",
        title_justify="left",
        box=box.SIMPLE_HEAD,
    )
    for name in ("speaker", "ms", "kind"):
        table.add_column(name, no_wrap=True)
    table.add_column("text", no_wrap=True, overflow="ellipsis")
    room = max(20, out.width - 42)  # the text gives way on a narrow terminal, not the times
    for u in call.truth()["utterances"]:
        kind = {"barge_in": "interrupt", "backchannel": "backchannel"}.get(u["kind"], "turn")
        if u["truncated"]:
            kind += ", cut"
        text = u["text"] if len(u["text"]) <= room else u["text"][: room - 1] + "\u2026"
        span = f"{u['start_ms']:.0f}-{u['end_ms']:.0f}"
        table.add_row(u["speaker"], span, kind, text)
    out.print(table)
    for path in paths.values():
        say(f"wrote {path}")
    return 0


def register(app: typer.Typer) -> None:
    app.command("synth", short_help="Synthesise a scenario into a two-channel recording.")(synth)
