"""A suite's scorecard on disk: read (from the scorecard, or the bench result it was written
beside), checked against a baseline's suite, and its page written beside it. The floors and the
tolerance the page shows are the gate's (scoring/suites/gate.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnscope.errors import InputError, OutputError, TurnscopeError
from turnscope.jsonio import SCORECARD_LIMITS, read_json, write_text
from turnscope.scoring.suites.gate import DEFAULT_TOLERANCE
from turnscope.scoring.suites.scorecard_page import page, pinned_beside

SCORECARD_KIND = "turnscope.scorecard.v1"


def load_scorecard(path: Path) -> dict[str, Any]:
    """A scorecard JSON, or the bench result it was written beside."""
    data = read_json(path, what="scorecard file", limits=SCORECARD_LIMITS)
    if isinstance(data, dict) and data.get("kind") == SCORECARD_KIND:
        return data
    sibling = path.with_suffix(".scorecard.json")
    if sibling.exists():
        return load_scorecard(sibling)
    raise InputError(
        f"not a turnscope scorecard (kind {SCORECARD_KIND})",
        path=path,
        fix="pass the .scorecard.json that `turnscope bench` wrote",
    )


def scorecards_in(folder: Path) -> list[Path]:
    """The scorecards a folder holds: ``NAME.scorecard.json`` beside a bench's ``-o`` result,
    ``scorecard.json`` in a bench run's own folder."""
    return sorted({*folder.glob("*.scorecard.json"), *folder.glob("scorecard.json")})


def _suite_of(card: Mapping[str, Any]) -> str:
    suite = card.get("suite") or {}
    if isinstance(suite, str):  # hand-written: a name alone
        return suite
    if not isinstance(suite, dict) or not suite:
        return "an unnamed suite"
    return f"{suite.get('name')!s} v{suite.get('version')!s}"


def same_suite(
    card: Mapping[str, Any], pinned: Mapping[str, Any], run: Path, baseline: Path
) -> None:
    """A baseline is only comparable with a run of the same suite and scorecard version."""
    if card.get("kind") != pinned.get("kind"):
        raise InputError(
            f"the baseline is a {pinned.get('kind')!r} scorecard, this run's ({run}) a "
            f"{card.get('kind')!r} one",
            path=baseline,
            fix="re-pin the baseline with this version (--update-baseline)",
        )
    if card.get("suite") and pinned.get("suite") and card["suite"] != pinned["suite"]:
        raise InputError(
            f"the baseline is of {_suite_of(pinned)}, this run ({run}) of {_suite_of(card)}",
            path=baseline,
            fix="gate each suite against its own baseline",
        )


def scorecard_html(
    card: Mapping[str, Any],
    *,
    baseline: Mapping[str, Any] | None = None,
    baseline_name: str = "",
    here: Path | None = None,
    floors: Mapping[str, float] | None = None,
    tolerance: float | None = None,
) -> str:
    """The scorecard page (scoring/suites/scorecard_page.py): tags, tasks, the baseline."""
    return page(
        card,
        baseline=baseline,
        baseline_name=baseline_name,
        here=here,
        floors=floors,
        tolerance=DEFAULT_TOLERANCE if tolerance is None else tolerance,
    )


def write_scorecard_page(
    card_path: Path,
    card: Mapping[str, Any],
    baseline_path: Path | None = None,
    *,
    floors: Mapping[str, float] | None = None,
    tolerance: float | None = None,
) -> Path:
    """``card_path``'s page beside it (``.html``), against ``baseline_path`` when given, else a
    baseline pinned next to it (``baseline.scorecard.json``) when there is one."""
    where = baseline_path or pinned_beside(card_path)
    try:
        base = (
            read_json(where, what="baseline scorecard", limits=SCORECARD_LIMITS) if where else None
        )
    except TurnscopeError:
        if baseline_path is not None:
            raise
        base = None  # a broken file beside the scorecard: `turnscope gate` says what is wrong
    if base is not None and (not isinstance(base, dict) or base.get("suite") != card.get("suite")):
        base = None  # another suite's (the gate says so): no change to show against it
    html_path = card_path.with_suffix(".html")
    write_text(
        html_path,
        scorecard_html(
            card,
            baseline=base,
            baseline_name=str(where) if base is not None else "",
            here=html_path.parent,
            floors=floors,
            tolerance=tolerance,
        ),
    )
    return html_path


def gated_scorecard_page(
    result: Path,
    card: Mapping[str, Any],
    baseline_path: Path,
    *,
    floors: Mapping[str, float],
    tolerance: float,
) -> str | None:
    """`turnscope gate --baseline`: the scorecard's page written again with what changed
    against the baseline; None, or one line on why it could not be."""
    card_path = result
    if (
        not result.name.endswith("scorecard.json")
        and result.with_suffix(".scorecard.json").exists()
    ):
        card_path = result.with_suffix(".scorecard.json")  # the bench result's scorecard
    try:
        write_scorecard_page(card_path, card, baseline_path, floors=floors, tolerance=tolerance)
    except OutputError as exc:
        return f"the scorecard page was not updated: {exc}"
    return None
