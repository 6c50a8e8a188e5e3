"""The documentation site's generated pages: the scenario, settings and bundle formats from their
pydantic models, the Python API from ``turnscope.__all__`` and its docstrings, the changelog from
``git log``. Generated at every build, never committed, so they cannot go stale.

mkdocs loads this file as a hook (``hooks:`` in mkdocs.yml) and adds the pages in ``on_files``;
``python scripts/gen_docs.py DIR`` writes them to DIR to read them as markdown.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import re
import subprocess
import sys
import types
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import annotated_types
from pydantic import BaseModel
from pydantic.fields import FieldInfo

ROOT = Path(__file__).resolve().parent.parent
SCENARIO_MODULES = (
    "turnscope.actors.caller.scenario",
    "turnscope.actors.caller.fields",
    "turnscope.actors.caller.reactive_keys",
)
# Each bundle document: its file name and the model it is written from.
FORMATS = (
    ("result.json", "turnscope.scoring.evidence.results", "ResultDocument"),
    ("transcript.json", "turnscope.scoring.evidence.documents", "Transcript"),
    ("waveform_timeline.json", "turnscope.scoring.evidence.documents", "WaveformTimeline"),
    ("structured_output.json", "turnscope.scoring.evidence.results", "StructuredOutput"),
    ("live_continuity_report.json", "turnscope.scoring.evidence.documents", "LiveContinuityReport"),
    ("raw_provider_trace.json", "turnscope.scoring.evidence.results", "RawProviderTrace"),
    ("redaction_metadata.json", "turnscope.scoring.evidence.results", "RedactionMetadata"),
    ("the bundle's manifest", "turnscope.scoring.evidence.manifest", "Manifest"),
    ("load.json (turnscope load)", "turnscope.load.report", "LoadReport"),
    ("a voice suite", "turnscope.scoring.suites.suite", "Suite"),
)
_BOUNDS = {
    annotated_types.Ge: (">=", "ge"),
    annotated_types.Gt: (">", "gt"),
    annotated_types.Le: ("<=", "le"),
    annotated_types.Lt: ("<", "lt"),
    annotated_types.MinLen: ("min length", "min_length"),
    annotated_types.MaxLen: ("max length", "max_length"),
}
_BULLET = re.compile(r"^- ((?:``\w+``(?:, | / | and | or )?)+):\s*(.*)$")


# --- models -------------------------------------------------------------------------------------


def _unwrap(annotation: Any) -> tuple[Any, list[Any]]:
    """The type without ``Annotated``, and the metadata it carried."""
    meta: list[Any] = []
    while typing.get_origin(annotation) is typing.Annotated:
        args = typing.get_args(annotation)
        annotation, meta = args[0], meta + list(args[1:])
    return annotation, meta


def _is_model(tp: Any) -> bool:
    return inspect.isclass(tp) and issubclass(tp, BaseModel)


def type_text(annotation: Any) -> str:
    """A field's type as a reader writes it, nested models linked to their section."""
    tp, _ = _unwrap(annotation)
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (typing.Union, types.UnionType):
        return " \\| ".join(type_text(a) for a in args)
    if origin is typing.Literal:
        return " \\| ".join(f"`{json.dumps(a)}`" for a in args)
    if origin in (list, tuple, set, frozenset):
        inner = ", ".join("..." if a is Ellipsis else type_text(a) for a in args)
        return f"{origin.__name__}[{inner}]"
    if origin is dict:
        return f"dict[{type_text(args[0])}, {type_text(args[1])}]"
    if tp is type(None):
        return "null"
    if _is_model(tp):
        return f"[{tp.__name__}](#{anchor(tp)})"
    if inspect.isclass(tp) and issubclass(tp, enum.Enum):
        return " \\| ".join(f"`{m.value}`" for m in tp)
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _limits(field: FieldInfo) -> str:
    """The bounds pydantic checks, from the field and the types it nests."""
    found: list[str] = []

    def walk(annotation: Any, meta: Iterable[Any]) -> None:
        for m in meta:
            items = m.metadata if isinstance(m, FieldInfo) else [m]
            for item in items:
                for kind, (word, attr) in _BOUNDS.items():
                    if isinstance(item, kind):
                        found.append(f"{word} {getattr(item, attr)}")
        tp, inner = _unwrap(annotation)
        if inner:
            walk(tp, inner)
        for arg in typing.get_args(tp):
            walk(arg, [])

    walk(field.annotation, field.metadata)
    return ", ".join(dict.fromkeys(found))


