"""`turnscope score`: grade one transcript file with the temporal verifier."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from turnscope.cli.console import out
from turnscope.cli.options import number

if TYPE_CHECKING:
    from turnscope.scoring.contract import Contract
    from turnscope.scoring.outcome import Outcome


def score_outcome(
    dialogue: Sequence[Mapping[str, Any]], contract: Contract, *, evidence_class: str
) -> Outcome:
    """``turnscope.scoring.outcome.score_outcome``, imported only when a transcript is scored
    (importing the CLI, for ``--help`` or another command, does not load the scoring stack)."""
    from turnscope.scoring.outcome import score_outcome as scored

    return scored(dialogue, contract, evidence_class=evidence_class)


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
    from turnscope.cli.render import outcome_table
    from turnscope.scoring.contract import Contract
    from turnscope.scoring.transcript import load_dialogue

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
    app.command("score", short_help="Score a transcript JSON: the sub-scores and the verdict.")(
        score
    )
