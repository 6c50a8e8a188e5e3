"""The CLI's error boundary: every error a command raises becomes one line and an exit code,
never a traceback (a bug's whole trace goes to a file)."""

from __future__ import annotations

import os
import tempfile
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import click
import typer

from turnscope import __version__
from turnscope.cli.console import fail_line
from turnscope.cli.exit_codes import ExitCode
from turnscope.cli.usage_line import missing_line, usage_line
from turnscope.errors import OutputError, TurnscopeError

# typer >= 0.22 carries its own copy of click: its usage errors and aborts are not click's.
_USAGE_ERRORS = (click.ClickException, getattr(typer, "TyperException", click.ClickException))
_ABORTS = (click.exceptions.Abort, getattr(typer, "Abort", click.exceptions.Abort))
_BAD_VALUES = (click.BadParameter, getattr(typer, "BadParameter", click.BadParameter))
# typer's own click's exceptions module, where it has one (click's own before typer 0.22).
_TYPER_CLICK = getattr(getattr(typer, "_click", None), "exceptions", click.exceptions)
_MISSING = (click.MissingParameter, _TYPER_CLICK.MissingParameter)
_USAGE = (click.UsageError, _TYPER_CLICK.UsageError)
# A command group typed alone: its help is what the person wants to see (click >= 8.2).
_HELP_SHOWN = tuple(
    m.NoArgsIsHelpError for m in (click.exceptions, _TYPER_CLICK) if hasattr(m, "NoArgsIsHelpError")
)


INTERRUPTED = "interrupted (Ctrl-C)"


def guarded(command: Callable[[], Any], args: Sequence[str] = ()) -> int:
    """Run ``command`` (the CLI given ``args``); user-facing errors become one line and exit
    code 2, never a traceback."""
    try:
        code = command()
    except TurnscopeError as exc:
        fail_line(str(exc))
        return exc.exit_code
    except _MISSING as exc:  # a required argument or option left out: name it and the fix
        fail_line(missing_line(exc))
        return ExitCode.BAD_INPUT
    except _BAD_VALUES as exc:  # a bad value for an option: one line naming the flag, exit 2
        fail_line(exc.format_message().replace("Invalid value", "invalid value", 1))
        return ExitCode.BAD_INPUT
    except _HELP_SHOWN as exc:
        exc.show()
        return int(exc.exit_code)
    except _USAGE as exc:  # an unknown option or command, an extra argument: one line, exit 2
        fail_line(usage_line(exc, args))
        return ExitCode.BAD_INPUT
    except _USAGE_ERRORS as exc:  # any other of click's errors: its own message, its exit code
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            fail_line(str(exc))
        return int(getattr(exc, "exit_code", 2))
    except _ABORTS:
        fail_line("aborted")
        return ExitCode.INTERRUPTED
    except KeyboardInterrupt:
        fail_line(INTERRUPTED)
        return ExitCode.INTERRUPTED
    except OSError as exc:  # a path or OS problem the command did not expect: still bad input
        fail_line(str(error := OutputError(exc)))
        return error.exit_code
    except Exception as exc:  # a bug in turnscope: one line, and the whole trace in a file
        return bug(exc)
    if code == ExitCode.INTERRUPTED:  # typer turns a Ctrl-C into exit 130 and says nothing
        fail_line(INTERRUPTED)
    return code if isinstance(code, int) else 0


def bug(exc: Exception) -> int:
    """A bug in turnscope: one line naming the file its trace went to (exit 3); raised as it
    is with TURNSCOPE_DEBUG set."""
    if os.environ.get("TURNSCOPE_DEBUG"):
        raise exc
    where = write_crash_trace(exc)
    fail_line(
        f"internal error (a bug in turnscope): {type(exc).__name__}: {exc}; the full "
        f"trace is in {where}"
    )
    return ExitCode.BUG


def write_crash_trace(exc: BaseException) -> str:
    """Write the traceback (secrets scrubbed) where it can be found and sent; its path."""
    from turnscope.jsonio import write_text

    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    name = f"turnscope-crash-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
    for folder in (Path(tempfile.gettempdir()), Path.cwd()):
        try:
            return str(write_text(folder / name, f"turnscope {__version__}\n{text}"))
        except TurnscopeError:
            continue
    return "(nowhere: no folder would take it; set TURNSCOPE_DEBUG=1 to print it)"
