"""A usage error (a required argument or option left out, an unknown option or command, an
option without its value, an extra argument) as the one line the CLI promises: what is wrong,
what fixes it (a command line of the command's own ``--help`` examples, its commands, or the
options click found close) and where every option is listed; not click's four-line usage
block."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from turnscope.cli.examples import EXAMPLES

__all__ = ["missing_line", "usage_line"]


def _is_argument(param: Any) -> bool:
    return getattr(param, "param_type_name", "") == "argument"


def _what(param: Any) -> tuple[str, str]:
    """(how the person types it, what it is): ``--out`` or ``SUITE``, and its help's first
    sentence."""
    name = (
        (param.metavar or param.name or "").upper()
        if _is_argument(param)
        else " / ".join(param.opts)
    )
    first = (getattr(param, "help", None) or "").split(". ")[0].rstrip(".")
    return name, first[:1].lower() + first[1:]


def _example(command: str, param: Any) -> str:
    """The first of the command's examples that gives ``param`` (any example, for an argument)."""
    lines = EXAMPLES.get(command, ())
    if not _is_argument(param):
        lines = tuple(x for x in lines if set(param.opts) & set(x.split()))
    return lines[0] if lines else ""


def _where(ctx: Any, args: Sequence[str] = ()) -> tuple[str, str]:
    """(the command as typed after ``turnscope``, where its options are listed)."""
    if ctx is None:  # click raised it while parsing its options: the command from what was typed
        words = [a for a in args[:2] if not a.startswith("-")]
        known = [" ".join(words[:n]) for n in (2, 1) if " ".join(words[:n]) in EXAMPLES]
        if not known:
            return "", "the command's --help lists its options"
        return known[0], f"`turnscope {known[0]} --help` lists every option"
    path = ctx.command_path
    return path.removeprefix("turnscope").strip(), f"`{path} --help` lists every option"


def missing_line(exc: Any) -> str:
    """A required argument or option left out: ``bench needs SUITE: what it is; e.g. `turnscope
    bench voice_starter --use-reference`; `turnscope bench --help` lists every option``."""
    command, more = _where(exc.ctx)
    if exc.param is None:
        return usage_line(exc)
    name, what = _what(exc.param)
    example = _example(command, exc.param)
    return (
        f"{command or 'turnscope'} needs {name}"
        + (f": {what}" if what else "")
        + (f"; e.g. `{example}`" if example else "")
        + f"; {more}"
    )


def usage_line(exc: Any, args: Sequence[str] = ()) -> str:
    """Any other usage error: click's message (it names the option, and the close ones), the
    commands when a command was not found, and where the options are listed."""
    message = exc.format_message().rstrip(".")
    message = message[:1].lower() + message[1:]
    command, more = _where(exc.ctx, args)
    group = getattr(exc.ctx, "command", None)
    if hasattr(group, "list_commands"):  # a command group: what was typed is not one of its own
        names = ", ".join(group.list_commands(exc.ctx))
        more = f"its commands: {names}; `{exc.ctx.command_path} --help` says what each does"
    return (f"{command}: " if command else "") + f"{message}; {more}"
