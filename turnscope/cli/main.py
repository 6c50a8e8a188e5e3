"""Entry point: builds the typer app from the command modules and owns the error boundary."""

from __future__ import annotations

import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import click
import typer

from turnscope import __version__
from turnscope.cli import (
    agent,
    bench,
    calibrate,
    call,
    demo,
    devices,
    doctor,
    fixture,
    gate,
    load,
    replay,
    report,
    score,
    suite,
    synth,
    validate,
)
from turnscope.cli.console import fail_line, finish, say
from turnscope.cli.help import dress
from turnscope.errors import OutputError, TurnscopeError

app = typer.Typer(
    name="turnscope",
    help="Test voice agents the way their callers meet them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
for module in (
    demo,
    call,
    agent,
    replay,
    bench,
    load,
    score,
    synth,
    validate,
    gate,
    fixture,
    suite,
    doctor,
    report,
    devices,
    calibrate,
):
    module.register(app)
dress(app)  # every command: options in groups, examples at the end of its --help


def _print_version(value: bool) -> None:
    if value:
        say(f"turnscope {__version__}", markup=False)
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False,
        "--version",
        "-V",
        is_eager=True,
        callback=_print_version,
        help="Print turnscope's version and exit.",
    ),
) -> None:
    """Test voice agents the way their callers meet them."""


# typer >= 0.22 carries its own copy of click: its usage errors and aborts are not click's.
_USAGE_ERRORS = (click.ClickException, getattr(typer, "TyperException", click.ClickException))
_ABORTS = (click.exceptions.Abort, getattr(typer, "Abort", click.exceptions.Abort))
_BAD_VALUES = (click.BadParameter, getattr(typer, "BadParameter", click.BadParameter))


# Options whose value may be left out, and the value that then means (click has no such option).
OPTIONAL_VALUES = {"--ray": "local"}


def _optional_values(args: list[str]) -> list[str]:
    """``--ray`` alone (last, or before another option) as ``--ray local``."""
    out = []
    for k, a in enumerate(args):
        out.append(a)
        if a in OPTIONAL_VALUES and (k + 1 == len(args) or args[k + 1].startswith("-")):
            out.append(OPTIONAL_VALUES[a])
    return out


# Commands that transcribe: their ASR process starts before they parse their options.
ASR_COMMANDS = {"replay", "bench", "call", "demo"}


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user-facing errors become one line and exit code 2, never a traceback."""
    args = _optional_values(sys.argv[1:] if argv is None else list(argv))
    if args and args[0] in ASR_COMMANDS and not {"--help", "-h"} & set(args):
        from turnscope.asr.worker import start_asr_worker

        start_asr_worker()
    try:
        code = app(args=args, prog_name="turnscope", standalone_mode=False)
    except TurnscopeError as exc:
        fail_line(str(exc))
        return exc.exit_code
    except _BAD_VALUES as exc:  # a bad value for an option: one line naming the flag, exit 2
        fail_line(exc.format_message().replace("Invalid value", "invalid value", 1))
        return 2
    except _USAGE_ERRORS as exc:  # usage errors: click's own message (and usage line), exit 2
        show = getattr(exc, "show", None)
        if show is not None:
            show()
        else:
            fail_line(str(exc))
        return int(getattr(exc, "exit_code", 2))
    except _ABORTS:
        fail_line("aborted")
        return 130
    except KeyboardInterrupt:
        fail_line("interrupted")
        return 130
    except OSError as exc:  # a path or OS problem the command did not expect: still bad input
        error = OutputError(exc)
        fail_line(str(error))
        return error.exit_code
    except Exception as exc:  # a bug in turnscope: one line, and the whole trace in a file
        if os.environ.get("TURNSCOPE_DEBUG"):
            raise
        where = write_crash_trace(exc)
        fail_line(
            f"internal error (a bug in turnscope): {type(exc).__name__}: {exc}; the full "
            f"trace is in {where}"
        )
        return 3
    return code if isinstance(code, int) else 0


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


def run() -> None:
    """Console-script entry point."""
    code = main()
    if "turnscope.asr.worker" in sys.modules:  # a command that used ASR is done with it
        from turnscope.asr.worker import stop_asr_worker

        stop_asr_worker()
    finish()  # what the terminal has not shown yet (it may be held by Ctrl-S) is not lost
    sys.exit(code)
