"""Which page ``turnscope open`` shows for a path: a run bundle's report.html (built when it is
missing), a load run's load.html, a bench run's scorecard page, or an HTML file itself. Before,
only a bundle was known: a person who had just run ``turnscope load -o runs/load`` and typed
``turnscope open runs/load`` was told it was not a voice artifact bundle."""

from __future__ import annotations

from pathlib import Path

from turnscope.errors import InputError
from turnscope.scoring.report import REPORT

__all__ = ["LOAD_PAGE", "SCORECARD_PAGE", "newest_page", "page_of"]

LOAD_PAGE = "load.html"  # turnscope load -o DIR
SCORECARD_PAGE = "scorecard.html"  # turnscope bench without -o: runs/bench-NAME-TIME/
PAGES = (REPORT, LOAD_PAGE, SCORECARD_PAGE)
BUNDLE_FILES = ("voice_artifact_manifest.json", "transcript.json")  # a run bundle has these


def page_of(path: Path) -> Path:
    """The page to open for ``path`` (a run bundle's report.html, built if missing)."""
    from turnscope.scoring.evidence.bundle import inside
    from turnscope.scoring.report.html import build_report

    if not path.exists():
        raise InputError("no such run folder or page", path=path, fix="give a run's folder")
    if path.is_file():
        page = path if path.suffix == ".html" else path.with_suffix(".html")
        if page.is_file():
            return page
        raise InputError(
            "has no page beside it",
            path=path,
            fix="give a run's folder, or the .html page itself",
        )
    for name in (LOAD_PAGE, SCORECARD_PAGE):
        if (path / name).is_file():
            return inside(path, name)  # never a page linked from outside the folder
    cards = sorted(path.glob("*.scorecard.html")) if path.is_dir() else []
    if len(cards) == 1:
        return inside(path, cards[0].name)
    if len(cards) > 1:
        raise InputError(
            f"holds {len(cards)} scorecard pages ({', '.join(c.name for c in cards)})",
            path=path,
            fix=f"give one of them: turnscope open {path / cards[0].name}",
        )
    page = inside(path, REPORT)
    if not page.is_file():
        if not any((path / name).exists() for name in BUNDLE_FILES):
            raise InputError(
                "has no page: not a run's folder",
                path=path,
                fix="give the output folder of turnscope replay, call, demo, load or bench",
            )
        build_report(path)  # a bundle: its report built (or what it lacks, named)
    return page


def newest_page(runs: Path) -> Path:
    """The most recently written page of a run under ``runs`` (where runs go without -o)."""
    pages = [p for name in PAGES for p in runs.glob(f"*/{name}")] if runs.is_dir() else []
    if not pages:
        raise InputError(
            "no run with a page (report.html, load.html, scorecard.html) under ./runs",
            path=runs.resolve(),
            fix="give the run's folder",
        )
    return max(pages, key=lambda p: p.stat().st_mtime)
