"""RTVI on the data channel (pipecat's client protocol): what turnscope says as a client
(``client-ready``, a keepalive ping every second) and the agent's events it hears, each stamped
on the call clock as it arrives.

An agent without RTVI sends nothing, and nothing changes. Messages that are not RTVI are kept
as they are (an agent may report its own outcome, see call.py); RTVI messages that are
malformed, of an unknown type, out of order, or too many are counted and said.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turnscope.capture import tally

LABEL = "rtvi-ai"
PING_S = 1.0  # pipecat's JS client pings every second; once it has, 3 s of silence is a hang-up
MAX_EVENTS = 5000  # an agent flooding the channel: the rest are counted, not kept
MAX_METRIC_S = 3600.0  # a ttfb or processing time past an hour is no measurement
# The events the latency breakdown reads, and pipecat's ttfb-style metrics beside them.
KNOWN = {
    "bot-ready",
    "user-started-speaking",
    "user-stopped-speaking",
    "vad-user-started-speaking",
    "vad-user-stopped-speaking",
    "bot-started-speaking",
    "bot-stopped-speaking",
    "bot-interrupted",
    "bot-llm-started",
    "bot-llm-stopped",
    "bot-tts-started",
    "bot-tts-stopped",
    "bot-output",
    "bot-tts-text",
    "bot-llm-text",
    "user-transcription",
    "bot-transcription",
    "metrics",
    "server-message",
    "error",
    "bot-llm-search-response",
    "user-llm-text",
    "bot-llm-transcription",
}


@dataclass
class Rtvi:
    """One call's RTVI side: send with ``send`` (the data channel's), hear with ``heard``."""

    now_ms: Callable[[], float]
    events: list[dict[str, Any]] = field(default_factory=list)
    malformed: int = 0
    unknown: dict[str, int] = field(default_factory=dict)
    refused: dict[str, int] = field(default_factory=dict)  # data-channel messages not read
    bad_values: int = 0  # metric values that are not finite or out of range, left out
    dropped: int = 0  # past MAX_EVENTS
    out_of_order: list[str] = field(default_factory=list)
    ready_id: str = field(default_factory=lambda: uuid.uuid4().hex[:8])
    bot_ready_ms: float | None = None
    _pinger: asyncio.Task | None = None
    _speaking: bool = False

    def start(self, send: Callable[[str], None]) -> None:
        """The channel is open: say client-ready and keep it alive."""
        message = {
            "label": LABEL,
            "type": "client-ready",
            "id": self.ready_id,
            "data": {
                "version": "2.0.0",
                "about": {"library": "turnscope"},
            },
        }
        with contextlib.suppress(Exception):
            send(json.dumps(message))
        self._pinger = asyncio.ensure_future(self._ping(send))

    async def _ping(self, send: Callable[[str], None]) -> None:
        while True:
            await asyncio.sleep(PING_S)
            try:
                send(f"ping: {round(self.now_ms())}")
            except Exception:  # the channel closed: the call is ending
                return

    def stop(self) -> None:
        if self._pinger is not None:
            self._pinger.cancel()

    def heard(self, data: dict[str, Any], at_ms: float) -> None:
        """An RTVI message (``label`` rtvi-ai) that arrived at ``at_ms`` on the call clock."""
        kind = data.get("type")
        if not isinstance(kind, str) or not kind:
            self.malformed += 1
            return
        if kind not in KNOWN:
            tally.count(self.unknown, kind)
            return
        if kind == "bot-ready" and self.bot_ready_ms is None:
            self.bot_ready_ms = round(at_ms, 1)
        if kind == "bot-started-speaking":
            if self._speaking:
                self.out_of_order.append(f"bot-started-speaking twice at {at_ms / 1000:.1f} s")
            self._speaking = True
        elif kind == "bot-stopped-speaking":
            if not self._speaking:
                self.out_of_order.append(
                    f"bot-stopped-speaking before it started at {at_ms / 1000:.1f} s"
                )
            self._speaking = False
        if len(self.events) >= MAX_EVENTS:
            self.dropped += 1
            return
        event: dict[str, Any] = {"at_ms": round(at_ms, 1), "type": kind}
        payload = data.get("data")
        if kind == "metrics" and isinstance(payload, dict):
            event["data"], bad = _metrics(payload)
            self.bad_values += bad
        self.events.append(event)

    def refuse(self, why: str) -> None:
        """A data-channel message turnscope would not read (too deep, too large, a number that
        does not fit, or one it failed on): counted, the channel goes on (the call's warnings
        say it: it need not have been RTVI)."""
        tally.count(self.refused, why)

    def problems(self) -> list[str]:
        """Why the agent's RTVI events cannot all be trusted (the breakdown says so)."""
        out = []
        if self.malformed:
            out.append(f"{self.malformed} RTVI message(s) without a type")
        if self.unknown:
            out.append(f"RTVI message types turnscope does not know: {tally.summary(self.unknown)}")
        if self.bad_values:
            out.append(
                f"{self.bad_values} RTVI metric value(s) not finite or past {MAX_METRIC_S:.0f} s, "
                "left out"
            )
        if self.dropped:
            out.append(
                f"the agent flooded the data channel: {self.dropped} RTVI events past "
                f"{MAX_EVENTS} not kept"
            )
        if self.out_of_order:
            out.append("RTVI events out of order: " + "; ".join(self.out_of_order[:3]))
        return out

    def record(self) -> dict[str, Any]:
        return {
            "client_ready_id": self.ready_id,
            "bot_ready_ms": self.bot_ready_ms,
            "events": self.events,
            "malformed": self.malformed,
            "unknown": self.unknown,
            "refused": self.refused,
            "bad_values": self.bad_values,
            "dropped": self.dropped,
            "problems": self.problems(),
        }


def _metrics(data: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """pipecat's metrics message, kept small: ttfb / processing per processor, in seconds; and
    how many values were left out as no measurement (not finite, negative, past an hour)."""
    out: dict[str, Any] = {}
    bad = 0
    for key in ("ttfb", "processing"):
        items = data.get(key)
        if isinstance(items, list):
            kept = []
            for i in items[:10]:
                if not isinstance(i, dict):
                    continue
                value = _seconds(i.get("value"))
                if value is None:
                    bad += i.get("value") is not None
                    continue
                kept.append({"processor": str(i.get("processor", ""))[:80], "value": value})
            out[key] = kept
    return out, bad


def _seconds(value: Any) -> float | None:
    """A finite number of seconds within the range a measurement can have, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        seconds = float(value)  # an int too large for a float raises here
    except OverflowError:
        return None
    return seconds if math.isfinite(seconds) and 0 <= seconds <= MAX_METRIC_S else None
