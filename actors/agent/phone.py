"""The reference agent on a phone line: one carrier websocket call (any dialect, told by its
``start``), the agent's behaviour (AgentCore) between the caller's media and its own.

It speaks the way a phone agent does: 20 ms media messages while it talks and nothing between,
a ``mark`` after each prompt, and a ``clear`` when it yields to a barge-in (the carrier then
drops whatever it still had queued). The ground truth is when each prompt's audio went out.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
from collections.abc import Callable
from typing import Any

import numpy as np
from aiohttp import WSMsgType, web

from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.core import AgentCore
from turnscope.actors.agent.prompts import Prompts
from turnscope.asr.settings import Settings, load_settings
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import CALLER, SAMPLE_RATE, PcmFrame
from turnscope.capture.player import ClipPlayer, ClipQueue, SendRecord
from turnscope.capture.telephony.codec import LINE_RATE, Codec
from turnscope.capture.telephony.dialects import CallIds, Dialect, detect, start_ids
from turnscope.capture.telephony.line import FRAME, STEP, Upsampler, to_line
from turnscope.capture.telephony.playout import JITTER, plays_from
from turnscope.jsonio import loads

TICK_S = FRAME / LINE_RATE
JITTER_S = JITTER / LINE_RATE
START_TIMEOUT_S = 10.0  # a carrier sends start at once; a socket without one is not a call


class PhoneVoice(ClipPlayer):
    """The agent's outgoing line: prompts as 20 ms media messages on its clock, sent only
    while a prompt plays; a mark after each prompt, a clear when one is cut short."""

    lead_ms = 0.0

    def __init__(
        self,
        clock: CallClock,
        dialect: Dialect,
        ids: CallIds,
        send: Callable[[dict[str, Any]], Any],
        drop: Callable[[int], bool] | None = None,
        prompts: Prompts | None = None,
    ) -> None:
        self.clock = clock
        self.prompts = prompts or Prompts()  # the agent's: which prompt a clip that ended is
        self.dialect = dialect
        self.codec: Codec = dialect.codec
        self.ids = ids
        self.send = send
        self.drop = drop
        self.clips = ClipQueue(FRAME, LINE_RATE)
        self.max_lag_ms = 0.0
        self.sent = 0
        self._stopped = False
        self._told = 0  # prompts whose end was told to the carrier (a mark, a clear)
        self._cursor = 0.0  # when the carrier will have played all that was sent (loop time)
        self.played: dict[int, list[float | None]] = {}  # log index -> [start, end] at playout
        self._task: asyncio.Task | None = None

    def _clip(self, audio: np.ndarray) -> np.ndarray:
        return to_line(audio, self.codec)

    def stop(self) -> None:
        """Stop speaking for good (the agent went silent or the call ended)."""
        self._stopped = True
        self.clips.silence()

    def start(self) -> None:
        self._task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        origin = self.clock.start()
        k = max(0, round((loop.time() - origin) / TICK_S))
        while not self._stopped:
            wait = origin + k * TICK_S - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            self.max_lag_ms = max(self.max_lag_ms, -wait * 1000)
            before = self.clips.current
            logged = len(self.clips.log)
            pos = k * FRAME * STEP
            pcm = self.clips.next_frame(pos, loop.time())
            if before is not None or len(self.clips.log) > logged:
                if self.drop is None or not self.drop(self.sent):
                    payload = base64.b64encode(self.codec.encode(pcm)).decode("ascii")
                    await self.send(self.dialect.agent_media(self.ids, payload))
                    self._heard_at(max(0, logged - 1), pos, loop.time())
                self.sent += 1
            log = self.clips.log
            while self._told < len(log) and log[self._told].end is not None:
                await self._ended(log[self._told])
                self._told += 1
            k += 1

    def _heard_at(self, first: int, pos: int, sent: float) -> None:
        """When the carrier plays the frame just sent (the carrier's own rule), and so the
        prompt edges in it."""
        play = plays_from(sent, self._cursor or None, JITTER_S)
        self._cursor = play + TICK_S
        span = FRAME * STEP
        for i in range(first, len(self.clips.log)):
            rec = self.clips.log[i]
            edges = self.played.setdefault(i, [None, None])
            if edges[0] is None and pos <= rec.start < pos + span:
                edges[0] = play + (rec.start - pos) / SAMPLE_RATE
            if rec.end is not None and edges[1] is None and pos < rec.end <= pos + span:
                edges[1] = play + (rec.end - pos) / SAMPLE_RATE

    async def _ended(self, rec: SendRecord) -> None:
        if rec.stopped_early:
            # The carrier stops playing where the clear arrives (about now, on loopback).
            now = asyncio.get_running_loop().time()
            edges = self.played.get(self.clips.log.index(rec))
            if edges is not None and edges[1] is not None and edges[1] > now:
                edges[1] = now
            self._cursor = min(self._cursor, now)
            await self.send(self.dialect.agent_clear(self.ids))
        prompt = self.prompts.of(rec)
        if prompt is not None:
            await self.send(self.dialect.agent_mark(self.ids, prompt.mark))

    async def close(self) -> None:
        self.stop()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


class PhoneSession:
    """One carrier websocket call with the reference agent."""

    def __init__(
        self,
        behaviour: AgentBehaviour,
        settings: Settings | None = None,
        on_end: Callable[[PhoneSession], None] | None = None,
        expect: str | None = None,
    ) -> None:
        self.behaviour = behaviour
        base = settings or load_settings()
        self.settings = base.with_overrides({"vad": {"end_of_turn_ms": behaviour.end_of_turn_ms}})
        self.clock = CallClock()
        self.on_end = on_end
        self.expect = expect
        self.ws: web.WebSocketResponse | None = None
        self.dialect: Dialect | None = None
        self.ids: CallIds | None = None
        self.params: dict[str, Any] = {}
        self.core: AgentCore | None = None
        self.voice: PhoneVoice | None = None
        self.received = 0
        self.problems: list[str] = []
        self.end_reason: str | None = None
        self.closed = False
        self._heard = 0
        self._up = Upsampler()

    async def serve(self, request: web.Request) -> web.WebSocketResponse:
        """Accept the websocket and run the call until either side ends it."""
        ws = web.WebSocketResponse(heartbeat=5.0, max_msg_size=0)
        self.ws = ws
        await ws.prepare(request)
        try:
            if await self._await_start():
                await self._run()
        finally:
            await self.close(self.end_reason or "the carrier closed the websocket")
        return ws

    async def _send(self, message: dict[str, Any]) -> None:
        ws = self.ws
        if ws is not None and not ws.closed:
            with contextlib.suppress(ConnectionError, RuntimeError):
                await ws.send_str(json.dumps(message))

    async def _await_start(self) -> bool:
        assert self.ws is not None
        with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
            async with asyncio.timeout(START_TIMEOUT_S):
                async for msg in self.ws:
                    if msg.type != WSMsgType.TEXT:
                        continue
                    data = _json(msg.data)
                    if data is None or data.get("event") != "start":
                        continue
                    found = detect(data)
                    if found is None or (self.expect and found.name != self.expect):
                        self.end_reason = (
                            f"a start message that is not {self.expect or 'a known dialect'}"
                        )
                        await self.ws.close(code=1008, message=b"unexpected start")
                        return False
                    self.dialect = found
                    self.ids, self.params = start_ids(data)
                    return True
        self.end_reason = self.end_reason or "no start message"
        return False

    async def _run(self) -> None:
        assert self.ws is not None and self.dialect is not None and self.ids is not None
        b = self.behaviour
        drop = (lambda i: (i + 1) % b.drop_every == 0) if b.drop_every else None
        prompts = Prompts()
        self.voice = PhoneVoice(self.clock, self.dialect, self.ids, self._send, drop, prompts)
        self.core = AgentCore(b, self.settings, self.clock, self.voice, self._hang_up, prompts)
        await self.core.prepare()
        async for msg in self.ws:
            if msg.type != WSMsgType.TEXT:
                continue
            data = _json(msg.data)
            if data is None:
                self.problems.append("not JSON")
                continue
            m = self.dialect.parse_carrier(data)
            if m.kind == "media":
                self._on_media(m.payload)
            elif m.kind == "dtmf" and self.received:
                self.core.keypress(m.digit, self.clock.now_ms())
            elif m.kind == "mark":
                self._log_event("mark_played", name=m.name)
            elif m.kind == "stop":
                self.end_reason = "the carrier sent stop"
                break

    def _on_media(self, payload: str | None) -> None:
        assert self.core is not None and self.voice is not None and self.dialect is not None
        try:
            raw = base64.b64decode(payload or "", validate=True)
        except (binascii.Error, ValueError):
            self.problems.append("bad base64")
            return
        if self.received == 0:
            self.clock.start()  # sample 0: the first media, as on the caller's side
            self.core.start()
            self.voice.start()
        self.received += 1
        pcm = self._up.push(self.dialect.codec.decode(raw))
        if len(pcm):
            self.core.hear(PcmFrame(CALLER, self._heard, pcm))
            self._heard += len(pcm)

    def _log_event(self, kind: str, **fields: Any) -> None:
        at = self.clock.now_ms() if self.clock.origin is not None else 0.0
        if self.core is not None:
            self.core.events.append({"event": kind, "at_ms": round(at, 1), **fields})

    async def _hang_up(self) -> None:
        self.end_reason = "the agent hung up (hangup_after_s)"
        if self.ws is not None:
            await self.ws.close()

    def truth(self) -> dict[str, Any]:
        """The agent's own log (see AgentCore.truth), with the line's dialect and ids."""
        core = self.core.truth(received_frames=self.received) if self.core else {"utterances": []}
        played = self.voice.played if self.voice else {}
        for i, u in enumerate(core["utterances"]):
            # When the caller hears it: the carrier's playout of what was sent (loop time).
            u["start_played_monotonic"], u["end_played_monotonic"] = played.get(i, [None, None])
        return {
            **core,
            "transport": "telephony",
            "dialect": self.dialect.name if self.dialect else None,
            "codec": self.dialect.codec.name if self.dialect else None,
            "stream_id": self.ids.stream if self.ids else None,
            "custom_parameters": self.params,
            "media_sent": self.voice.sent if self.voice else 0,
            "end_reason": self.end_reason,
            "problems": self.problems[:20],
        }

    async def close(self, reason: str = "closed") -> None:
        if self.closed:
            return
        self.closed = True
        self.end_reason = self.end_reason or reason
        if self.core is not None:
            self.core.close()
        if self.voice is not None:
            await self.voice.close()
        if self.ws is not None and not self.ws.closed:
            with contextlib.suppress(Exception):
                await self.ws.close()
        if self.on_end is not None:
            self.on_end(self)


def _json(text: str) -> dict[str, Any] | None:
    try:
        data = loads(text)  # the carrier's side is untrusted too: within jsonio's limits
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
