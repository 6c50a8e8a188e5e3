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


def resolve(kind: str, given: str | Path) -> Path:
    """``given`` as a path when something is there; else, when it is a bare name (``refund-call``
    or ``refund-call.yaml``, no folder), the shipped config of that name; else InputError
    naming ``given`` as it was given and the shipped names."""
    from turnscope.errors import InputError

    suffix, what = KINDS[kind]
    path = Path(given)
    if path.exists():
        return path
    bare = path.parent == Path(".") and path.suffix in ("", suffix)
    if bare and (candidate := config_path(kind, path.stem + suffix)).is_file():
        return candidate
    raise InputError(
        f"no such {what} file",
        path=given,
        fix=f"give its path, or a shipped {what}'s name: {', '.join(shipped_names(kind))}",
    )
