"""A scenario file read and checked: its YAML validated into a Scenario, every problem at once,
and the suite its task names resolved now rather than after synthesis."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from turnscope.actors.caller.scenario import Scenario
from turnscope.actors.caller.scenario_contract import scenario_task
from turnscope.actors.caller.voices.spec import voice_files
from turnscope.configs import resolve
from turnscope.errors import InputError
from turnscope.jsonio import every_problem, read_yaml
from turnscope.scoring.suites.suite import SUITE_KIND
from turnscope.spelling import field_names

__all__ = ["files_used", "load_scenario", "voice_named", "voiced_by"]


def load_scenario(path: str | Path, *, caller_voice: str | None = None) -> Scenario:
    """Read and validate a scenario YAML file (and its task's suite, if any); ``caller_voice``
    (a suite fixture's) replaces every voice of the caller's (``voiced_by``).

    Raises InputError naming the file and the field, e.g.
    ``x.yaml: script[2].barge_in_ms: Input should be a valid integer``.
    """
    p = resolve("scenarios", path)  # a path, or a shipped scenario's name (refund-call)
    if p.is_dir():
        raise InputError("is a directory, expected a scenario YAML file", path=p)
    data = read_yaml(p, what="scenario file")
    if not isinstance(data, dict):
        raise InputError("a scenario must be a YAML mapping (name, script, ...)", path=p)
    if "kind" in data and "script" not in data:  # another file altogether: its fields say nothing
        suite = " (a suite's live task names its scenario in fixture.audio)" if (
            data["kind"] == SUITE_KIND) else ""  # fmt: skip
        raise InputError(f"not a scenario: its kind is {str(data['kind'])[:80]!r}; a scenario "
                         f"has name: and script:{suite}", path=p)  # fmt: skip
    if caller_voice is not None:
        data = voiced_by(data, caller_voice)
    try:
        scenario = Scenario.model_validate(data, context={"base_dir": p.parent})
    except ValidationError as exc:
        raise InputError(every_problem(exc, known=field_names(Scenario)), path=p) from None
    scenario._source = p
    scenario_task(scenario)  # fail now, not after synthesis, on a bad suite reference
    return scenario


def voice_named(voice: str | None, base_dir: Path, key: str) -> str | None:
    """A caller voice named outside a scenario (a suite fixture's ``key``, a command line's),
    checked, with a Piper file's relative path made absolute against ``base_dir`` (the suite's
    folder, the working directory); InputError naming ``key`` when it cannot speak. None: none
    named."""
    from turnscope.actors.caller.speech import check_voice

    if voice is None:
        return None
    engine, sep, name = voice.partition(":")
    if sep and engine == "piper" and name.endswith(".onnx"):
        path = Path(name).expanduser()
        voice = f"piper:{path if path.is_absolute() else (base_dir / path).resolve()}"
    try:
        check_voice(voice)
    except InputError as exc:
        raise InputError(f"{key}: {exc}") from None
    return voice


def voiced_by(data: dict[str, Any], voice: str) -> dict[str, Any]:
    """A scenario's YAML with ``voice`` as the caller's only voice: ``caller.voice``, and no
    caller line or branch a voice of its own (an espeak-ng ``pitch`` dropped for a Piper
    voice). So one scenario serves each voice a suite's tasks need (a fixture's caller_voice)."""
    caller = dict(data.get("caller") or {}, voice=voice)
    if voice.startswith("piper:"):
        caller.pop("pitch", None)

    def unvoiced(line: Any) -> Any:
        if not isinstance(line, dict) or "agent" in line:
            return line
        out = {k: v for k, v in line.items() if k != "voice"}
        if isinstance(out.get("choose"), list):
            out["choose"] = [unvoiced(b) for b in out["choose"]]
        return out

    script = data.get("script")
    lines = [unvoiced(x) for x in script] if isinstance(script, list) else script
    return {**data, "caller": caller, "script": lines}


def files_used(scenario: Scenario) -> list[Path]:
    """Every file a scenario's audio is made from: recorded lines, noise beds, impulse responses,
    a Piper voice's ``.onnx`` and ``.onnx.json`` (a file or a packaged voice), as absolute paths,
    each once, in the order named. What a cache of its rendering depends on beside the YAML's
    own text."""
    base = scenario._source.parent if scenario._source is not None else Path.cwd()
    found: dict[Path, None] = {}

    def visit(value: object) -> None:
        if isinstance(value, dict):
            for v in value.values():
                visit(v)
        elif isinstance(value, (list, tuple)):
            for v in value:
                visit(v)
        elif isinstance(value, str) and value.startswith("piper:"):  # canonical once loaded
            found.update(dict.fromkeys(p.resolve() for p in voice_files(value)))
        elif isinstance(value, (str, Path)):
            name = str(value)
            if not name or "\n" in name or len(name) > 4096:
                return
            path = Path(name).expanduser()
            path = path if path.is_absolute() else base / path
            try:
                if path.is_file():
                    found[path.resolve()] = None
            except OSError:  # a sentence, not a path (too long a name, and the like)
                return

    visit(scenario.model_dump())
    return list(found)