def anchor(model: type[BaseModel]) -> str:
    """A model's section id: module and name, as two models of one name exist."""
    return f"{model.__module__.rsplit('.', 1)[-1]}-{model.__name__}".lower()


def _default(field: FieldInfo) -> str:
    if field.is_required():
        return "required"
    value = field.get_default(call_default_factory=True)
    if isinstance(value, BaseModel):
        return "its defaults"
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        return f"`{json.dumps(value)}`"
    except TypeError:
        return f"`{value}`"


def _comments(model: type[BaseModel]) -> dict[str, str]:
    """The comment at the end of each field's line in the model's source."""
    try:
        source = inspect.getsource(model)
    except (OSError, TypeError):
        return {}
    found = re.findall(r"^\s+(\w+):[^#\n]*#\s*(.+)$", source, re.M)
    return {name: text.strip() for name, text in found if not text.startswith(("noqa", "type:"))}


def split_docstring(model: type[BaseModel]) -> tuple[str, dict[str, str]]:
    """The model's prose, and the ``- ``name``: text`` bullets that describe its fields."""
    doc = inspect.getdoc(model) or ""
    if model.__doc__ is None or doc == inspect.getdoc(BaseModel):
        doc = ""
    prose: list[str] = []
    described: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in doc.splitlines():
        bullet = _BULLET.match(line)
        names = re.findall(r"``(\w+)``", bullet.group(1)) if bullet else []
        if bullet and all(_field(model, n) for n in names):
            current = [bullet.group(2)]
            for name in names:
                described[_field(model, name)] = current  # type: ignore[index]
            line = "- " + ", ".join(f"`{n}`" for n in names)
        elif current is not None and line.startswith("  "):
            current.append(line.strip())
            continue
        else:
            current = None
        edge = prose and prose[-1] and prose[-1].startswith("- ") != line.startswith("- ")
        if edge and not line.startswith(" "):
            prose.append("")  # markdown needs a blank line around a list
        prose.append(line)
    text: dict[str, str] = {}
    for name, parts in described.items():
        # ``a``: this; ``b``: that -- one bullet describing two fields
        pieces = re.split(r";\s*``(\w+)``:\s*", " ".join(parts))
        text.setdefault(name, pieces[0])
        for other, said in zip(pieces[1::2], pieces[2::2], strict=True):
            if _field(model, other):
                text[_field(model, other)] = said  # type: ignore[index]
            else:
                text[name] += f"; ``{other}``: {said}"
    return "\n".join(prose).strip(), text


def _field(model: type[BaseModel], name: str) -> str | None:
    """The field a docstring's name means (a field's name or its alias)."""
    if name in model.model_fields:
        return name
    for field_name, field in model.model_fields.items():
        if field.alias == name:
            return field_name
    return None


def models_under(roots: Iterable[type[BaseModel]]) -> list[type[BaseModel]]:
    """The models reachable from ``roots`` through their fields, each once, in reading order."""
    seen: list[type[BaseModel]] = []

    def visit(model: type[BaseModel]) -> None:
        if model in seen:
            return
        seen.append(model)
        for field in model.model_fields.values():
            for tp in _types_in(field.annotation):
                visit(tp)

    for root in roots:
        visit(root)
    return seen


def _types_in(annotation: Any) -> list[type[BaseModel]]:
    tp, _ = _unwrap(annotation)
    if _is_model(tp):
        return [tp]
    return [m for arg in typing.get_args(tp) for m in _types_in(arg)]


