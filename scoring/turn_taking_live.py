"""Turn-taking events told the moment they are known (the live view): the agent taking the floor
at a caller's pause, and a false yield (the agent stopping at a caller's backchannel).

The same measure as result.json's (turn_taking.py), re-run on the assembly so far. An event is
told once, and only when it can no longer change: a takeover only grows as the agent's turn
does, so it is told as soon as it is one; a false yield waits until the agent's turn it cut is
final past the yield window.
"""

from __future__ import annotations

from collections.abc import Sequence

from turnscope.asr.assembly import Assembly
from turnscope.scoring.turn_taking import YIELD_MS, measure
from turnscope.scoring.turn_taking_input import from_assembly
from turnscope.scoring.turn_taking_model import Behaviour, Condition, TurnTakingEvent

# A backchannel's outcome is settled once the assembly is final this far past its end.
SETTLED_MS = YIELD_MS + 1000.0


def _clock(ms: float) -> str:
    s = max(ms, 0) / 1000
    return f"{int(s // 60):02d}:{s % 60:06.3f}"


def describe(e: TurnTakingEvent) -> str:
    """One line for a pause takeover or a false yield."""
    at = _clock(e.start_ms)
    if e.kind == Condition.PAUSE_HANDLING.value:
        over = f"; talked over the caller {e.overlap_ms:.0f} ms" if e.overlap_ms else ""
        return (
            f"{at} turn-taking: the agent took the floor at the caller's pause "
            f"({e.end_ms - e.start_ms:.0f} ms){over}"
        )
    what = e.behaviour.value.replace("_", " ") if e.behaviour else "stopped"
    return f"{at} turn-taking: false yield at the caller's {e.text!r} ({what})"


class LiveTurnTaking:
    """Remembers what was told; ``new`` gives the lines for events settled since."""

    def __init__(self) -> None:
        self.told: set[tuple[str, float]] = set()

    def new(
        self,
        assembly: Assembly,
        final_until_ms: float,
        pauses: Sequence[Sequence[float]],
        backchannels: Sequence[Sequence[float]] | None = None,
    ) -> list[str]:
        """Lines for the events settled in ``assembly`` (``pauses``: those the caller made so
        far, a replay has none and tells no pauses; ``backchannels``: those it said, when it
        reports them, as result.json's measure reads them)."""
        said = [tuple(b) for b in backchannels] if backchannels is not None else None
        turns = from_assembly(assembly, planned_pauses=list(pauses), planned_backchannels=said)
        tt = measure(turns)
        out = []
        for e in tt.events:
            key = (e.kind, round(e.start_ms))
            if key in self.told or not _settled(e, final_until_ms):
                continue
            self.told.add(key)
            out.append(describe(e))
        return out


def _settled(e: TurnTakingEvent, final_until_ms: float) -> bool:
    if e.kind == Condition.PAUSE_HANDLING.value:
        return bool(e.takeover)
    if e.kind == Condition.BACKCHANNEL.value:
        false_yield = e.behaviour is not None and e.behaviour is not Behaviour.KEPT_TALKING
        return false_yield and final_until_ms >= e.end_ms + SETTLED_MS
    return False
