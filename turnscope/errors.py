"""Errors the CLI turns into one clear line and an exit code, never a traceback."""

from __future__ import annotations

import enum
import errno
import os
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


class ParseProblem(enum.Enum):
    """Why untrusted JSON or YAML was refused (jsonio's limits)."""

    INVALID = "not valid"
    TOO_LARGE = "too large"
    TOO_DEEP = "nested too deep"
    TOO_MANY = "too many items"
    BAD_NUMBER = "a number not finite or too large"


class ParseError(InputError, ValueError):
    """Untrusted JSON or YAML that is invalid or passes a limit (exit 2 for a file; a message
    from an agent is counted and said). A ValueError too, as json's own errors are."""

    def __init__(
        self,
        problem: ParseProblem,
        detail: str,
        *,
        path: str | Path | None = None,
        fix: str | None = None,
    ):
        self.problem = problem
        super().__init__(detail, path=path, fix=fix)


class UnusableRecording(InputError):
    """A recording found to hold no audio only as it is decoded (no samples, every one NaN):
    bad input, said after a replay began writing its folder (which it then clears)."""


class SetupFailure(str, enum.Enum):
    """Why a call could not be set up, as counted (a load run's failures by kind)."""

    INTERRUPTED = "interrupted"
    REFUSED = "refused"
    UNREACHABLE = "unreachable"
    TIMEOUT = "timeout"
    ICE_FAILED = "ice failed"
    CLOSED_AT_ONCE = "closed at once"
    BAD_ANSWER = "bad answer"
    DEVICE = "device"
    OTHER = "other"


class CallSetupError(TurnscopeError):
    """The call could not be set up (signaling refused, a bad answer, ICE failed, a device that
    would not start): exit 4, and the run still leaves a bundle that says why. ``kind`` says
    which, as a code."""

    exit_code = 4

    def __init__(self, message: str, kind: SetupFailure = SetupFailure.OTHER) -> None:
        super().__init__(message)
        self.kind = kind


class UploadError(TurnscopeError):
    """A bundle could not be uploaded to object storage (exit 4: it is kept locally, and the
    message says where)."""

    exit_code = 4


class CalibrationError(TurnscopeError):
    """The marker did not come back (or not consistently): the timing stays uncalibrated
    (exit 4 where a measurement was asked for)."""

    exit_code = 4


class BenchError(TurnscopeError, ValueError):
    """A bench run that cannot start: wrong control mode, no submission, unknown evidence class."""


class EnvironmentProblem(TurnscopeError):
    """Something the machine lacks (a library, a model, a device); the message names the fix."""

    exit_code = 2


_FIXES = {
    errno.ENOSPC: "the disk is full: free some space, or write elsewhere with -o",
    errno.EDQUOT: "the disk quota is used up: free some space, or write elsewhere with -o",
    errno.EACCES: "no permission to write there: choose another folder with -o",
    errno.EPERM: "no permission to write there: choose another folder with -o",
    errno.EROFS: "that file system is read-only: choose another folder with -o",
    errno.ENOTDIR: "a part of that path is a file, not a folder: choose another path",
    errno.EISDIR: "that path is a folder: give a file name",
    errno.EEXIST: "that path already exists: choose another one",
    errno.ENAMETOOLONG: "that path is too long: choose a shorter one",
}


class OutputError(TurnscopeError):
    """turnscope could not write (or read) a file: the path, the system's reason and the fix
    (exit 2: a path or OS problem is bad input)."""

    def __init__(self, exc: OSError, path: str | Path | None = None):
        self.errno = exc.errno
        self.path = str(path if path is not None else exc.filename or "")
        reason = exc.strerror or os.strerror(exc.errno or 0) or type(exc).__name__
        fix = _FIXES.get(exc.errno or -1, "check the path and its permissions")
        where = f"{self.path}: " if self.path else ""
        super().__init__(f"{where}{reason} ({fix})")

    @property
    def disk_full(self) -> bool:
        return self.errno in (errno.ENOSPC, errno.EDQUOT)


class NotAFile(OutputError):
    """An output's path holds something other than a regular file (a FIFO, a device node, a
    folder, a symbolic link): it is never replaced (exit 2)."""

    def __init__(self, path: str | Path, kind: str):
        self.errno = None
        self.path = str(path)
        TurnscopeError.__init__(
            self,
            f"{path}: is {kind}, not a regular file; turnscope writes only over regular files "
            "(remove it, or choose another path)",
        )


def brief(exc: BaseException) -> str:
    """An exception's message on one line, at most 300 characters (its type when empty)."""
    return printable(str(exc), 300) or type(exc).__name__


def printable(text: str, limit: int = 300) -> str:
    """Text from outside (an agent's error page, a close reason, a library's message quoting
    either) fit for one terminal line: whitespace runs are one space, every other control or
    format character (the ESC of a terminal escape sequence, a bidi override) is shown escaped
    as Python writes it (``\\x1b``), never sent raw; cut to ``limit`` characters."""
    text = " ".join(text[: limit * 4].split())  # bounded work, however long the text
    if not text.isprintable():
        text = "".join(
            c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text
        )
    return text if len(text) <= limit else text[:limit] + "..."
