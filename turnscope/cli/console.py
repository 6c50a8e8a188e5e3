"""Shared terminal output: one rich Console for tables, one for errors on stderr."""

from __future__ import annotations

from rich.console import Console

out = Console(highlight=False)
err = Console(stderr=True, highlight=False)


def fail_line(message: str) -> None:
    """Print the one-line error the CLI promises instead of a traceback."""
    err.print(f"turnscope: error: {message}", markup=False, soft_wrap=True)


def warn_line(message: str) -> None:
    """Print a one-line warning to stderr."""
    err.print(f"turnscope: warning: {message}", markup=False, soft_wrap=True)
