"""Transcripts as the verifier reads them: a list of turns, validated for the CLI.

The verifier itself is lenient by contract (missing fields default); input files are held to a
stricter shape so that a wrong file is reported instead of silently scored as zeros.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from turnscope.errors import InputError
from turnscope.jsonio import read_json

SPEAKERS = ("caller", "agent")


def _is_number(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(float(value))
    )


def validate_dialogue(obj: Any, *, source: str | Path | None = None) -> list[dict[str, Any]]:
    """Return the turns of a transcript (a list, or an object with a ``turns`` list).

    Raises InputError naming ``source`` when the shape is wrong or a turn lacks numeric times.
    """
    turns = obj.get("turns") if isinstance(obj, Mapping) else obj
    if not isinstance(turns, list):
        raise InputError(
            "expected a JSON list of turns or an object with a 'turns' list", path=source
        )
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            raise InputError(f"turn [{i}] is not an object", path=source)
        for key in ("start_ms", "end_ms"):
            if key not in turn:
                raise InputError(f"turn [{i}] has no {key}", path=source)
            if not _is_number(turn[key]) or turn[key] < 0:
                raise InputError(
                    f"turn [{i}] {key} is {turn[key]!r}, expected a number of milliseconds "
                    "(0 or more)",
                    path=source,
                )
        if turn["end_ms"] < turn["start_ms"]:
            raise InputError(
                f"turn [{i}] ends ({turn['end_ms']}) before it starts ({turn['start_ms']})",
                path=source,
            )
        if turn.get("speaker") not in SPEAKERS:
            what = f"speaker {turn['speaker']!r}" if "speaker" in turn else "no speaker"
            raise InputError(
                f"turn [{i}] has {what}, expected one of {', '.join(SPEAKERS)}", path=source
            )
        text = turn.get("text")
        if text is not None and not isinstance(text, str):
            raise InputError(f"turn [{i}] text is {text!r}, expected a string", path=source)
        interrupt = turn.get("interrupt", False)
        if not isinstance(interrupt, bool):
            raise InputError(
                f"turn [{i}] interrupt is {interrupt!r}, expected true or false (a JSON "
                "boolean, not a string or number)",
                path=source,
            )
    return [dict(t) for t in turns]


def load_dialogue(path: str | Path) -> list[dict[str, Any]]:
    """Read and validate a transcript file (a run's folder is named with its transcript)."""
    inside = Path(path) / "transcript.json"
    if inside.is_file():
        raise InputError(
            "is a run's folder, expected a transcript file", path=path, fix=f"give {inside}"
        )
    return validate_dialogue(read_json(path, what="transcript file"), source=path)
