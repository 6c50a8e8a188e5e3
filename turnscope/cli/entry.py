"""The console script's entry point: the CLI is imported under a Ctrl-C guard, so an interrupt
while it loads is one line and exit 130, never a traceback (this module imports nothing heavy)."""

from __future__ import annotations

import sys

__all__ = ["run"]


def run() -> None:
    """Console-script entry point (``turnscope``)."""
    try:
        from turnscope.cli.main import run as cli
    except KeyboardInterrupt:
        sys.stderr.write("turnscope: error: interrupted (Ctrl-C)\n")
        sys.exit(130)
    cli()
