"""Shared terminal output: one rich Console for tables, one for errors on stderr."""

from __future__ import annotations

import os
import sys

from rich.console import Console

# Off a terminal (CI logs, pipes) rich would cut tables to 80 columns ("adversar…"): print whole
# names there, unless COLUMNS says otherwise.
_WIDTH = None if sys.stdout.isatty() or "COLUMNS" in os.environ else 200
out = Console(highlight=False, width=_WIDTH)
err = Console(stderr=True, highlight=False, width=_WIDTH)


def fail_line(message: str) -> None:
    """Print the one-line error the CLI promises instead of a traceback."""
    err.print(f"turnscope: error: {message}", markup=False, soft_wrap=True)


def warn_line(message: str) -> None:
    """Print a one-line warning to stderr."""
    err.print(f"turnscope: warning: {message}", markup=False, soft_wrap=True)
