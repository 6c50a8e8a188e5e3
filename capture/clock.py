"""The call's one clock: sample 0 is the call's first media event, on the event loop's time.

Every live source places both channels on it, the caller's track paces itself by it, and its
origin is time.monotonic() (the loop's clock), so another process on the machine (an agent
logging when it spoke) can be compared with it directly.
"""

from __future__ import annotations

import asyncio


class CallClock:
    """The call's one clock: ``origin`` is the loop time of sample 0, set by the first user."""

    def __init__(self) -> None:
        self.origin: float | None = None

    def start(self, at: float | None = None) -> float:
        if self.origin is None:
            self.origin = asyncio.get_running_loop().time() if at is None else at
        return self.origin

    def now_ms(self) -> float:
        origin = self.start()
        return (asyncio.get_running_loop().time() - origin) * 1000.0

    def to_ms(self, loop_time: float) -> float:
        return (loop_time - self.start()) * 1000.0
