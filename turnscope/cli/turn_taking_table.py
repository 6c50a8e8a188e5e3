"""`turnscope bench`'s turn-taking block: the scorecard's per-tag Full-Duplex-Bench measures
(scoring/suites/turn_taking_view.py words them), a rich table on a terminal, plain aligned
columns when piped (a CI log, a grep: one line per metric, its gate name first)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from turnscope.scoring.suites.turn_taking_view import (
    NONE_EXERCISED,
    State,
    ViewRow,
    exercised_any,
    rows,
    tags_of,
)

TITLE = "turn-taking (per tag: the mean over the scored tasks that exercised each metric)"
_STYLE = {State.FAIL: "bold red", State.WORSE: "red", State.BETTER: "green",
          State.NOT_EXERCISED: "yellow", State.VALUE: ""}  # fmt: skip


def rich_table(view: Sequence[ViewRow], tags: Sequence[str]) -> Table:
    """Metrics as rows (label, gate name, which way is better), tags as columns."""
    table = Table(title=TITLE, title_justify="left")
    table.add_column("metric", overflow="fold")
    for tag in tags:
        table.add_column(tag, justify="right", overflow="fold")
    for r in view:
        label = Text.assemble(r.label, (f"\n{r.metric}, {r.better}", "dim"))
        table.add_row(label, *(Text(c.text, _STYLE[c.state]) for c in r.cells))
    return table


def plain_lines(view: Sequence[ViewRow], tags: Sequence[str]) -> list[str]:
    """The same block as aligned plain text: no box drawing, no colour."""
    head = ["metric", "better", *tags]
    body = [[r.metric, r.better.split()[0], *(c.text for c in r.cells)] for r in view]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]

    def line(cells: Sequence[str]) -> str:
        pairs = enumerate(zip(cells, widths, strict=True))
        return "  ".join(c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in pairs).rstrip()

    return [TITLE, line(head), *(line(b) for b in body)]


def print_turn_taking(console: Console, card: Mapping[str, Any]) -> None:
    """Print the scorecard's turn-taking block (nothing for a scorecard without one)."""
    view = rows(card)
    if not view:
        return
    if not exercised_any(view):
        console.print(NONE_EXERCISED, markup=False, soft_wrap=True)
    elif console.is_terminal:
        console.print(rich_table(view, tags_of(card)))
    else:
        for text in plain_lines(view, tags_of(card)):
            console.print(text, markup=False, soft_wrap=True, highlight=False)
