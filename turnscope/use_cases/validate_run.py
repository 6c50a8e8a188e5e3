"""``turnscope validate`` of a run that holds many bundles: a load run's calls (``calls/*``,
each one whether or not it has a manifest) or a folder of bundles (a bench run's tasks), each
checked against the contract."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from turnscope.load.record import CALLS
from turnscope.scoring.evidence.bundle import MANIFEST

__all__ = ["BundleCheck", "bundles_in", "validate_run"]


@dataclass
class BundleCheck:
    """One bundle of the run, and its problems (none: valid)."""

    bundle: Path
    problems: list[str] = field(default_factory=list)


def bundles_in(folder: Path) -> list[Path]:
    """The bundles ``folder`` holds when it is a run of many (none when it is a bundle itself,
    or holds none): a load run's every call folder, or the sub-folders that are bundles."""
    if not folder.is_dir() or (folder / MANIFEST).exists():
        return []
    if (folder / "load.json").is_file() and (folder / CALLS).is_dir():
        return sorted(p for p in (folder / CALLS).iterdir() if p.is_dir())
    return sorted(p.parent for p in folder.glob(f"*/{MANIFEST}"))


def validate_run(folder: Path) -> list[BundleCheck]:
    """Every bundle of a run of many, checked (an empty list: ``folder`` is not such a run)."""
    from turnscope.scoring.evidence.validate import validate_bundle

    return [BundleCheck(b, validate_bundle(b)) for b in bundles_in(folder)]
