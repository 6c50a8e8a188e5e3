"""`turnscope validate`: check a voice artifact bundle against the whole contract."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.console import out, say
from turnscope.errors import InputError

SCENARIO_SUFFIXES = (".yaml", ".yml")  # a scenario's (or settings'): never a bundle


def validate(
    bundle: Path = typer.Argument(..., help="Bundle folder or its voice_artifact_manifest.json."),
) -> int:
    """Print one line per problem; exit 1 when there is any, 0 when the bundle is valid."""
    from turnscope.scoring.evidence.validate import validate_bundle

    if not bundle.exists():
        raise InputError("no such bundle folder or manifest", path=bundle, fix="check the path")
    if bundle.is_file() and bundle.suffix.lower() in SCENARIO_SUFFIXES:
        raise InputError(
            "is YAML (a scenario?): validate checks a run's bundle, its folder or its "
            "voice_artifact_manifest.json",
            path=bundle,
            fix=f"check a scenario with `turnscope synth {bundle} -o /tmp/check`: it names every "
            "problem of its keys in one line, then renders the call offline",
        )
    problems = validate_bundle(bundle)
    for line in problems:
        out.print(line, markup=False, soft_wrap=True)
    if problems:
        say(f"{len(problems)} problem(s)")
        return 1
    say(f"{bundle}: valid voice artifact bundle")
    return 0


def register(app: typer.Typer) -> None:
    app.command("validate", short_help="Check a bundle against its contract.")(validate)