def model_section(model: type[BaseModel], level: int = 3) -> str:
    """One model: its prose, then a table of its fields."""
    prose, described = split_docstring(model)
    comments = _comments(model)
    rows = ["| field | type | default | limits | meaning |", "| --- | --- | --- | --- | --- |"]
    for name, field in model.model_fields.items():
        meaning = field.description or described.get(name) or comments.get(name, "")
        meaning = meaning.replace("|", "\\|")  # a pipe would end the table cell
        key = field.alias or name
        cells = [f"`{key}`", type_text(field.annotation), _default(field), _limits(field), meaning]
        rows.append("| " + " | ".join(c.replace("\n", " ") for c in cells) + " |")
    head = f"{'#' * level} {model.__name__} {{#{anchor(model)}}}"
    return "\n\n".join(part for part in (head, prose, "\n".join(rows)) if part) + "\n"


# --- pages --------------------------------------------------------------------------------------


def scenario_models() -> list[type[BaseModel]]:
    """Every scenario model the three scenario modules define."""
    found: list[type[BaseModel]] = []
    for name in SCENARIO_MODULES:
        module = importlib.import_module(name)
        for obj in vars(module).values():
            if _is_model(obj) and obj.__module__ == name and obj.model_fields and obj not in found:
                found.append(obj)
    return found


def scenario_page() -> str:
    scenario = importlib.import_module(SCENARIO_MODULES[0])
    fields = importlib.import_module(SCENARIO_MODULES[1])
    ordered = models_under([scenario.Scenario])
    ordered += [m for m in scenario_models() if m not in ordered]
    limits = [
        f"- `{name}` = {value}"
        for name, value in vars(fields).items()
        if name.isupper() and isinstance(value, int)
    ]
    return "\n\n".join(
        [
            "# Scenario format",
            "Generated from the scenario's pydantic models (`actors/caller/scenario.py`, "
            "`fields.py`, `reactive_keys.py`) at every build. Unknown keys are errors. Examples: "
            "`configs/scenarios/` (each file's header documents its keys).",
            inspect.getdoc(scenario) or "",
            "## Constants",
            "\n".join(limits),
            "## Models",
            *(model_section(m) for m in ordered),
        ]
    )


def settings_page() -> str:
    settings = importlib.import_module("turnscope.asr.settings")
    return "\n\n".join(
        [
            "# Settings",
            "Every knob of the pipeline (`--settings FILE`, YAML; the defaults are "
            "`configs/settings/default.yaml`). Generated from `asr/settings.py`.",
            *(model_section(m) for m in models_under([settings.Settings])),
        ]
    )


def formats_page() -> str:
    parts = [
        "# Result and bundle formats",
        "Generated from the models each document is written from (`scoring/evidence/`, "
        "`turnscope/load/report.py`, `scoring/suites/`). Where a field is "
        "`dict[str, Any]`, another module owns its shape. What a bundle holds and how it is "
        "checked: [Bundles and reports](../guide/bundles.md).",
    ]
    shown: list[type[BaseModel]] = []
    told: set[str] = set()
    for title, module, name in FORMATS:
        root = getattr(importlib.import_module(module), name)
        parts.append(f"## {title}")
        if module not in told:
            told.add(module)
            parts.append(inspect.getdoc(importlib.import_module(module)) or "")
        for model in models_under([root]):
            if model not in shown:
                shown.append(model)
                parts.append(model_section(model))
    return "\n\n".join(p for p in parts if p)


def _plain(annotation: Any) -> str:
    return annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)


def _signature(obj: Any) -> str:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return ""
    params = []
    for p in sig.parameters.values():
        text = p.name if p.kind is not p.VAR_POSITIONAL else f"*{p.name}"
        text = f"**{p.name}" if p.kind is p.VAR_KEYWORD else text
        if p.annotation is not p.empty:
            text += f": {_plain(p.annotation)}"
        if p.default is not p.empty:
            text += f" = {p.default!r}"
        params.append(text)
    ret = sig.return_annotation
    arrow = "" if ret is sig.empty else f" -> {_plain(ret)}"
    return f"({', '.join(params)}){arrow}"


