"""The folder a run writes its bundle into: ``-o DIR``, checked before anything runs, or a new
timestamped folder under ``runs/``.

A folder that already holds a run's bundle is never overwritten silently: it needs ``--force``
(and then the previous run's files are removed first, so nothing stale is mistaken for this
run's evidence).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from turnscope.errors import InputError, OutputError
from turnscope.jsonio import not_a_file
from turnscope.scoring.evidence.bundle import FILES, MANIFEST

RUNS = Path("runs")
# Everything a run writes into its folder (the bundle's files, and what sits beside them).
RUN_FILES = (
    MANIFEST,
    *(name for name, _, _ in FILES.values()),
    "result.json",
    "bench.json",
    "report.html",
    "timeline.png",
    "report-error.txt",
    "agent_truth.json",
)


LOAD_JSON = "load.json"  # a load run's record, beside load.html and its calls/ folder
LOAD_FILES = (LOAD_JSON, "load.html")
# A new -o named like a file (`-o result.json`, `-o my.yaml`) made a folder of that name, the
# files inside it: refused before anything runs, naming the folder it likely meant.
FILE_SUFFIXES = frozenset(
    {".json", ".yaml", ".yml", ".wav", ".flac", ".mp3", ".ogg", ".opus", ".m4a", ".html", ".png"}
    | {".xml", ".txt", ".csv"}
)


def holds_a_run(folder: Path) -> bool:
    marks = (MANIFEST, "result.json", "caller.wav", *LOAD_FILES)
    return any((folder / name).exists() for name in marks)


def output_dir(given: Path | None, name: str, *, force: bool = False) -> Path:
    """The run's folder, created and known to be writable: ``given`` (``-o``), or
    ``runs/NAME-YYYYmmdd-HHMMSS`` (with a suffix when two runs start in the same second)."""
    if given is None:
        path = RUNS / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}"
        k = 2
        while path.exists():
            path = RUNS / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}-{k}"
            k += 1
    else:
        path = Path(given)
        if path.exists() and not path.is_dir():
            raise InputError("is a file, not a folder", path=path, fix="give -o a folder")
        if not path.exists() and path.suffix.lower() in FILE_SUFFIXES:
            raise InputError(
                f"-o is the folder the run writes its files into, not a {path.suffix} file",
                path=path,
                fix=f"give -o a folder, e.g. {path.with_suffix('')}",
            )
        if path.is_dir():
            for name in (*RUN_FILES, *LOAD_FILES):
                kind = not_a_file(path / name)
                if kind is not None:  # never replaced, even with --force
                    raise InputError(
                        f"is {kind}, not a regular file: a run would write over it",
                        path=path / name,
                        fix="remove it, or choose another -o",
                    )
        if path.is_dir() and holds_a_run(path):
            if not force:
                raise InputError(
                    "already holds a run's bundle",
                    path=path,
                    fix="choose another -o, or pass --force to replace that run",
                )
            clear_run(path)
    writable(path)
    return path


def output_file(path: Path | None, flag: str) -> None:
    """Before anything runs: a file output (``--junit``, ``bench -o``) must be a regular file,
    or nothing yet (InputError naming the flag otherwise; a rename would replace a FIFO or a
    device node such as ``/dev/full`` with a file)."""
    if path is None:
        return
    kind = not_a_file(path)
    if kind is not None:
        raise InputError(
            f"{flag}: is {kind}, not a regular file; turnscope writes only over regular files",
            path=path,
            fix=f"give {flag} a file path",
        )


def clear_run(folder: Path) -> None:
    """Remove a previous run's files from ``folder`` (nothing else in it): a load run's
    aggregate and its calls' bundles too."""
    if any((folder / name).exists() for name in LOAD_FILES):
        for call in (folder / "calls").glob("call-*"):
            clear_run(call)
            with contextlib.suppress(OSError):
                call.rmdir()  # only when nothing but the run's files was in it
    for name in (*RUN_FILES, *LOAD_FILES):
        with contextlib.suppress(FileNotFoundError):
            (folder / name).unlink()


def claim_output_dir(
    given: Path | None, name: str, *, force: bool = False
) -> tuple[Path, tuple[Path, ...]]:
    """``output_dir``, and the folders it made for the run, deepest first (``runs/NAME-TIME``
    and a first ``runs/``, or ``-o`` and any parents of it that were missing): what
    ``remove_empty`` takes away when the run turns out to be nothing."""
    anchor = given if given is not None else RUNS
    made = [p for p in (anchor, *anchor.parents) if not p.exists()]
    folder = output_dir(given, name, force=force)
    return folder, tuple([folder] if given is None else []) + tuple(made)


def remove_empty(folders: Sequence[Path]) -> None:
    """Remove ``folders`` (deepest first) while each is empty: never a file, nor a folder that
    holds anything."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def forget_run(folder: Path, *, made: Sequence[Path]) -> None:
    """Remove what a run that turned out to be bad input wrote in ``folder``, then the folders
    it ``made`` for it that are left empty."""
    clear_run(folder)
    remove_empty(made)


@contextlib.contextmanager
def dropped_if_empty(made: Sequence[Path]) -> Iterator[None]:
    """Run the block; if it raises (bad input found late, a device that is not there, an
    interrupt), remove the folders ``made`` for the run that it left empty, then re-raise.
    A folder the run wrote anything into stays: that is evidence."""
    try:
        yield
    except BaseException:
        remove_empty(made)
        raise


def writable(folder: Path) -> None:
    """Create ``folder`` and make sure a file can be written in it (OutputError otherwise)."""
    probe = folder / f".turnscope-probe-{os.getpid()}"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputError(exc, folder) from None
