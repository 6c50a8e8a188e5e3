"""A key a document the user wrote (a scenario, a suite, settings) does not allow where it stands:
the fix, from every key the document's model knows and where each belongs. A misspelt key gets
the likely key ("caler" -> 'caller'), one in the wrong place where it goes ("timeout_s" at the
top of a scenario: under caller)."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, get_args, get_origin

from pydantic import BaseModel

__all__ = ["Keys", "extra_fix", "field_names"]

CUTOFF = 0.75  # "caler" -> "caller", "barge_in_at_ms" -> "barge_in_ms"; not "name" -> "voice"
TOP = ""  # the path of the document's top level


@dataclass(frozen=True)
class Keys:
    """Every key a document of one model may hold, each with the paths of the mappings that
    hold it: ``caller``, ``caller.llm``, ``script[N]`` (an item of a list), ``facts.NAME`` (a
    value of a mapping), ``""`` (the top level)."""

    at: Mapping[str, frozenset[str]]
    paths: frozenset[str]  # every path in the model, those of lists and mappings too

    def path_of(self, loc: Sequence[Any]) -> str:
        """The path of the mapping a pydantic error's ``loc`` (without its last key) stands in;
        a union member's tag pydantic adds is skipped."""
        path = TOP
        for part in loc:
            step = f"{path}[N]" if isinstance(part, int) else f"{path}.{part}".lstrip(".")
            if step in self.paths:
                path = step
            elif f"{path}.NAME".lstrip(".") in self.paths and isinstance(part, str):
                path = f"{path}.NAME".lstrip(".")
        return path


@cache
def field_names(model: type[BaseModel]) -> Keys:
    """Every key a document of ``model`` may hold and where: its fields' names and aliases, and
    those of every model inside them (in lists, unions, mappings)."""
    at: dict[str, set[str]] = {}
    inside: set[type] = set()  # the models being visited, outermost first
    paths: set[str] = set()

    def visit(tp: Any, path: str) -> None:
        paths.add(path)
        origin = get_origin(tp)
        if origin in (list, tuple, set, frozenset, Sequence):
            path = f"{path}[N]"
        elif origin in (dict, Mapping):
            path = f"{path}.NAME".lstrip(".")
        for arg in get_args(tp):
            visit(arg, path)
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            # A model inside itself (at any depth): its keys here, and no deeper (no end).
            again = tp in inside
            inside.add(tp)
            for name, field in tp.model_fields.items():
                for key in {name, field.alias} - {None}:
                    at.setdefault(key, set()).add(path)
                if not again:
                    visit(field.annotation, f"{path}.{field.alias or name}".lstrip("."))
            if not again:
                inside.discard(tp)

    visit(model, TOP)
    return Keys({key: frozenset(where) for key, where in at.items()}, frozenset(paths))


def extra_fix(loc: Sequence[Any], keys: Keys | None) -> str | None:
    """The fix for a key ``keys`` does not allow at ``loc``: where it belongs, or the likely
    key meant; None when neither is known."""
    key = loc[-1] if loc else None
    if not isinstance(key, str) or keys is None:
        return None
    here = keys.path_of(loc[:-1])
    if key in keys.at and here not in keys.at[key]:
        return f"remove it, or move it under {_where(keys.at[key])}"
    local = sorted(k for k, paths in keys.at.items() if here in paths)
    close = difflib.get_close_matches(key, local, n=1, cutoff=CUTOFF) or (
        difflib.get_close_matches(key, sorted(keys.at), n=1, cutoff=CUTOFF)
    )
    if not close:
        return None
    there = "" if here in keys.at[close[0]] else f" under {_where(keys.at[close[0]])}"
    return f"remove it, or fix its spelling: {close[0]!r}{there}?"


def _where(paths: frozenset[str]) -> str:
    """Where a key belongs, in words: ``caller``, ``caller or agent``, ``the top level``."""
    named = sorted(p or "the top level" for p in paths)
    named = [*named[:4], f"{len(named) - 4} more"] if len(named) > 5 else named
    return named[0] if len(named) == 1 else ", ".join(named[:-1]) + " or " + named[-1]