def api_page() -> str:
    import turnscope

    parts = ["# Python API", inspect.getdoc(turnscope) or ""]
    for name in turnscope.__all__:
        if name.startswith("_"):
            continue
        obj = getattr(turnscope, name)
        kind = "class" if inspect.isclass(obj) else "function"
        where = f"`{obj.__module__}`"
        parts.append(f"## {name}\n\n{kind} in {where}\n\n```python\n{name}{_signature(obj)}\n```")
        doc = inspect.getdoc(obj) or ""
        if not doc.startswith(f"{obj.__name__}("):  # a dataclass's made-up docstring
            parts.append(doc)
        if inspect.isclass(obj):
            for attr, member in vars(obj).items():
                doc = inspect.getdoc(member) if not attr.startswith("_") else None
                if doc and callable(getattr(obj, attr, None)):
                    parts.append(f"`{name}.{attr}{_signature(getattr(obj, attr))}`\n\n{doc}")
    return "\n\n".join(p for p in parts if p)


def cli_page() -> str:
    """Every command's ``--help``, as the installed CLI prints it."""
    import typer

    from turnscope.cli.main import app

    parts = ["# Command-line reference", "Each command's `--help`, generated at every build."]

    def visit(command: Any, path: list[str]) -> None:
        # typer ships its own click: duck-typed, not isinstance
        ctx = command.context_class(command, info_name=" ".join(path), terminal_width=100)
        if path[1:]:
            parts.append(f"{'#' * min(len(path), 3)} {' '.join(path)}")
            parts.append(f"```text\n{command.get_help(ctx)}\n```")
        if hasattr(command, "list_commands"):
            for name in command.list_commands(ctx):
                visit(command.get_command(ctx, name), [*path, name])

    visit(typer.main.get_command(app), ["turnscope"])
    return "\n\n".join(parts)


def changelog_page(limit: int = 110) -> str:
    """The history, newest first: commits that name an issue under it, the rest by day."""
    try:
        out = subprocess.run(
            ["git", "log", "--date=short", "--format=%h %ad %s"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return "# Changelog\n\nThe history is not in this checkout (no git): see `git log`."
    groups: dict[str, list[str]] = {}
    for line in out.splitlines():
        short, day, subject = line.split(" ", 2)
        issue = re.search(r"issues? (\d+)", subject, re.I)
        key = f"Issue {issue.group(1)}" if issue else day
        text = subject if len(subject) <= limit else subject[: limit - 3].rsplit(" ", 1)[0] + "..."
        for char in "\\[]*_<":  # a subject is text: no links, emphasis or tags made of it
            text = text.replace(char, "\\" + char)
        groups.setdefault(key, []).append(f"- `{short}` {text}")
    body = [f"## {key}\n\n" + "\n".join(lines) for key, lines in groups.items()]
    intro = (
        "# Changelog\n\nFrom `git log`, newest first: the commits that name an issue under that "
        "issue, the rest by day. Each line is cut at its first 110 characters; `git show HASH` "
        "has the whole message."
    )
    return "\n\n".join([intro, *body])


def pages() -> dict[str, str]:
    """Every generated page, by its path under docs/."""
    return {
        "reference/scenario.md": scenario_page(),
        "reference/settings.md": settings_page(),
        "reference/formats.md": formats_page(),
        "reference/api.md": api_page(),
        "reference/cli.md": cli_page(),
        "changelog.md": changelog_page(),
    }


# --- the mkdocs hook, and the command line ------------------------------------------------------


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in pages().items():
        files.append(File.generated(config, path, content=text))
    return files


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/gen_docs.py OUTDIR")
    for rel, text in pages().items():
        target = Path(sys.argv[1]) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text + "\n")
        print(target)
