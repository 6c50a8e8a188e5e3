"""Errors the CLI turns into one clear line and an exit code, never a traceback."""

from __future__ import annotations

from pathlib import Path


class TurnscopeError(Exception):
    """Base class for errors a user can act on."""

    exit_code = 2


class InputError(TurnscopeError):
    """Bad input: a file that is missing, unreadable or of the wrong shape (exit 2).

    The message names the file and says what to do about it.
    """

    def __init__(self, message: str, *, path: str | Path | None = None, fix: str | None = None):
        self.path = str(path) if path is not None else None
        self.fix = fix
        text = f"{self.path}: {message}" if self.path else message
        if fix:
            text = f"{text} ({fix})"
        super().__init__(text)


class EnvironmentProblem(TurnscopeError):
    """Something the machine lacks (a library, a model, a device); the message names the fix."""

    exit_code = 2
