"""`turnscope scenario check`'s page: a checked scenario as a person reads it at a terminal."""

from __future__ import annotations

from rich import box
from rich.table import Table

from turnscope.cli.console import out, say
from turnscope.use_cases.scenario_check import ScenarioCheck

TEXT_CHARS = 90


def _plural(n: int, what: str) -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _counts(c: ScenarioCheck) -> str:
    into = [_plural(n, what) for n, what in
            ((c.barge_ins, "barge-in"), (c.backchannels, "backchannel")) if n]  # fmt: skip
    extra = f" ({', '.join(into)})" if into else ""
    return (
        f"{_plural(c.caller_lines, 'caller line')}{extra}, {_plural(c.agent_lines, 'agent line')}"
    )


def show_check(c: ScenarioCheck, *, lines: bool = True) -> None:
    """One line for the file; with ``lines``, how the caller goes through it, line by line."""
    say(f"ok  {c.path}  {c.name}: {_counts(c)}", markup=False)
    if not lines:
        return
    say(f"    {c.shape}", markup=False)
    for reaction in c.reactions:
        say(f"    {reaction}", markup=False)
    table = Table(box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("who", no_wrap=True)
    table.add_column("when", ratio=2, min_width=18)
    table.add_column("text", ratio=3, min_width=20)
    for p in c.lines:  # a long line's first words say which it is
        text = p.text if len(p.text) <= TEXT_CHARS else p.text[: TEXT_CHARS - 1] + "\u2026"
        table.add_row(str(p.index), p.speaker, p.when, text)
    out.print(table)
    for note in c.notes:
        say(f"    note: {note}", markup=False)
