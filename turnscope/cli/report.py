"""`turnscope report` and `turnscope open`: the readable report of a run bundle."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import typer

from turnscope.cli.console import out, warn_line


def report(
    bundle: Path = typer.Argument(
        ..., help="A run's output folder: a call's or a replay's bundle, a load or a bench run's."
    ),
) -> int:
    """Write a run's page again from what the run keeps, and print its path: a bundle's
    report.html and timeline.png, a load run's load.html (from load.json), a bench run's
    scorecard page (from its scorecard JSON, against a baseline pinned beside it)."""
    from turnscope.use_cases.rebuild_page import rebuild_pages

    for path in rebuild_pages(bundle):
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
    app.command("report", short_help="Rebuild a run's page (report, load or scorecard).")(report)
    app.command("open", short_help="Open a run's page (report, load or scorecard).")(open_report)
