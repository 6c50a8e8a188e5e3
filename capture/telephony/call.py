"""A phone-line call as a pipeline source: turnscope plays the carrier on the agent's
media-stream websocket (Twilio Media Streams and the Telnyx, Plivo and Exotel dialects).

One clock: sample 0 is the first media message. The caller's speech goes out through the
line's codec, one 20 ms message per 20 ms of the call clock; the caller channel is what went
out (the codec's quantisation included). The agent channel is what the carrier plays to the
caller: its audio is queued as it arrives and played at 8 kHz from there (playout.py), so a
``clear`` is heard where it arrived. Arrival times stay in the trace.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import numpy as np
from aiohttp import WSCloseCode

from turnscope.capture.call_source import CallEnd, CallSource
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import AGENT, CALLER, PcmFrame
from turnscope.capture.player import MAX_LATE_REPORTED, count_late, sent_too_late
from turnscope.capture.redirects import same_origin_only
from turnscope.capture.source import SourceInfo, SourceNote
from turnscope.capture.telephony.codec import LINE_RATE, CodecName
from turnscope.capture.telephony.dialects import CallIds, DialectName, dialect
from turnscope.capture.telephony.inbound import Inbound
from turnscope.capture.telephony.line import FRAME, STEP, LinePlayer, Upsampler
from turnscope.capture.urls import public_url
from turnscope.errors import CallSetupError, SetupFailure, printable
from turnscope.jsonio import MESSAGE_LIMITS

TELEPHONY_TIMING = (
    "caller: send time of each 20 ms media message on the call clock; agent: the carrier's "
    "playout (queued on arrival, played at 8 kHz; a clear cuts it where it arrived; audio read "
    "after turnscope's own loop was held up is placed as if read in time)"
)
TICK_S = FRAME / LINE_RATE
# Turnscope's own loop this late is held up (the playout's jitter allowance, 10 ms): the agent's
# audio read after it is placed as if read in time (playout.Playout.push).
HELD_S = 0.010
# How long the pace waits, once it wakes that late, for the receive task to read what arrived
# meanwhile before it plays the playout on past where the hold began.
READ_FIRST_S = 0.002


@dataclass
class TelephonyOptions:
    """How to reach the agent's media-stream websocket, and what the carrier says."""

    url: str
    dialect: DialectName = "twilio"
    codec: CodecName | None = None  # Telnyx only: mulaw (default) or alaw
    params: dict[str, str] = field(default_factory=dict)  # start's custom parameters
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # never written out
    connect_timeout_s: float = 10.0
    ping_s: float = 5.0  # websocket pings: an agent that stops answering has died
    max_duration_s: float = 300.0
    dtmf_duration_ms: int = 100

    @property
    def transport(self) -> str:
        return self.dialect


