"""`turnscope score`: grade one transcript file with the temporal verifier."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from turnscope.cli.console import out
from turnscope.cli.options import number
from turnscope.cli.render import outcome_table
from turnscope.scoring.contract import Contract
from turnscope.scoring.outcome import score_outcome
from turnscope.scoring.transcript import load_dialogue


def score(
    transcript: Path = typer.Argument(
        ..., help="Transcript JSON: a list of turns or {turns: [...]}."
    ),
    max_latency_ms: int | None = typer.Option(
        None,
        "--max-latency-ms",
        help="Latency budget in ms (default 1200).",
        callback=number(0, 600_000, above=True),
    ),
    require: list[str] = typer.Option(
        [], "--require", help="A required content keyword (repeatable)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the verifier result as JSON."),
) -> int:
    """Print the four sub-scores, the verdict and any failed floor; exit 1 on a failed verdict."""
    dialogue = load_dialogue(transcript)
    budgets = {"max_latency_ms": max_latency_ms} if max_latency_ms is not None else None
    contract = Contract(budgets=budgets, required_content=list(require) or None)
    outcome = score_outcome(dialogue, contract, evidence_class="local_gate")
    if as_json:
        out.print_json(json.dumps(outcome.verifier))
    else:
        out.print(outcome_table(outcome, title=str(transcript)))
    return 0 if outcome.passed else 1


def register(app: typer.Typer) -> None:
    app.command("score")(score)
