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
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

LABEL = "rtvi-ai"
PING_S = 1.0  # pipecat's JS client pings every second; once it has, 3 s of silence is a hang-up
MAX_EVENTS = 5000  # an agent flooding the channel: the rest are counted, not kept
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
            self.unknown[kind] = self.unknown.get(kind, 0) + 1
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
            event["data"] = _metrics(payload)
        self.events.append(event)

    def problems(self) -> list[str]:
        """Why the agent's RTVI events cannot all be trusted (the breakdown says so)."""
        out = []
        if self.malformed:
            out.append(f"{self.malformed} RTVI message(s) without a type")
        if self.unknown:
            names = ", ".join(f"{k!r} x{v}" for k, v in sorted(self.unknown.items()))
            out.append(f"RTVI message types turnscope does not know: {names}")
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
            "dropped": self.dropped,
            "problems": self.problems(),
        }


def _metrics(data: dict[str, Any]) -> dict[str, Any]:
    """pipecat's metrics message, kept small: ttfb / processing per processor, in seconds."""
    out: dict[str, Any] = {}
    for key in ("ttfb", "processing"):
        items = data.get(key)
        if isinstance(items, list):
            out[key] = [
                {"processor": str(i.get("processor", "")), "value": i.get("value")}
                for i in items[:10]
                if isinstance(i, dict) and isinstance(i.get("value"), (int, float))
            ]
    return out
