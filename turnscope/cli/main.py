"""Entry point: builds the typer app from the command modules and runs it inside the error
boundary (``boundary.py``)."""

from __future__ import annotations

import sys

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
    scenario,
    score,
    suite,
    synth,
    validate,
)
from turnscope.cli.boundary import guarded, write_crash_trace
from turnscope.cli.console import finish, say
from turnscope.cli.help import dress

__all__ = ["app", "main", "run", "write_crash_trace"]

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
    scenario,
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
ASR_COMMANDS = {"replay", "bench", "call", "demo", "scenario"}  # scenario from-recording replays


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; user-facing errors become one line and exit code 2, never a traceback."""
    args = _optional_values(sys.argv[1:] if argv is None else list(argv))

    def command() -> object:
        if args and args[0] in ASR_COMMANDS and not {"--help", "-h"} & set(args):
            from turnscope.asr.worker import start_asr_worker

            start_asr_worker()
        return app(args=args, prog_name="turnscope", standalone_mode=False)

    return guarded(command, args)


def run() -> None:
    """Console-script entry point."""
    code = main()
    if "turnscope.asr.worker" in sys.modules:  # a command that used ASR is done with it
        from turnscope.asr.worker import stop_asr_worker

        stop_asr_worker()
    finish()  # what the terminal has not shown yet (it may be held by Ctrl-S) is not lost
    sys.exit(code)
