"""The calibration's defaults that the command line shows in ``--help``: a module with no
imports, so the CLI reads them without loading the sound stack."""

from __future__ import annotations

__all__ = ["REPEATS"]

REPEATS = 5  # markers played in one loopback calibration
