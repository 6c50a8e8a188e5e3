"""The CLI is a thin client of the library (issue 29): it parses, calls one use case of the
public API and renders its typed result. Its modules stay short and so do their functions."""

from __future__ import annotations

import ast
from pathlib import Path

CLI = Path(__file__).resolve().parents[1] / "turnscope" / "cli"
MAX_MODULE_LINES = 150
MAX_BODY_LINES = 40  # a function's body; its decorators and signature (typer options) aside


def _bodies(tree: ast.AST) -> list[tuple[str, int]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0].lineno
            found.append((f"{node.name} (line {node.lineno})", node.end_lineno - first + 1))
    return found


def test_no_cli_module_is_long() -> None:
    long = {
        p.name: n
        for p in sorted(CLI.glob("*.py"))
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"CLI modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_cli_function_body_is_long() -> None:
    long = [
        f"{p.name}: {name} has {n} lines"
        for p in sorted(CLI.glob("*.py"))
        for name, n in _bodies(ast.parse(p.read_text(encoding="utf-8")))
        if n > MAX_BODY_LINES
    ]
    assert not long, f"CLI function bodies over {MAX_BODY_LINES} lines: {long}"
