"""`turnscope report` and `turnscope open`: the readable report of a run bundle."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from turnscope.cli.console import out, warn_line


def report(
    bundle: Path = typer.Argument(..., help="A run's output folder (a voice artifact bundle)."),
) -> int:
    """(Re)build report.html and timeline.png in BUNDLE and print their paths."""
    from turnscope.scoring.report.html import build_report
    from turnscope.use_cases.open_page import not_a_bundle_page

    not_a_bundle_page(bundle)  # a load or bench run's folder: its own page, said in one line
    for path in build_report(bundle):
        out.print(str(path), markup=False, highlight=False, soft_wrap=True)
    return 0


def open_report(
    bundle: Path | None = typer.Argument(
        None,
        help="A run's output folder (a call's, a replay's, a load run's, a bench run's) or a "
        "page (default: the newest run under ./runs).",
    ),
    print_only: bool = typer.Option(
        False, "--print", help="Only print the page's path; open no browser."
    ),
) -> int:
    """Open a run's page in the browser (a bundle's report.html, built first if it is missing;
    a load run's load.html; a bench run's scorecard page) and print its absolute path. Without
    a browser (none on this machine, or not on a terminal with a display; set BROWSER to choose
    one) or with --print, only the path is printed."""
    from turnscope.outdir import RUNS
    from turnscope.use_cases.open_page import newest_page, page_of

    page = (page_of(bundle) if bundle is not None else newest_page(RUNS)).resolve()
    out.print(str(page), markup=False, highlight=False, soft_wrap=True)
    if not print_only and browser_here():
        import webbrowser

        try:
            opened = webbrowser.open(page.as_uri())
        except webbrowser.Error:
            opened = False
        if not opened:
            warn_line("no browser could be started: open the path above yourself")
    return 0


def browser_here() -> bool:
    """Whether a browser can be shown: BROWSER names one, or this is a terminal with a display
    (a console browser taking over a script's terminal, or a test run's, would not help)."""
    if os.environ.get("BROWSER"):
        return True
    if not sys.stdout.isatty():
        return False
    return sys.platform in ("darwin", "win32") or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


def register(app: typer.Typer) -> None:
    app.command("report", short_help="Rebuild a bundle's report.html and timeline.png.")(report)
    app.command("open", short_help="Open a run's page (report, load or scorecard).")(open_report)