class TelephonyCall(CallSource):
    """Places the call on the agent's websocket and yields both channels as PcmFrames."""

    def __init__(self, options: TelephonyOptions) -> None:
        super().__init__()
        self.options = options
        self.dialect = dialect(options.dialect, options.codec)
        self.codec = self.dialect.codec
        self.clock = CallClock()
        self.info = SourceInfo(
            transport="telephony",
            timing_evidence=TELEPHONY_TIMING,
            description=f"phone-line call to {public_url(options.url)} ({options.dialect})",
            realtime=True,
            generated=(CALLER,),
        )
        self.caller_track = LinePlayer(self.codec)
        self.ids = CallIds(*(f"{p}{uuid.uuid4().hex[:30]}" for p in ("MZ", "CA", "AC")))
        self.inbound = Inbound(self.dialect)
        self.playout = self.inbound.playout
        self.log = self.inbound.log
        self._session: aiohttp.ClientSession | None = None
        self._ws: aiohttp.ClientWebSocketResponse | None = None
        self._tasks: list[asyncio.Task] = []
        self._pending: set[asyncio.Task] = set()
        self._seq = 1
        self._chunk = 0
        self._caller_up = Upsampler()
        self._agent_up = Upsampler()
        self._caller_at = 0  # call-clock samples emitted per channel
        self._agent_at = 0
        self._agent_closed: str | None = None  # how the agent's side ended, once it has
        self._agent_died = False  # ... by no longer answering pings (not a hang-up)
        self._died_as = CallEnd.AGENT_UNRESPONSIVE
        self._hanging_up = False
        self.connect_ms: float | None = None
        self._worst_lag_at_ms: float | None = None
        self._next_due = (float("inf"), 0)  # (loop time, line sample) of the pace's next frame
        self.dtmf_sent: list[dict[str, Any]] = []

    # -- set-up ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the websocket and send what a carrier sends first; CallSetupError on failure."""
        loop = asyncio.get_running_loop()
        self.ended = loop.create_future()
        url = public_url(self.options.url)
        timeout = self.options.connect_timeout_s
        # No redirect to another origin: the upgrade request carries the user's headers.
        self._session = aiohttp.ClientSession(trace_configs=[same_origin_only()])
        t0 = loop.time()
        try:
            self._ws = await asyncio.wait_for(
                self._session.ws_connect(
                    self.options.url,
                    headers=self.options.headers,
                    heartbeat=self.options.ping_s,
                    # Past the parser's own limit a message is refused anyway: do not let
                    # aiohttp read a huge one whole first (it then ends the call, said so).
                    max_msg_size=MESSAGE_LIMITS.size,
                ),
                timeout,
            )
        except (asyncio.TimeoutError, TimeoutError):
            await self._close_session()
            raise CallSetupError(
                f"no websocket connection to {url} within {timeout:g} s", SetupFailure.TIMEOUT
            ) from None
        except aiohttp.WSServerHandshakeError as exc:
            await self._close_session()
            raise CallSetupError(
                f"the agent at {url} refused the websocket upgrade: HTTP {exc.status}"
                + (" (check --header / the URL's token)" if exc.status in (401, 403) else ""),
                SetupFailure.REFUSED,
            ) from None
        except (aiohttp.ClientError, OSError) as exc:
            await self._close_session()
            why = getattr(exc, "strerror", None) or printable(str(exc)) or type(exc).__name__
            raise CallSetupError(
                f"cannot connect to {url}: {why}", SetupFailure.UNREACHABLE
            ) from None
        except asyncio.CancelledError:
            await self._close_session()
            raise
        self.connect_ms = (loop.time() - t0) * 1000
        try:
            for message in self.dialect.opening(self.ids, self.options.params):
                await self._ws.send_str(json.dumps(message))
        except (aiohttp.ClientError, ConnectionError, RuntimeError) as exc:
            await self._close_session()
            raise CallSetupError(
                f"the agent at {url} closed the websocket at once: {printable(str(exc))}",
                SetupFailure.CLOSED_AT_ONCE,
            ) from None
        self.clock.start()
        self._tasks = [
            asyncio.ensure_future(self._pace()),
            asyncio.ensure_future(self._receive()),
            asyncio.ensure_future(self._max_duration(self.options.max_duration_s)),
        ]

    async def _close_session(self) -> None:
        if self._ws is not None:
            with contextlib.suppress(Exception):
                await self._ws.close()
        if self._session is not None:
            await self._session.close()

    # -- sending: the caller's line, paced on the call clock -----------------------------------

    async def _send(self, message: dict[str, Any]) -> bool:
        ws = self._ws
        if ws is None or ws.closed or self._agent_closed:
            return False
        try:
            await ws.send_str(json.dumps(message))
        except (aiohttp.ClientError, ConnectionError, RuntimeError):
            return False
        return True

    def _next_seq(self) -> int:
        self._seq += 1
        return self._seq

    async def _pace(self) -> None:
        loop = asyncio.get_running_loop()
        origin = self.clock.start()
        track = self.caller_track
        k = 0
        while not self._closed:
            due = origin + k * TICK_S
            self._next_due = (due, k * FRAME)
            wait = due - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            if self._closed:
                return
            now = loop.time()
            lag_ms = max(0.0, -wait * 1000)
            held = self.playout.held_since
            if wait > 0 and (held is None or held < k * FRAME):
                # It had to wait for this frame: caught up (not just less late), its sockets
                # read while it waited. A hold-up now is this frame's own, not an older one
                # kept by a loop late on every frame (which froze the agent's channel); one
                # the receive task noticed first (_on_text) is this frame's already.
                self.playout.resume()
            if now - due > HELD_S and self.playout.held_since is None:
                self.playout.hold(k * FRAME)
                await asyncio.sleep(READ_FIRST_S)
                if self._closed:
                    return
                now = loop.time()
            if lag_ms > track.max_lag_ms:
                track.max_lag_ms, self._worst_lag_at_ms = lag_ms, k * TICK_S * 1000
            count_late(track, k * TICK_S * 1000, lag_ms)
            line = track.frame(k * FRAME * STEP, now)
            if not self._agent_closed:
                payload = base64.b64encode(self.codec.encode(line)).decode("ascii")
                self._chunk += 1
                msg = self.dialect.media(self._next_seq(), self.ids, self._chunk, k * 20, payload)
                await self._send(msg)
            self._place(CALLER, self._caller_up.push(line), now)
            # What has played by now (not ahead: arrivals place). While held up, not past the
            # audio queued nor where the hold-up began: what the agent sent meanwhile may
            # still be unread (playout.push).
            held = self.playout.held_since
            until = k * FRAME if held is None else min(k * FRAME, max(self.playout.end, held))
            self._play_to(until, now)
            if self._agent_closed and not self.playout.queue:
                if self._agent_died:
                    self._finish(self._agent_closed, degraded=True, kind=self._died_as)
                else:
                    self._agent_hung_up(self._agent_closed)
                return
            k += 1

    def _place(self, channel: str, pcm: np.ndarray, now: float) -> None:
        if len(pcm) == 0:
            return
        if channel == CALLER:
            start, self._caller_at = self._caller_at, self._caller_at + len(pcm)
        else:
            start, self._agent_at = self._agent_at, self._agent_at + len(pcm)
        self._emit(PcmFrame(channel, start, pcm, received_at=now))

    def _play_to(self, line_pos: int, now: float) -> None:
        """What the carrier played of the agent up to ``line_pos``; marks that came due."""
        self._place(AGENT, self._agent_up.push(self.playout.render(line_pos)), now)
        for name in self.playout.due_marks():
            self._later(self._echo(name))

    async def _echo(self, name: str) -> None:
        at_ms = self.clock.now_ms()
        if await self._send(self.dialect.played(self._next_seq(), self.ids, name)):
            self.log.marks_echoed.append({"name": name, "at_ms": round(at_ms, 1)})

    async def send_dtmf(self, digits: str, gap_ms: int) -> list[dict[str, Any]]:
        """Press ``digits`` on the caller's keypad: one dtmf event each, ``gap_ms`` apart."""
        sent = []
        for i, digit in enumerate(digits):
            if i:
                await asyncio.sleep(gap_ms / 1000)
            at_ms = self.clock.now_ms()
            msg = self.dialect.dtmf(
                self._next_seq(), self.ids, digit, self.options.dtmf_duration_ms
            )
            ok = await self._send(msg)
            event = {"type": "dtmf", "channel": CALLER, "digit": digit, "at_ms": round(at_ms, 1)}
            if ok:
                self.info.events.append(event)
            sent.append({**event, "sent": ok})
        self.dtmf_sent.extend(sent)
        return sent

    # -- receiving: the agent's messages ------------------------------------------------------

    async def _receive(self) -> None:
        ws = self._ws
        assert ws is not None
        async for msg in ws:
            if msg.type == aiohttp.WSMsgType.TEXT:
                self._on_text(msg.data)
            elif msg.type == aiohttp.WSMsgType.BINARY:
                self.inbound.not_json(self.clock.now_ms())
            elif msg.type == aiohttp.WSMsgType.ERROR:
                break
        if self._closed or self._hanging_up:
            return
        # What is queued still plays out; then the call ends.
        exc = ws.exception()
        dead = isinstance(exc, (asyncio.TimeoutError, TimeoutError))
        too_big = ws.close_code == WSCloseCode.MESSAGE_TOO_BIG or (
            isinstance(exc, aiohttp.WebSocketError) and exc.code == WSCloseCode.MESSAGE_TOO_BIG
        )
        self._agent_died = dead or too_big  # the call ended on the agent's fault, not a hang-up
        self._died_as = CallEnd.AGENT_UNRESPONSIVE if dead else CallEnd.AGENT_OVERSIZED
        if dead:
            self._agent_closed = "the agent stopped answering websocket pings (it hung or died)"
        elif too_big:
            self._agent_closed = (
                f"the agent sent a message over {MESSAGE_LIMITS.size // 1024 // 1024} MiB: not "
                "read, the call was ended there"
            )
        else:
            self._agent_closed = f"it closed the websocket, code {ws.close_code}"

    def _later(self, work: Any) -> None:
        task = asyncio.ensure_future(work)
        self._pending.add(task)
        task.add_done_callback(self._pending.discard)

    def _on_text(self, text: str) -> None:
        now = asyncio.get_running_loop().time()
        due, at = self._next_due
        if now - due > HELD_S:  # read before the pace woke from the same hold-up
            self.playout.hold(at)
        at_ms = self.clock.to_ms(now)
        for name in self.inbound.on_text(text, max(0, round(at_ms * LINE_RATE / 1000)), at_ms, now):
            self._later(self._echo(name))
        if self.inbound.cleared:
            self.inbound.cleared = False
            reply = self.dialect.cleared(self._next_seq(), self.ids)
            if reply is not None:
                self._later(self._send(reply))

    # -- ending -------------------------------------------------------------------------------

    async def _say_goodbye(self) -> None:
        """The carrier's ``stop``, once."""
        if not self._closed and not self._hanging_up:
            self._hanging_up = True
            await self._send(self.dialect.stop(self._next_seq(), self.ids))

    async def _close_transport(self) -> None:
        await self._close()

    def _flush(self) -> None:
        if self.clock.origin is None:
            return
        now = asyncio.get_running_loop().time()
        pos = max(self.playout.rendered, round(self.clock.to_ms(now) * LINE_RATE / 1000))
        self._play_to(pos, now)
        self._place(CALLER, self._caller_up.flush(), now)
        self._place(AGENT, self._agent_up.flush(), now)

    def _release(self) -> None:
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
        if not self._hanging_up:
            self._later(self._close())

    async def _close(self) -> None:
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
        await self._close_session()

    def _describe(self) -> None:
        log, p = self.log, self.playout
        info = self.info
        info.duration_ms = self.clock.now_ms() if self.clock.origin is not None else None
        info.notes += self.inbound.problems().notes
        lag = self.caller_track.max_lag_ms
        late = sent_too_late(lag)
        if late is not None:
            info.degrade(SourceNote.CALLER_AUDIO_LATE, late)
        info.details.update(
            {
                "url": public_url(self.options.url),
                "dialect": self.dialect.name,
                "codec": self.codec.name,
                "header_names": sorted(self.options.headers),  # values are secrets
                "custom_parameter_names": sorted(self.options.params),
                "ids": {"stream": self.ids.stream, "call": self.ids.call},
                "connect_ms": None if self.connect_ms is None else round(self.connect_ms, 1),
                "caller_media_sent": self._chunk,
                "caller_max_send_lag_ms": round(lag, 1),
                "caller_max_send_lag_at_ms": self._worst_lag_at_ms,
                "caller_late_frames": self.caller_track.late_frames,
                # When the harness itself ran late (call ms, ms late): a boundary measured then
                # is off by up to that much.
                "caller_late_at": self.caller_track.late_at[:MAX_LATE_REPORTED],
                "agent_media": log.media,
                "agent_audio_ms": round(log.samples * 1000 / LINE_RATE, 1),
                "agent_played_ms": round(p.played * 1000 / LINE_RATE, 1),
                "playout_max_depth_ms": round(p.max_depth * 1000 / LINE_RATE, 1),
                "playout_underruns": p.underruns,
                "clears": log.clears,
                "marks_received": log.marks,
                "marks_echoed": log.marks_echoed,
                "dtmf": self.dtmf_sent,
                "unknown_events": log.unknown,
                "not_json": log.not_json,
                "refused": log.refused,
                "bad_base64": log.bad_base64,
                "bad_payloads": log.bad_payloads,
                "agent_trace": log.traced(),
                "end_reason": self.end_reason,
            }
        )
