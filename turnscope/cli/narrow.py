"""Tables on a terminal too narrow for them: each row said as lines instead of a table whose
words break mid-word ('exercis' / 'ed', 'adversari' / 'al': an 80-column terminal and a suite's
seven tags did that to bench's scorecard and turn-taking tables)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.text import Text

from turnscope.cli.render import score_cell, scorecard_table
from turnscope.scoring.suites.scorecard_page import scorecard_note

__all__ = ["fits", "print_scorecard"]


def fits(console: Console, renderable: RenderableType) -> bool:
    """Whether ``renderable`` is shown at its natural width (no cell wrapped) on ``console``."""
    wide = console.options.update_width(10_000)  # measured unclamped, against the terminal
    return Measurement.get(console, wide, renderable).maximum <= console.width


def print_scorecard(console: Console, card: Mapping[str, Any]) -> None:
    """The per-tag scorecard (a table where it fits, else a line per tag), then its
    turn-taking block (turn_taking_table.py)."""
    from turnscope.cli.turn_taking_table import print_turn_taking

    table = scorecard_table(card)
    if fits(console, table):
        console.print(table)
    else:
        _lines(console, card)
    print_turn_taking(console, card)


def _lines(console: Console, card: Mapping[str, Any]) -> None:
    lower = sorted(card.get("lower_is_better", []))
    better = f"; {', '.join(lower)}: lower is better" if lower else ""
    console.print(Text(f"scorecard (per tag{better})", style="italic"))
    for tag, row in card["tags"].items():
        c = card["counts"][tag]
        line = Text.assemble((tag, "bold"), f"  {c['scored']} scored, {c['void']} void: ")
        for k, d in enumerate(card["dimensions"]):
            line.append(f"{' · ' if k else ''}{d} ")
            line.append(score_cell(row.get(d), scorecard_note(card, tag, d)))
        console.print(line)
