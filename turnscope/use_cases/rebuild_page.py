"""``turnscope report``: a run's page written again from the facts it keeps, with this
version's look: a bundle's report.html and timeline.png, a load run's load.html (from
load.json), a bench run's scorecard pages (from each scorecard JSON, against a baseline pinned
beside it)."""

from __future__ import annotations

from pathlib import Path

from turnscope.errors import InputError
from turnscope.jsonio import read_json, write_text
from turnscope.outdir import LOAD_JSON
from turnscope.use_cases.open_page import BUNDLE_FILES, LOAD_PAGE
from turnscope.use_cases.scorecard_files import (
    load_scorecard,
    scorecards_in,
    write_scorecard_page,
)

__all__ = ["rebuild_pages"]


def rebuild_pages(folder: Path) -> list[Path]:
    """Write ``folder``'s page(s) again; return their paths (bad input: not a run's folder)."""
    from turnscope.scoring.report.html import build_report

    if folder.is_dir() and not any((folder / name).exists() for name in BUNDLE_FILES):
        if (folder / LOAD_JSON).is_file():
            return [_load_page(folder)]
        if cards := scorecards_in(folder):
            return [_scorecard_page(card) for card in cards]
        if any(folder.glob("*.html")):  # a page without the JSON it was made from
            raise InputError(
                "holds a page but not the JSON it is made from (load.json, *.scorecard.json)",
                path=folder,
                fix=f"run it again, or open the page as it is: turnscope open {folder}",
            )
    return build_report(folder)


def _load_page(folder: Path) -> Path:
    from turnscope.load.html import render
    from turnscope.load.report import LoadReport

    doc = read_json(folder / LOAD_JSON, what="load run's record")
    try:
        report = LoadReport.model_validate(doc)
    except ValueError as exc:
        raise InputError(
            f"is not a load run's record this version reads ({str(exc).splitlines()[0]})",
            path=folder / LOAD_JSON,
            fix="run the load again with this version",
        ) from None
    return write_text(folder / LOAD_PAGE, render(report, here=folder))


def _scorecard_page(card_path: Path) -> Path:
    return write_scorecard_page(card_path, load_scorecard(card_path))
