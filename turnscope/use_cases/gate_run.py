"""`turnscope gate` as functions: a run's scorecard judged against its floors and a pinned
baseline (the page beside it and JUnit XML written), or pinned as the new baseline on purpose.
The floors and the tolerance are the gate's own (scoring/suites/gate.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from turnscope.errors import InputError
from turnscope.jsonio import write_json, write_text
from turnscope.outdir import output_file
from turnscope.scoring.suites.gate import (
    DEFAULT_TOLERANCE,
    GateResult,
    baseline_of,
    broken_cells,
    gate,
    junit_xml,
)
from turnscope.scoring.suites.pinning import keep_worst as worst_of
from turnscope.use_cases.checks import as_path
from turnscope.use_cases.scorecard_files import gated_scorecard_page, load_scorecard, same_suite


@dataclass
class GateRun:
    """The gate's verdict on a run; ``page_problem``: why the scorecard's page could not be
    written again against the baseline (None when it was, or there is no baseline)."""

    verdict: GateResult
    page_problem: str | None = None


def check_gate(
    result: str | Path,
    *,
    baseline: str | Path | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
    floors: Mapping[str, float] | None = None,
    junit: str | Path | None = None,
) -> GateRun:
    """Judge the scorecard ``result`` (or the bench result it was written beside): every
    dimension on every tag against its floor and, with ``baseline``, against the pinned
    baseline within ``tolerance``; every task's verdict and floors. With a baseline, the
    scorecard's page is written again showing what changed; ``junit`` gets JUnit XML."""
    result, baseline, junit = Path(result), as_path(baseline), as_path(junit)
    output_file(junit, "--junit")
    card = load_scorecard(result)
    pinned = load_scorecard(baseline) if baseline is not None else None
    if pinned is not None and baseline is not None:
        same_suite(card, pinned, result, baseline)
    verdict = gate(card, pinned, tolerance=tolerance, floors=dict(floors or {}))
    run = GateRun(verdict)
    if baseline is not None:  # the page beside the scorecard shows what changed
        run.page_problem = gated_scorecard_page(
            result, card, baseline, floors=dict(floors or {}), tolerance=tolerance
        )
    if junit is not None:
        write_text(junit, junit_xml(verdict))
    return run


def pin_baseline(
    result: str | Path,
    baseline: str | Path,
    *,
    tolerance: float = DEFAULT_TOLERANCE,
    floors: Mapping[str, float] | None = None,
    junit: str | Path | None = None,
    keep_worst: bool = False,
) -> GateResult:
    """Pin the scorecard ``result`` as the new ``baseline`` (its per-task rows and links left
    out); the gate against the baseline it replaces says what moved. A cell that is not a
    number is never pinned (InputError). ``junit`` is only checked: pinning writes none.
    ``keep_worst``: keep the existing baseline's value wherever it is worse (a baseline that
    holds on each machine whose run was pinned into it: scoring/suites/pinning.py)."""
    result, baseline = Path(result), Path(baseline)
    output_file(as_path(junit), "--junit")
    card = load_scorecard(result)
    broken = broken_cells(card)
    if broken:
        raise InputError(
            f"will not pin cells that are not numbers: {', '.join(broken[:5])}",
            path=result,
            fix="fix the run that wrote this scorecard, then pin it",
        )
    previous = load_scorecard(baseline) if baseline.exists() else None
    if previous is not None:
        same_suite(card, previous, result, baseline)
    elif keep_worst:
        raise InputError("no baseline to keep the worst of", path=baseline,
                         fix="pin the first machine's run without --keep-worst")  # fmt: skip
    verdict = gate(card, previous, tolerance=tolerance, floors=dict(floors or {}))
    pinned = worst_of(card, previous) if keep_worst and previous else baseline_of(card)
    write_json(baseline, pinned)
    return verdict
