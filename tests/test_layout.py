"""The rooms and what each may import (ARCHITECTURE.md): data flows one way, capture never
reaches into the pipeline, and every module stays small enough to read in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

# room -> the turnscope modules (prefixes) it may import besides its own
SHARED = (
    "turnscope.errors",
    "turnscope.jsonio",
    "turnscope.offload",
    "turnscope.offline",
    "turnscope.configs",
    "turnscope.reasons",
    "turnscope.spelling",
)
ALLOWED = {
    # transports: PCM on the call clock, nothing about what is said in it
    "capture": SHARED,
    "asr": (*SHARED, "turnscope.capture.frames", "turnscope.capture.channels"),
    "scoring": (
        *SHARED,
        "turnscope.capture.frames",
        "turnscope.capture.channels",
        "turnscope.asr.assembly",
        "turnscope.asr.backchannel_text",
        "turnscope.asr.normalise",
    ),
    # the scripted caller and the reference agent drive calls through the transports, listen
    # with the endpointer, and resolve a scenario's task with scoring's suites
    "actors": (*SHARED, "turnscope.capture", "turnscope.asr", "turnscope.scoring"),
}
ROOMS = (*ALLOWED, "turnscope")
MAX_LINES = 420


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m.startswith("turnscope")}


def test_each_room_imports_only_what_it_may():
    wrong = []
    for room, allowed in ALLOWED.items():
        for path in (ROOT / room).rglob("*.py"):
            for module in _imports(path):
                own = module.startswith(f"turnscope.{room}")
                if not own and not module.startswith(allowed):
                    wrong.append(f"{path.relative_to(ROOT)} imports {module}")
    assert wrong == []


def _room(module: str) -> str | None:
    parts = module.split(".")
    if len(parts) > 1 and parts[1] in ALLOWED:
        return parts[1]
    return None if module.startswith(SHARED) else "turnscope"


def test_the_rooms_import_one_way():
    """No cycle between rooms, counting every import: lazy and TYPE_CHECKING ones too."""
    edges: dict[str, set[str]] = {room: set() for room in ROOMS}
    for room in ROOMS:
        for path in (ROOT / room).rglob("*.py"):
            for module in _imports(path):
                other = _room(module)
                if other is not None and other != room:
                    edges[room].add(other)

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(
            n == goal or (n not in seen and reaches(n, goal, seen | {n})) for n in edges[start]
        )

    assert [room for room in ALLOWED if reaches(room, room, {room})] == []


def test_no_product_module_is_long():
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for room in ROOMS
        for p in (ROOT / room).rglob("*.py")
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    ]
    assert long == []


def test_every_product_package_is_packaged():
    """A sub-package missing from pyproject's list works in the editable install and is gone
    from a wheel."""
    import tomllib

    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    where = {Path(d): name for name, d in tool["package-dir"].items()}
    missing = []
    for room in (*ROOMS, "configs"):
        for init in (ROOT / room).rglob("__init__.py"):
            folder = init.parent.relative_to(ROOT)
            base = max((d for d in where if folder.is_relative_to(d)), key=lambda d: len(d.parts))
            name = ".".join([where[base], *folder.relative_to(base).parts])
            if name not in tool["packages"]:
                missing.append(name)
    assert missing == []
