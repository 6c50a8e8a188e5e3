"""A caller line's planned pauses, as the reference agent hears them (a scenario's ``pauses:``).

The caller stops mid-thought and goes on. The agent line that answers the line waits through
its pauses: an end of turn heard before all of them have gone by is a pause, not the end, as
the synthetic call has it; an agent line with ``at_pause_ms`` takes the floor that long into the
line's first pause, and talks on as the caller goes on. Before, the agent answered into every
pause longer than its end-of-turn silence, and each later line answered the caller's line
before (the shipped pauses and pause-takeover scenarios came out "ahead of the script").

A pause is heard by its length: a silence in the caller's speech, begun while the agent was
quiet, counts as the next planned pause once it lasted ``PAUSE_SHARE`` of it (a breath between
words is far shorter). Counting silences, not ends of turn, keeps the count right for a pause
too short to end a turn.
"""

from __future__ import annotations

from collections.abc import Sequence

from turnscope.actors.caller.scenario import Scenario

__all__ = ["PausesHeard", "answered_pauses"]

PAUSE_SHARE = 0.5
MIN_GAP_MS = 150.0  # shorter is a breath between words, whatever the plan


def answered_pauses(scenario: Scenario, k: int) -> list[int]:
    """The planned pauses (ms) of the caller line agent line ``k`` answers: the one before it,
    past agent lines spoken into that line's pause."""
    j = k - 1
    while j >= 0 and scenario.script[j].at_pause_ms is not None:
        j -= 1
    line = scenario.script[j] if j >= 0 else None
    if line is None or line.speaker != "caller" or not line.pauses:
        return []
    return [p.ms for p in line.pauses]


class PausesHeard:
    """How many of the planned pauses of the caller line being answered have gone by."""

    def __init__(self) -> None:
        self.heard = 0
        self._stop_ms: float | None = None

    def reset(self) -> None:
        """The agent answered: the caller's next line starts the count again."""
        self.heard, self._stop_ms = 0, None

    def stopped(self, at_ms: float, agent_quiet: bool) -> None:
        """The caller's speech stopped at ``at_ms`` (a pause only while the agent is quiet)."""
        self._stop_ms = at_ms if agent_quiet else None

    def resumed(self, at_ms: float, planned: Sequence[int]) -> None:
        """The caller's speech started again: a silence long enough is the next planned pause."""
        if self._stop_ms is None or self.heard >= len(planned):
            return
        if at_ms - self._stop_ms >= max(MIN_GAP_MS, PAUSE_SHARE * planned[self.heard]):
            self.heard += 1
        self._stop_ms = None

    def inside(self, planned: Sequence[int]) -> bool:
        """Whether the caller is still mid-line: planned pauses not yet gone by."""
        return self.heard < len(planned)
