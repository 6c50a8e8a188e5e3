"""A misspelt key in a document the user wrote (a scenario, a suite): the key it was likely
meant to be, from every key the document's model knows at any depth."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Sequence
from functools import cache
from typing import Any, get_args

from pydantic import BaseModel

__all__ = ["close_to", "field_names"]

CUTOFF = 0.75  # "caler" -> "caller", "barge_in_at_ms" -> "barge_in_ms"; not "name" -> "voice"


@cache
def field_names(model: type[BaseModel]) -> frozenset[str]:
    """Every key a document of ``model`` may hold, at any depth: its fields' names and aliases,
    and those of every model inside them (in lists, unions, mappings)."""
    names: set[str] = set()
    seen: set[type] = set()

    def visit(tp: Any) -> None:
        for arg in get_args(tp):
            visit(arg)
        if isinstance(tp, type) and issubclass(tp, BaseModel) and tp not in seen:
            seen.add(tp)
            for name, field in tp.model_fields.items():
                names.update(n for n in (name, field.alias) if n)
                visit(field.annotation)

    visit(model)
    return frozenset(names)


def close_to(loc: Sequence[Any], known: Collection[str]) -> str:
    """``: 'KEY'?`` for the known key closest to the last key of ``loc``, or nothing."""
    key = loc[-1] if loc else None
    if not isinstance(key, str) or not known:
        return ""
    close = difflib.get_close_matches(key, sorted(known), n=1, cutoff=CUTOFF)
    return f": {close[0]!r}?" if close else ""
