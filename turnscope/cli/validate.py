"""`turnscope validate`: check a voice artifact bundle against the whole contract."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from turnscope.cli.console import out, say
from turnscope.errors import InputError

if TYPE_CHECKING:
    from turnscope.use_cases.validate_run import BundleCheck

SCENARIO_SUFFIXES = (".yaml", ".yml")  # a scenario's (or settings'): never a bundle


def validate(
    bundle: Path = typer.Argument(
        ...,
        help="Bundle folder or its voice_artifact_manifest.json; a load or bench run's folder "
        "checks each of its bundles.",
    ),
) -> int:
    """Print one line per problem; exit 1 when there is any, 0 when the bundle (or every bundle
    of a load or bench run) is valid."""
    from turnscope.scoring.evidence.validate import validate_bundle
    from turnscope.use_cases.validate_run import validate_run

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
    if checks := validate_run(bundle):  # a load or bench run: each of its bundles
        return _each(bundle, checks)
    problems = validate_bundle(bundle)
    for line in problems:
        out.print(line, markup=False, soft_wrap=True)
    if problems:
        say(f"{len(problems)} problem(s)")
        return 1
    say(f"{bundle}: valid voice artifact bundle")
    return 0


def _each(run: Path, checks: list[BundleCheck]) -> int:
    """A run of many bundles: each one's problems, then how many were valid; 1 when any is not."""
    bad = [c for c in checks if c.problems]
    for line in (line for c in bad for line in c.problems):  # each names its bundle's path
        out.print(line, markup=False, soft_wrap=True)
    if bad:
        rest = "; the others are valid" if len(bad) < len(checks) else ""
        have = "has" if len(bad) == 1 else "have"
        say(f"{run}: {len(bad)} of {len(checks)} bundles {have} problems "
            f"({sum(len(c.problems) for c in bad)} in all){rest}")  # fmt: skip
        return 1
    from turnscope.load.record import CALLS

    where = sorted({str(c.bundle.parent) for c in checks} - {str(run), str(run / CALLS)})
    kept = f" (in {', '.join(where)})" if where else ""
    n = len(checks)
    say(f"{run}: {f'all {n} bundles are' if n > 1 else 'its bundle is'} valid{kept}")
    return 0


def register(app: typer.Typer) -> None:
    app.command("validate", short_help="Check a bundle against its contract.")(validate)
