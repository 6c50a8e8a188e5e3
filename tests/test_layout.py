"""The rooms and what each may import (ARCHITECTURE.md): data flows one way, capture never
reaches into the pipeline, and every module stays small enough to read in one sitting."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

# room -> the turnscope modules (prefixes) it may import besides its own
ALLOWED = {
    "capture": (
        "turnscope.asr.endpointer",
        "turnscope.asr.events",
        "turnscope.asr.normalise",  # the caller's conditions match text as WER does
        "turnscope.asr.settings",
        "turnscope.errors",
        "turnscope.jsonio",
        "turnscope.offload",
        "turnscope.configs",
        "turnscope.scoring.contract",  # lazily: a scenario checks the suite its task names
    ),
    "asr": (
        "turnscope.capture.frames",
        "turnscope.capture.channels",
        "turnscope.errors",
        "turnscope.offline",
        "turnscope.configs",
        "turnscope.jsonio",
    ),
    "scoring": (
        "turnscope.capture.frames",
        "turnscope.capture.channels",
        # type hints, and the names result.json gives the caller's decisions (script/decisions.py)
        "turnscope.capture.script",
        "turnscope.asr.assembly",
        "turnscope.asr.normalise",
        "turnscope.errors",
        "turnscope.jsonio",
        "turnscope.configs",
    ),
}
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


def test_no_product_module_is_long():
    long = [
        f"{p.relative_to(ROOT)}: {n} lines"
        for room in ("capture", "asr", "scoring", "turnscope")
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
    for room in ("capture", "asr", "scoring", "turnscope", "configs"):
        for init in (ROOT / room).rglob("__init__.py"):
            folder = init.parent.relative_to(ROOT)
            base = max((d for d in where if folder.is_relative_to(d)), key=lambda d: len(d.parts))
            name = ".".join([where[base], *folder.relative_to(base).parts])
            if name not in tool["packages"]:
                missing.append(name)
    assert missing == []
