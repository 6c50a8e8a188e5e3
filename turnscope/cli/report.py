"""`turnscope report` and `turnscope open`: the readable report of a run bundle."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.console import out


def report(
    bundle: Path = typer.Argument(..., help="A run's output folder (a voice artifact bundle)."),
) -> int:
    """(Re)build report.html and timeline.png in BUNDLE and print their paths."""
    from turnscope.scoring.report.html import build_report

    for path in build_report(bundle):
        out.print(str(path), markup=False, highlight=False, soft_wrap=True)
    return 0


def open_report(
    bundle: Path = typer.Argument(..., help="A run's output folder (a voice artifact bundle)."),
) -> int:
    """Print the absolute path of BUNDLE/report.html, building it first if it is missing."""
    from turnscope.scoring.evidence.bundle import inside
    from turnscope.scoring.report.html import REPORT, build_report

    path = inside(bundle, REPORT)  # never a report linked from outside the bundle
    if not path.is_file():
        build_report(bundle)
    out.print(str(path.resolve()), markup=False, highlight=False, soft_wrap=True)
    return 0


def register(app: typer.Typer) -> None:
    app.command("report")(report)
    app.command("open")(open_report)
