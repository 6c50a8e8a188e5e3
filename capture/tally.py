"""Counts of names an agent chose (unknown event types, refused messages), kept bounded: a flood
of distinct names is summarised in one short line, never listed whole."""

from __future__ import annotations

MAX_KINDS = 20  # distinct names kept; the rest are counted together under OTHER
MAX_NAME = 40  # characters of a name kept
OTHER = "(others)"
SHOWN = 3  # names a summary line shows


def count(counts: dict[str, int], name: object) -> None:
    """Count one ``name`` in ``counts``: cut to MAX_NAME characters, at most MAX_KINDS names."""
    key = str(name)
    if len(key) > MAX_NAME:
        key = key[:MAX_NAME] + "..."
    if key not in counts and len(counts) >= MAX_KINDS:
        key = OTHER
    counts[key] = counts.get(key, 0) + 1


def summary(counts: dict[str, int]) -> str:
    """The most frequent few as ``'x' x3`` (repr: no control character is printed raw), and
    how many more there were."""
    named = sorted(((k, v) for k, v in counts.items() if k != OTHER), key=lambda kv: -kv[1])
    shown = ", ".join(f"{k!r} x{v}" for k, v in named[:SHOWN])
    hidden = sum(v for _, v in named[SHOWN:]) + counts.get(OTHER, 0)
    if hidden:
        shown += f" and {hidden} more of other types"
    return f"{shown} ({sum(counts.values())} in all)" if hidden else shown
