"""The reference agent's server: SmallWebRTC (POST /api/offer), WHIP (POST /whip) and a
carrier's media-stream websocket (GET /ws).

Binds 127.0.0.1 only. Every finished call's ground truth (the agent's own send log) is kept in
memory and, when a log path is given, appended to it as one JSON line.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aiohttp import web

from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.phone import PhoneSession
from turnscope.actors.agent.session import AgentSession
from turnscope.capture.webrtc.signaling import use_loopback_only
from turnscope.jsonio import loads

HOST = "127.0.0.1"


@dataclass
class AgentServer:
    """The reference agent's web server; ``start()`` returns the base URL."""

    behaviour: AgentBehaviour
    port: int = 0
    truth_log: Path | None = None
    loopback_only: bool = True
    dialect: str | None = None  # phone calls on /ws: only this dialect (None: any)
    sessions: dict[str, AgentSession | PhoneSession] = field(default_factory=dict)
    finished: list[dict[str, Any]] = field(default_factory=list)
    _runner: web.AppRunner | None = None
    _site: web.TCPSite | None = None

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/api/offer", self._smallwebrtc)
        app.router.add_post("/whip", self._whip)
        app.router.add_delete("/whip/{pc_id}", self._whip_delete)
        app.router.add_get("/ws", self._phone)
        app.router.add_get("/healthz", self._health)
        return app

    async def start(self) -> str:
        if self.loopback_only:
            use_loopback_only()
        self._runner = web.AppRunner(self.app(), access_log=None)
        await self._runner.setup()
        self._site = web.TCPSite(self._runner, HOST, self.port)
        await self._site.start()
        sockets = self._site._server.sockets  # type: ignore[union-attr]
        self.port = sockets[0].getsockname()[1]
        return self.base_url

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    async def stop(self) -> None:
        for session in list(self.sessions.values()):
            await session.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def wait_finished(self, count: int = 1, timeout: float = 10.0) -> list[dict[str, Any]]:
        """Wait until ``count`` calls have ended (their truth is then complete)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while len(self.finished) < count and loop.time() < deadline:
            await asyncio.sleep(0.05)
        return self.finished

    def _session(self) -> tuple[str, AgentSession]:
        pc_id = uuid.uuid4().hex
        session = AgentSession(self.behaviour, on_end=lambda s: self._ended(pc_id, s))
        self.sessions[pc_id] = session
        return pc_id, session

    def _ended(self, pc_id: str, session: AgentSession | PhoneSession) -> None:
        self.sessions.pop(pc_id, None)
        truth = {"pc_id": pc_id, **session.truth()}
        self.finished.append(truth)
        if self.truth_log is not None:
            self.truth_log.parent.mkdir(parents=True, exist_ok=True)
            with self.truth_log.open("a", encoding="utf-8") as fh:
                fh.write(json.dumps(truth) + "\n")

    async def _smallwebrtc(self, request: web.Request) -> web.Response:
        try:
            body = loads(await request.text())  # aiohttp caps the body at 1 MiB
            offer = str(body["sdp"])
        except (ValueError, KeyError, TypeError):
            return web.json_response({"error": "expected JSON {sdp, type: offer}"}, status=400)
        pc_id, session = self._session()
        try:
            answer = await session.answer(offer)
        except Exception as exc:
            await session.close()
            return web.json_response({"error": f"bad offer: {exc}"}, status=400)
        return web.json_response({"sdp": answer, "type": "answer", "pc_id": pc_id})

    async def _whip(self, request: web.Request) -> web.Response:
        if request.content_type != "application/sdp":
            return web.Response(status=415, text="WHIP offers are application/sdp")
        offer = await request.text()
        pc_id, session = self._session()
        try:
            answer = await session.answer(offer)
        except Exception as exc:
            await session.close()
            return web.Response(status=400, text=f"bad offer: {exc}")
        return web.Response(
            status=201,
            text=answer,
            content_type="application/sdp",
            headers={"Location": f"/whip/{pc_id}"},
        )

    async def _whip_delete(self, request: web.Request) -> web.Response:
        session = self.sessions.get(request.match_info["pc_id"])
        if session is None:
            return web.Response(status=404)
        await session.close()
        return web.Response(status=200)

    async def _phone(self, request: web.Request) -> web.StreamResponse:
        """A carrier's media-stream websocket (Twilio, Telnyx, Plivo or Exotel messages)."""
        pc_id = uuid.uuid4().hex
        session = PhoneSession(
            self.behaviour, on_end=lambda s: self._ended(pc_id, s), expect=self.dialect
        )
        self.sessions[pc_id] = session
        return await session.serve(request)

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"ok": True, "calls": len(self.sessions)})
