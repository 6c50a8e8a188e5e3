"""The exit codes of every command, as the README's "Exit codes" lists them."""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    PASSED = 0
    FAILED = 1  # a verdict (or the gate, or a check) failed
    BAD_INPUT = 2  # one line naming the file or flag and the fix
    BUG = 3  # a bug in turnscope: one line, and the file with the whole trace
    # a call or run could not be completed, its evidence is degraded, a device went away, a
    # measurement could not be made: what was captured is kept
    INCOMPLETE = 4
    INTERRUPTED = 130  # before a run began
