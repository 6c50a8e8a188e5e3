"""``turnscope validate`` of a run that holds many bundles: a load run's calls (``calls/*``,
each one whether or not it has a manifest) or a folder of bundles (a bench run's tasks), each
checked against the contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from turnscope.errors import TurnscopeError
from turnscope.load.record import CALLS
from turnscope.outdir import LOAD_JSON
from turnscope.scoring.evidence.bundle import MANIFEST
from turnscope.use_cases.scorecard_files import load_scorecard, scorecards_in

__all__ = ["BundleCheck", "bundles_in", "validate_run"]


@dataclass
class BundleCheck:
    """One bundle of the run, and its problems (none: valid)."""

    bundle: Path
    problems: list[str] = field(default_factory=list)


def bundles_in(folder: Path) -> list[Path]:
    """The bundles ``folder`` holds when it is a run of many (none when it is a bundle itself,
    or holds none): a load run's every call folder, the sub-folders that are bundles, or, for
    a bench's output folder (``-o out/bench.json``), those of the runs its scorecard names."""
    if not folder.is_dir() or (folder / MANIFEST).exists():
        return []
    if (folder / LOAD_JSON).is_file() and (folder / CALLS).is_dir():
        return sorted(p for p in (folder / CALLS).iterdir() if p.is_dir())
    here = sorted(p.parent for p in folder.glob(f"*/{MANIFEST}"))
    return here or [b for runs in _scorecards_runs(folder) for b in bundles_in(runs)]


def _scorecards_runs(folder: Path) -> list[Path]:
    """The per-task bundles' folders the scorecards in ``folder`` name (``runs``, relative)."""
    found: list[Path] = []
    for card in scorecards_in(folder):
        try:
            runs = load_scorecard(card).get("runs")
        except TurnscopeError:
            continue  # not a scorecard this version reads: nothing named
        if isinstance(runs, str) and (folder / runs).is_dir() and folder / runs != folder:
            found.append((folder / runs).resolve())
    return sorted(set(found))


def validate_run(folder: Path) -> list[BundleCheck]:
    """Every bundle of a run of many, checked (an empty list: ``folder`` is not such a run)."""
    from turnscope.scoring.evidence.validate import validate_bundle

    return [BundleCheck(b, validate_bundle(b)) for b in bundles_in(folder)]
