"""Shared terminal output: one rich Console for tables, one for errors on stderr."""

from __future__ import annotations

import os
import sys
from typing import Any

from rich.console import Console

from turnscope import redact


class _Scrubbed:
    """The process's stdout or stderr (whichever it is at the time of writing: tests swap
    them), with every secret the user gave scrubbed from what is printed."""

    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def _stream(self) -> Any:
        return getattr(sys, self.name)

    def write(self, text: str) -> int:
        return self._stream.write(redact.scrub(text))

    def flush(self) -> None:
        self._stream.flush()

    def isatty(self) -> bool:
        return self._stream.isatty()

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"


# Off a terminal (CI logs, pipes) rich would cut tables to 80 columns ("adversar…"): print whole
# names there, unless COLUMNS says otherwise.
_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 200
out = Console(file=_Scrubbed("stdout"), highlight=False, width=_WIDTH)  # type: ignore[arg-type]
err = Console(file=_Scrubbed("stderr"), highlight=False, width=_WIDTH)  # type: ignore[arg-type]


def say(message: str, *, markup: bool = True) -> None:
    """Print a line of the command's own output unwrapped (a path or a ``ray:`` line must
    survive a narrow terminal, ``COLUMNS=80`` in a CI log, and a grep)."""
    out.print(message, markup=markup, soft_wrap=True)


def fail_line(message: str) -> None:
    """Print the one-line error the CLI promises instead of a traceback."""
    err.print(f"turnscope: error: {message}", markup=False, soft_wrap=True)


def warn_line(message: str) -> None:
    """Print a one-line warning to stderr."""
    err.print(f"turnscope: warning: {message}", markup=False, soft_wrap=True)
