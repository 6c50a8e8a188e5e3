"""How a command's ``--help`` reads: options in groups (each option's ``rich_help_panel``, also
without rich) and examples that are whole command lines, never rewrapped."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import typer
from typer.core import TyperCommand

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
        if not self.epilog:
            return
        for block in self.epilog.strip().split("\n\n"):
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


_DEMO = "runs/demo"  # where the examples' demo run is written, for the commands that read one
_URL = "http://127.0.0.1:7860/api/offer"

# Each command's examples: command lines that work from the repository's root (an agent on
# _URL for call and load; the bundle the demo example writes for those that read one).
EXAMPLES: dict[str, tuple[str, ...]] = {
    "demo": (
        "turnscope demo",
        f"turnscope demo -o {_DEMO} --force",
        "turnscope demo --scenario barge-ins",
    ),
    "call": (
        f"turnscope call {_URL} --scenario refund-call",
        f"turnscope call {_URL} --scenario refund-call --agent-trace bot-events.jsonl",
        "turnscope call ws://127.0.0.1:8765/ws --transport twilio --scenario refund-call",
        "turnscope call --device --caller-out 3 --agent-in 4 --scenario refund-call",
    ),
    "agent": (
        "turnscope agent --port 7860 --scenario refund-call",
        "turnscope agent --port 7860 --latency-ms 1500 --ignore-barge-ins",
    ),
    "replay": (
        "turnscope replay recordings/refund-call.wav",
        "turnscope replay recordings/refund-call.wav --reference "
        "recordings/refund-call.reference.json",
        "turnscope replay --caller caller.mp3 --agent agent.mp3 --max-latency-ms 1500",
        "turnscope replay call.flac --caller-channel right --model PATH/TO/small.en",
    ),
    "bench": (
        "turnscope bench voice_starter --use-reference",
        "turnscope bench configs/suites/voice_regression.json -o out/bench.json -j 2",
        "turnscope bench my-suite.json --agent http://127.0.0.1:7860/api/offer",
    ),
    "load": (
        f"turnscope load {_URL} --scenario refund-call -n 10 --rate 2/s",
        f"turnscope load {_URL} --scenario quick-exchange -n 4 --duration 60 -o runs/load",
    ),
    "score": (
        f"turnscope score {_DEMO}/transcript.json",
        f"turnscope score {_DEMO}/transcript.json --max-latency-ms 800 --require refund --json",
    ),
    "synth": (
        "turnscope synth refund-call -o /tmp/refund-call",
        "turnscope synth configs/scenarios/barge-ins.yaml -o /tmp/b --snr-db 10 --telephone",
    ),
    "validate": (
        f"turnscope validate {_DEMO}",
        f"turnscope validate {_DEMO}/voice_artifact_manifest.json",
    ),
    "gate": (
        "turnscope gate out/bench.scorecard.json --baseline "
        "configs/baselines/voice_regression.scorecard.json --junit out/junit.xml",
        "turnscope gate out/bench.json --floor latency=0.8",
    ),
    "doctor": ("turnscope doctor", "turnscope doctor --all --json"),
    "report": (f"turnscope report {_DEMO}",),
    "open": (f"turnscope open {_DEMO}", f"turnscope open {_DEMO} --print", "turnscope open"),
    "devices": ("turnscope devices", "turnscope devices --json"),
    "calibrate": (
        "turnscope calibrate --out 3 --in 4",
        "turnscope calibrate --out 3 --in 4 --channel 1 --json",
    ),
    "fixture add": (
        f"turnscope fixture add {_DEMO} --suite my-suite.json --tags conversational",
        f"turnscope fixture add {_DEMO} --suite my-suite.json --tags acoustic --id noisy-refund",
    ),
    "suite init": (
        "turnscope suite init my-suite",
        "turnscope suite init suites/my-suite.json --force",
    ),
}


def dress(app: typer.Typer, prefix: str = "") -> None:
    """Give every command of ``app`` (and of its sub-apps) grouped options and its examples
    (before the epilog it declared itself, e.g. bench's and gate's CI recipe)."""
    for info in app.registered_commands:
        name = f"{prefix}{info.name or info.callback.__name__}"  # type: ignore[union-attr]
        if info.cls in (None, TyperCommand):  # typer's default: a command's own class stays
            info.cls = GroupedCommand
        if name in EXAMPLES:
            info.epilog = examples(*EXAMPLES[name], note=info.epilog)
    for group in app.registered_groups:
        if group.typer_instance is not None:
            dress(group.typer_instance, f"{prefix}{group.name} ")
