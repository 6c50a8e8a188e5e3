"""A scenario file read and checked: its YAML validated into a Scenario, every problem at once,
and the suite its task names resolved now rather than after synthesis."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from turnscope.actors.caller.scenario import Scenario
from turnscope.actors.caller.scenario_contract import scenario_task
from turnscope.configs import resolve
from turnscope.errors import InputError
from turnscope.jsonio import every_problem, read_yaml

__all__ = ["files_used", "load_scenario"]


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate a scenario YAML file (and its task's suite, if any).

    Raises InputError naming the file and the field, e.g.
    ``x.yaml: script[2].barge_in_ms: Input should be a valid integer``.
    """
    p = resolve("scenarios", path)  # a path, or a shipped scenario's name (refund-call)
    if p.is_dir():
        raise InputError("is a directory, expected a scenario YAML file", path=p)
    data = read_yaml(p, what="scenario file")
    if not isinstance(data, dict):
        raise InputError("a scenario must be a YAML mapping (name, script, ...)", path=p)
    try:
        scenario = Scenario.model_validate(data, context={"base_dir": p.parent})
    except ValidationError as exc:
        raise InputError(every_problem(exc), path=p) from None
    scenario._source = p
    scenario_task(scenario)  # fail now, not after synthesis, on a bad suite reference
    return scenario


def files_used(scenario: Scenario) -> list[Path]:
    """Every file a scenario's audio is made from: recorded lines, noise beds, impulse responses,
    a Piper voice file (``piper:PATH.onnx``), as absolute paths, each once, in the order named.
    What a cache of its rendering depends on beside the YAML's own text."""
    base = scenario._source.parent if scenario._source is not None else Path.cwd()
    found: dict[Path, None] = {}

    def visit(value: object) -> None:
        if isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, (str, Path)):
            text = str(value)
            for name in (text, text.partition(":")[2]):  # a voice's ``piper:`` prefix
                if not name or "\n" in name or len(name) > 4096:
                    continue
                path = Path(name).expanduser()
                path = path if path.is_absolute() else base / path
                try:
                    if path.is_file():
                        found[path.resolve()] = None
                except OSError:  # a sentence, not a path (too long a name, and the like)
                    continue

    visit(scenario.model_dump())
    return list(found)
