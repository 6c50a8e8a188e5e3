"""What every live call source shares: the frame queue the pipeline reads, and one ending.

A WebRTC call and a sound-device call differ in how audio reaches the call clock, not in how a
call ends: frames are queued as they are placed, until the call ends once, for one reason
(degraded or not); the queue then closes and ``ended`` resolves with that reason.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Callable
from enum import Enum

from turnscope.capture.clock import CallClock
from turnscope.capture.frames import PcmFrame
from turnscope.capture.source import SourceInfo


class CallEnd(str, Enum):
    """How a call ended, as counted (a load run's dropped calls by kind); the words are in
    ``end_reason``."""

    CALLER_HUNG_UP = "caller hung up"
    AGENT_HUNG_UP_AFTER = "agent hung up after the script"
    AGENT_HUNG_UP_EARLY = "agent hung up early"
    TIME_LIMIT = "time limit"
    INTERRUPTED = "interrupted"
    CONNECTION_LOST = "connection lost"
    AGENT_SILENT = "agent went silent"
    AGENT_UNRESPONSIVE = "agent stopped answering"
    AGENT_OVERSIZED = "agent sent an oversized message"
    DEVICE_GONE = "device gone"


class CallSource:
    """Base of the live call sources; ``frames`` is the ``Source`` protocol's stream."""

    info: SourceInfo
    clock: CallClock  # set by each source
    end_kind: CallEnd | None = None  # how the call ended, as a code (end_reason: in words)

    def __init__(self) -> None:
        self.ended: asyncio.Future | None = None  # created by connect(), on the running loop
        self.end_reason: str | None = None
        self._queue: asyncio.Queue[PcmFrame | None] = asyncio.Queue()
        self._closed = False
        # Called with every frame as it is placed, before the pipeline reads it: the scripted
        # caller listens to the agent through its own endpointer.
        self.frame_listeners: list[Callable[[PcmFrame], None]] = []
        self._stopping: asyncio.Future | None = None
        # Set by the scripted caller once its last line was answered: an agent hanging up then
        # (a phone agent's goodbye) ends the call normally, not with missing evidence.
        self.script_done = False

    async def frames(self) -> AsyncIterator[PcmFrame]:
        while True:
            item = await self._queue.get()
            if item is None:
                break
            yield item
        await self._last_stats()
        self._describe()
        origin = self.clock.origin
        if origin is not None:
            # Where sample 0 is on the machine's clocks: an agent's own log is put on the call
            # clock by them (turnscope.explain).
            self.info.details["clock_origin_monotonic"] = origin
            self.info.details["clock_origin_unix"] = time.time() - (time.monotonic() - origin)

    async def hangup(
        self,
        reason: str = "the caller hung up",
        *,
        degraded: bool = False,
        kind: CallEnd = CallEnd.CALLER_HUNG_UP,
    ) -> None:
        """End the call from our side (idempotent): the transport's goodbye, the end, then
        what the transport must close."""
        await self._say_goodbye()
        self._finish(reason, degraded=degraded, kind=kind)
        await self._close_transport()

    def stop(self, reason: str, kind: CallEnd = CallEnd.INTERRUPTED) -> None:
        """End the call from our side now (a signal, a full disk): what was captured is kept
        and scored, the evidence marked degraded with the reason."""
        if not self._closed:
            self._stopping = asyncio.ensure_future(self.hangup(reason, degraded=True, kind=kind))

    def _agent_hung_up(self, how: str) -> None:
        """The agent ended the call (``how``: what the transport saw)."""
        if self.script_done:
            self._finish(f"the agent hung up after the caller's last line ({how})",
                         degraded=False, kind=CallEnd.AGENT_HUNG_UP_AFTER)  # fmt: skip
        else:
            self._finish(f"the agent hung up before the caller did ({how})", degraded=True,
                         kind=CallEnd.AGENT_HUNG_UP_EARLY)  # fmt: skip

    def _emit(self, frame: PcmFrame) -> None:
        if not self._closed:
            self._queue.put_nowait(frame)
            for listen in self.frame_listeners:
                listen(frame)

    async def _max_duration(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        self._finish(f"the call reached its {seconds:.0f} s limit", degraded=False,
                     kind=CallEnd.TIME_LIMIT)  # fmt: skip

    def _finish(self, reason: str, *, degraded: bool, kind: CallEnd) -> None:
        """End the call (the first reason wins): close the frame queue, resolve ``ended``."""
        if self._closed:
            return
        self._flush()
        self._closed = True
        self.end_reason, self.end_kind = reason, kind
        if degraded:  # the end is the note's code
            self.info.degrade(kind, reason)
        self._queue.put_nowait(None)
        self._release()
        if self.ended is not None and not self.ended.done():
            self.ended.set_result(reason)

    # -- hooks --------------------------------------------------------------------------------

    def _flush(self) -> None:
        """Emit audio still held back, while the queue is open."""

    def _release(self) -> None:
        """Stop what the call runs, before ``ended`` resolves."""

    async def _say_goodbye(self) -> None:
        """Tell the agent the caller hangs up (a phone line's ``stop``), before the end."""

    async def _close_transport(self) -> None:
        """Close the connection once the call has ended from our side."""

    async def _last_stats(self) -> None:
        """Read what the transport counted, once the frames have run out (before
        ``_describe``)."""

    def _describe(self) -> None:
        """Fill ``info`` once the frames have run out."""
