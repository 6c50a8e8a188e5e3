"""How a command's ``--help`` reads: options in groups (each option's ``rich_help_panel``, also
without rich) and examples that are whole command lines, never rewrapped."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand, TyperGroup

from turnscope.cli.examples import EXAMPLES, GROUP_EXAMPLES, GROUP_NOTE

OPTIONS = "Options"  # the group of an option that names none (and --help)

# The groups the commands share, in the order they are listed.
TRANSPORT = "Transport"
DEVICE = "Sound devices"
CALLER = "Caller"
SCORING = "Scoring"
ASR = "ASR"
OUTPUT = "Output"
RUN = "Running"


class GroupedCommand(TyperCommand):
    """A command whose help lists its options under their groups and keeps its examples as
    written (click would rewrap them into one paragraph)."""

    def format_options(self, ctx: Any, formatter: Any) -> None:
        args, groups = [], {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx)
            if record is None:
                continue
            if param.param_type_name == "argument":
                args.append(record)
            else:
                groups.setdefault(getattr(param, "rich_help_panel", None) or OPTIONS, []).append(
                    record
                )
        if args:
            with formatter.section("Arguments"):
                formatter.write_dl(args)
        # The ungrouped options (and --help) last: the groups are what the command is about.
        for name in sorted(groups, key=lambda g: g == OPTIONS):
            with formatter.section(name):
                formatter.write_dl(groups[name])

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        write_epilog(self.epilog, formatter)


class ExamplesGroup(TyperGroup):
    """A command group (the root, ``scenario``) whose help ends with its examples as written."""

    def format_epilog(self, ctx: Any, formatter: Any) -> None:
        write_epilog(self.epilog, formatter)


def write_epilog(epilog: str | None, formatter: Any) -> None:
    """An epilog's blocks: a heading ending in ":" and its command lines kept as they are,
    other blocks wrapped as prose."""
    if not epilog:
        return
    for block in epilog.strip().split("\n\n"):
        lines = block.splitlines()
        formatter.write_paragraph()
        if lines and lines[0].rstrip().endswith(":"):  # a heading and its command lines
            formatter.write_text(lines[0])
            with formatter.indentation():
                for line in lines[1:]:
                    formatter.write(f"{' ' * formatter.current_indent}{line}\n")
        else:
            with formatter.indentation():
                formatter.write_text(block)


def examples(*lines: str, note: str | None = None) -> str:
    """An epilog: the command lines under "Examples (from the repository's root):", then a
    note (wrapped as prose)."""
    text = "Examples (from the repository's root):\n" + "\n".join(lines)
    return text if note is None else f"{text}\n\n{note}"


def groups(fn: Callable[..., Any], table: dict[str, str]) -> None:
    """Put each option of command ``fn`` named in ``table`` (group: "param param ...") in its
    help group (typer's ``rich_help_panel`` on the option's declaration); a name that is not
    one of ``fn``'s parameters is a bug, raised at import."""
    params = inspect.signature(fn).parameters
    for group, names in table.items():
        for name in names.split():
            if name not in params:
                raise KeyError(f"{fn.__name__} has no parameter {name!r}")
            params[name].default.rich_help_panel = group


def dress(app: typer.Typer, prefix: str = "") -> None:
    """Give every command of ``app`` (and of its sub-apps) grouped options and its examples
    (before the epilog it declared itself, e.g. bench's and gate's CI recipe); a group with
    examples of its own (the root, ``scenario``, ``fixture``, ``suite``) ends its help with them."""
    group = prefix.strip() or "turnscope"
    if group in GROUP_EXAMPLES:
        app.info.epilog = examples(*GROUP_EXAMPLES[group], note=GROUP_NOTE)
        app.info.cls = ExamplesGroup
    for info in app.registered_commands:
        name = f"{prefix}{info.name or info.callback.__name__}"  # type: ignore[union-attr]
        if info.cls in (None, TyperCommand):  # typer's default: a command's own class stays
            info.cls = GroupedCommand
        if name in EXAMPLES:
            info.epilog = examples(*EXAMPLES[name], note=info.epilog)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            dress(group.typer_instance, f"{prefix}{group.name} ")
