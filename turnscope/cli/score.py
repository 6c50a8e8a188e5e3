"""`turnscope score`: grade one transcript file with the temporal verifier."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from turnscope.cli.console import out
from turnscope.cli.render import verdict_table
from turnscope.scoring.transcript import load_dialogue
from turnscope.scoring.verifier import score_voice_episode


def score(
    transcript: Path = typer.Argument(
        ..., help="Transcript JSON: a list of turns or {turns: [...]}."
    ),
    max_latency_ms: int | None = typer.Option(
        None, "--max-latency-ms", help="Latency budget in ms (default 1200)."
    ),
    require: list[str] = typer.Option(
        [], "--require", help="A required content keyword (repeatable)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the verifier result as JSON."),
) -> int:
    """Print the four sub-scores, the verdict and any failed floor; exit 1 on a failed verdict."""
    dialogue = load_dialogue(transcript)
    budgets = {"max_latency_ms": max_latency_ms} if max_latency_ms is not None else None
    scored = score_voice_episode(dialogue, budgets=budgets, required_content=require or None)
    if as_json:
        out.print_json(json.dumps(scored))
    else:
        out.print(verdict_table(scored, title=str(transcript)))
    return 0 if scored["result"]["pass_fail"].get("voice") else 1


def register(app: typer.Typer) -> None:
    app.command("score")(score)
