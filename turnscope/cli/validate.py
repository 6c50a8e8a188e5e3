"""`turnscope validate`: check a voice artifact bundle against the whole contract."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.console import out, say
from turnscope.errors import InputError


def validate(
    bundle: Path = typer.Argument(..., help="Bundle folder or its voice_artifact_manifest.json."),
) -> int:
    """Print one line per problem; exit 1 when there is any, 0 when the bundle is valid."""
    from turnscope.scoring.evidence.validate import validate_bundle

    if not bundle.exists():
        raise InputError("no such bundle folder or manifest", path=bundle, fix="check the path")
    problems = validate_bundle(bundle)
    for line in problems:
        out.print(line, markup=False, soft_wrap=True)
    if problems:
        say(f"{len(problems)} problem(s)")
        return 1
    say(f"{bundle}: valid voice artifact bundle")
    return 0


def register(app: typer.Typer) -> None:
    app.command("validate")(validate)
