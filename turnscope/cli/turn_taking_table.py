"""`turnscope bench`'s turn-taking block: the scorecard's per-tag Full-Duplex-Bench measures
(scoring/suites/turn_taking_view.py words them), a rich table on a terminal, plain aligned
columns when piped (a CI log, a grep: one line per metric, its gate name first)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from turnscope.cli.narrow import fits
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


def stacked(view: Sequence[ViewRow], tags: Sequence[str]) -> list[Text]:
    """For a terminal narrower than the table: each metric on a line, then its value per tag."""
    lines = [Text(TITLE, style="italic")]
    for r in view:
        head = Text.assemble((r.label, "bold"), (f"  {r.metric}, {r.better}", "dim"))
        pairs = list(zip(tags, r.cells, strict=True))
        shown = [(t, c) for t, c in pairs if c.state is not State.NOT_EXERCISED]
        missed = [t for t, c in pairs if c.state is State.NOT_EXERCISED]
        if not shown:
            lines.append(head.append(": not exercised on any tag", _STYLE[State.NOT_EXERCISED]))
            continue
        lines.append(head)
        values = Text("  ")
        for k, (tag, c) in enumerate(shown):
            values.append(f"{' · ' if k else ''}{tag} ")
            values.append(c.text, _STYLE[c.state])
        if missed:
            values.append(f"; not exercised: {', '.join(missed)}", _STYLE[State.NOT_EXERCISED])
        lines.append(values)
    return lines


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
        table = rich_table(view, tags_of(card))
        for part in [table] if fits(console, table) else stacked(view, tags_of(card)):
            console.print(part)
    else:
        for text in plain_lines(view, tags_of(card)):
            console.print(text, markup=False, soft_wrap=True, highlight=False)
