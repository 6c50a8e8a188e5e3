"""The temporal verifier: grades a voice transcript on latency, turn-taking, barge-in and content.

Semantics are fixed by the contract (docs: ../shared/contracts/verifier.md) down to the float,
including its quirks: turns are taken in list order (never sorted by time), a negative gap is
outside the budget, speakers other than "caller"/"agent" are ignored by every score but counted.
Anything turnscope adds (WER, backchannels, continuity) lives beside this result, never inside it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

DEFAULT_MAX_LATENCY_MS = 1200
BARGE_IN_YIELD_MS = 600
PASS_FLOOR = 0.75
COMPONENTS = ("latency", "turn_taking", "barge_in", "content")


@dataclass(frozen=True)
class _Turn:
    speaker: str
    start_ms: int
    end_ms: int
    text: str
    interrupt: bool


def _normalise(turn: Mapping[str, Any]) -> _Turn:
    return _Turn(
        speaker=str(turn.get("speaker")),
        start_ms=int(turn.get("start_ms", 0)),
        end_ms=int(turn.get("end_ms", 0)),
        text=str(turn.get("text") or ""),
        interrupt=bool(turn.get("interrupt", False)),
    )


def _latency(turns: Sequence[_Turn], max_latency: int) -> float:
    inside = counted = 0
    last_caller: _Turn | None = None
    # "Nearest caller turn at a smaller list index" is the last caller seen while walking the list.
    for turn in turns:
        if turn.speaker == "caller":
            last_caller = turn
        elif turn.speaker == "agent" and last_caller is not None:
            counted += 1
            gap = turn.start_ms - last_caller.end_ms
            if 0 <= gap <= max_latency:
                inside += 1
    return inside / counted if counted else 1.0


def _overlaps(turns: Sequence[_Turn]) -> tuple[float, float]:
    agents = [t for t in turns if t.speaker == "agent"]
    callers = [t for t in turns if t.speaker == "caller"]
    harmful = barge_ins = handled = 0
    for a in agents:
        overlapping = [c for c in callers if c.start_ms < a.end_ms and c.end_ms > a.start_ms]
        excused = False
        for c in overlapping:
            if c.interrupt:
                excused = True
                barge_ins += 1
                if a.end_ms - c.start_ms <= BARGE_IN_YIELD_MS:
                    handled += 1
        if overlapping and not excused:
            harmful += 1
    turn_taking = 1 - harmful / len(agents) if agents else 1.0
    barge_in = handled / barge_ins if barge_ins else 1.0
    return turn_taking, barge_in


def _content(turns: Sequence[_Turn], required: Sequence[Any] | None) -> float:
    if not required:
        return 1.0
    spoken = " ".join(t.text for t in turns if t.speaker == "agent").lower()
    hits = sum(1 for kw in required if str(kw).lower() in spoken)
    return hits / len(required)


def score_voice_episode(
    dialogue: Sequence[Mapping[str, Any]] | None,
    *,
    budgets: Mapping[str, Any] | None = None,
    required_content: Sequence[Any] | None = None,
) -> dict[str, Any]:
    """Score one voice transcript (a list of turns) against a task's budgets and keywords.

    Returns ``{"result": {scalar, components, pass_fail, explanation}, "raw": {...}}`` exactly as
    the contract specifies. Raises ValueError/TypeError for a turn whose times are not numbers.
    """
    if not dialogue:
        return {
            "result": {
                "scalar": 0.0,
                "components": {},
                "pass_fail": {"voice": False},
                "explanation": "empty transcript",
            },
            "raw": {"modality": "voice"},
        }
    turns = [_normalise(t) for t in dialogue]
    max_latency = int((budgets or {}).get("max_latency_ms", DEFAULT_MAX_LATENCY_MS))
    turn_taking, barge_in = _overlaps(turns)
    components = {
        "latency": round(_latency(turns, max_latency), 6),
        "turn_taking": round(turn_taking, 6),
        "barge_in": round(barge_in, 6),
        "content": round(_content(turns, required_content), 6),
    }
    scalar = round(sum(components.values()) / len(components), 6)
    floors = {f"{name}_floor": value >= PASS_FLOOR for name, value in components.items()}
    floors_met = all(floors.values())
    return {
        "result": {
            "scalar": scalar,
            "components": components,
            "pass_fail": {"voice": floors_met, **floors},
            "explanation": (
                "all voice dimensions met the floor"
                if floors_met
                else "a voice dimension fell below the floor"
            ),
        },
        "raw": {
            "modality": "voice",
            "turns": len(turns),
            "max_latency_ms": max_latency,
            "floors_met": floors_met,
        },
    }


def failed_floors(result: Mapping[str, Any]) -> list[str]:
    """Names of the components whose floor failed in a verifier result (``result["result"]``)."""
    pass_fail = result.get("pass_fail", {})
    return [name for name in COMPONENTS if pass_fail.get(f"{name}_floor") is False]
