"""Shipped configuration: suites, scenarios and pipeline settings (package data)."""

from __future__ import annotations

from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parent

# The shipped configs a command takes by name: folder, suffix, what the file is called.
KINDS = {"scenarios": (".yaml", "scenario"), "suites": (".json", "suite")}


def config_path(*parts: str) -> Path:
    """Path of a shipped config file, e.g. ``config_path("suites", "voice_starter.json")``."""
    return CONFIG_DIR.joinpath(*parts)


def shipped_names(kind: str) -> list[str]:
    """The names of the shipped configs of ``kind`` (``scenarios`` or ``suites``)."""
    suffix = KINDS[kind][0]
    return sorted(p.stem for p in config_path(kind).glob(f"*{suffix}"))


def shipped(kind: str, name: str | Path) -> Path | None:
    """The shipped config a bare name (``refund-call`` or ``refund-call.yaml``, no folder)
    names, or None when it names none."""
    suffix = KINDS[kind][0]
    path = Path(name)
    if path.parent != Path(".") or path.suffix not in ("", suffix):
        return None
    candidate = config_path(kind, path.stem + suffix)
    return candidate if candidate.is_file() else None


def resolve(kind: str, given: str | Path) -> Path:
    """``given`` as a path when something is there; else, when it is a bare name (``refund-call``
    or ``refund-call.yaml``, no folder), the shipped config of that name; else InputError
    naming ``given`` as it was given and the shipped names."""
    from turnscope.errors import InputError

    what = KINDS[kind][1]
    path = Path(given)
    if path.exists():
        return path
    if (found := shipped(kind, given)) is not None:
        return found
    raise InputError(
        f"no such {what} file",
        path=given,
        fix=f"give its path, or a shipped {what}'s name: {', '.join(shipped_names(kind))}",
    )
