"""When each call of a load run starts, and which event loop places it."""

from __future__ import annotations

import math

from pydantic import BaseModel, Field

# A call placed later than this after its planned start was not placed on time: the load the
# agent saw is not the load that was asked for, and the run says so (degraded).
PLACEMENT_SLACK_S = 1.0
# Concurrent WebRTC calls one core carries (benchmarks/scale.py: a call's loop takes about 5%
# of a core, its ASR runs on idle time). Beyond it the run is warned before it starts.
CALLS_PER_CORE = 12


class Slot(BaseModel):
    """One caller of the run: its number and when (seconds after the start) it first dials."""

    index: int = Field(ge=0)
    offset_s: float = Field(ge=0)


class LoadPlan(BaseModel):
    """``calls`` callers, started ``rate`` per second; with ``duration_s`` each caller dials
    again when its call ends, until that many seconds have passed since the start."""

    calls: int = Field(ge=1)
    rate: float = Field(gt=0)
    duration_s: float | None = Field(default=None, gt=0)

    def slots(self) -> list[Slot]:
        return [Slot(index=i, offset_s=i / self.rate) for i in range(self.calls)]

    @property
    def ramp_s(self) -> float:
        return (self.calls - 1) / self.rate

    def split(self, loops: int) -> list[list[Slot]]:
        """The slots dealt round-robin over ``loops`` event loops (each gets every loop-th
        start, so the ramp rises evenly on all of them); no empty share."""
        loops = max(1, min(loops, self.calls))
        return [self.slots()[k::loops] for k in range(loops)]


def loops_for(calls: int, cpus: int) -> int:
    """Event loops for ``calls`` on ``cpus`` cores: one per core, never more than calls."""
    return max(1, min(calls, cpus))


def overload(calls: int, cpus: float) -> str | None:
    """A line when more calls run at once than the cores are known to carry on time."""
    can = int(math.floor(cpus * CALLS_PER_CORE))
    if calls <= can:
        return None
    return (
        f"{calls} calls at once may be more than {cpus:g} core(s) place on time (about "
        f"{CALLS_PER_CORE} per core): calls placed late or caller audio sent late make the run "
        "degraded; spread it over a cluster with --ray ADDRESS, or lower --calls"
    )
