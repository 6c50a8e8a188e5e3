"""Credentials (issue 34): every secret-bearing part of a URL the user gives (userinfo, query
values, percent-encoded or not) and every ``--param`` value is written and printed nowhere, in
any spelling; no header follows a redirect or a WHIP ``Location`` to another origin; an
agent's terminal escape sequences are never printed raw.

The hostile agents are real aiohttp servers on 127.0.0.1 (a thread of their own); the calls
are the real console script, and a full call runs against the reference agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from tests.conftest import ROOT, turnscope_exe
from turnscope import redact
from turnscope.capture.urls import public_url, url_secrets
from turnscope.errors import printable

SHORT = """
name: short
caller: {voice: en-us, timeout_s: 20, hangup_after_ms: 500, reply_timeout_ms: 2000}
script:
  - caller: I would like a refund please.
    at_ms: 300
  - agent: Sure, I can help with that refund today.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""

PASSWORD = "pw-5e1f9a77c0"
QUERY_TOKEN = "tk/4b8+d2=e9 f0"  # written percent-encoded in the URL, echoed decoded
ENCODED_TOKEN = "tk%2F4b8%2Bd2%3De9%20f0"
PARAM_SECRET = "prm-31c7e0d94a"
API_KEY = "key-8d02b6f1aa"
FAKE_PASS = "\x1b[2J\x1b[H\r\nturnscope: verdict: PASS\x1b[1A\x1b[K"


def _spellings() -> list[str]:
    """Each secret of these tests as an agent or a file might hold it."""
    import base64
    import json
    from urllib.parse import quote

    basic = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    forms = [PASSWORD, QUERY_TOKEN, ENCODED_TOKEN, PARAM_SECRET, API_KEY, basic]
    forms += [quote(QUERY_TOKEN, safe=""), json.dumps(QUERY_TOKEN)[1:-1]]
    # as a client or server re-encodes it: yarl leaves "/" bare, a server may write %2f
    forms += ["tk/4b8%2Bd2%3De9%20f0", ENCODED_TOKEN.lower(), "tk/4b8+d2=e9+f0"]
    return forms


def _leaks(text: str) -> list[str]:
    return [s for s in _spellings() if s in text]


def _bundle_leaks(out: Path) -> dict[str, list[str]]:
    found = {}
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_bytes().decode("utf-8", "replace")
            if leaks := _leaks(text):
                found[path.name] = leaks
    return found


@contextlib.contextmanager
def serving(*apps: web.Application) -> Iterator[list[str]]:
    """Serve each app on its own 127.0.0.1 port (its own origin) from a background thread:
    their base URLs."""
    loop = asyncio.new_event_loop()
    runners: list[web.AppRunner] = []

    async def start() -> list[str]:
        bases = []
        for app in apps:
            runner = web.AppRunner(app)
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            runners.append(runner)
            bases.append(f"127.0.0.1:{site._server.sockets[0].getsockname()[1]}")
        return bases

    bases = loop.run_until_complete(start())
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        yield bases
    finally:

        async def stop() -> None:
            for runner in runners:
                await runner.cleanup()

        asyncio.run_coroutine_threadsafe(stop(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)


def _call(url: str, out: Path, scenario: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*turnscope_exe(), "call", url, "--scenario", str(scenario), "-q", "-o", str(out),
         "--header", f"X-Api-Key: {API_KEY}", *extra],
        capture_output=True, text=True, timeout=120, cwd=ROOT,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip


@pytest.fixture
def short(tmp_path: Path) -> Path:
    path = tmp_path / "short.yaml"
    path.write_text(SHORT)
    return path


def _recorder(seen: list[dict[str, Any]]) -> web.Application:
    """Another origin: records every request that reaches it."""

    async def record(request: web.Request) -> web.Response:
        seen.append({"method": request.method, "headers": dict(request.headers)})
        return web.Response(status=404)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    return app


# --- the shared pieces ----------------------------------------------------------------------


def test_every_secret_part_of_a_url_is_found_and_hidden():
    url = f"ws://alice:{PASSWORD}@127.0.0.1:9/ws?token={ENCODED_TOKEN}&lang=en&&bare-item"
    found = url_secrets(url)
    assert {PASSWORD, f"alice:{PASSWORD}", ENCODED_TOKEN, QUERY_TOKEN, "bare-item"} <= set(found)
    shown = public_url(url)
    assert shown == "ws://...@127.0.0.1:9/ws?token=...&lang=...&..."
    assert not _leaks(shown)
    # A name alone in the userinfo is the token; a STUN/TURN URL has no //.
    assert "tok-1234abcd" in url_secrets("https://tok-1234abcd@agent.example/offer")
    assert "turn-pw-99" in url_secrets("turn:bob:turn-pw-99@turn.example:3478?transport=udp")
    assert public_url("http://127.0.0.1:7860/api/offer") == "http://127.0.0.1:7860/api/offer"


def test_registered_url_secrets_are_scrubbed_in_every_spelling_but_short_ones():
    redact.clear()
    try:
        redact.register_url(f"http://alice:{PASSWORD}@h/api/offer?token={ENCODED_TOKEN}&n=on")
        text = " ".join(f for f in _spellings() if f not in (PARAM_SECRET, API_KEY)) + " on"
        scrubbed = redact.scrub(text)
        assert not _leaks(scrubbed) and scrubbed.endswith(" on")  # MIN_LENGTH holds
    finally:
        redact.clear()


def test_printable_escapes_what_would_drive_a_terminal():
    shown = printable(f"bad auth {FAKE_PASS} \u202eevil\u202c" + "x" * 500, 120)
    assert "\x1b" not in shown and "\r" not in shown and "\n" not in shown
    assert "\u202e" not in shown and "\\x1b[2J" in shown and "\\u202e" in shown
    assert len(shown) <= 123 and shown.endswith("...")


# --- WebRTC: an agent that echoes everything back, in a 500 page ---------------------------


def test_webrtc_url_secrets_and_an_echoing_agent_leak_nowhere(tmp_path, short):
    """The offer URL carries a password and a percent-encoded token; the agent's 500 page
    echoes the raw and the decoded query, the Basic header made from the userinfo, the
    X-Api-Key, and terminal escapes faking a PASS."""

    async def echo(request: web.Request) -> web.Response:
        body = (
            f"denied {request.rel_url.raw_query_string} {request.query.get('token')} "
            f"{request.headers.get('Authorization')} {request.headers.get('X-Api-Key')} "
            f"{FAKE_PASS}"
        )
        return web.Response(status=500, text=body)

    app = web.Application()
    app.router.add_post("/api/offer", echo)
    out = tmp_path / "out"
    with serving(app) as (base,):
        url = f"http://alice:{PASSWORD}@{base}/api/offer?token={ENCODED_TOKEN}&mode=full"
        done = _call(url, out, short, "--loopback-only")
    assert done.returncode == 4, done.stderr
    assert "HTTP 500" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert not _leaks(done.stdout + done.stderr), done.stderr
    assert "\x1b" not in done.stderr + done.stdout and "\\x1b[2J" in done.stderr
    assert f"http://...@{base}/api/offer?token=...&mode=..." in done.stderr
    assert (out / "result.json").exists() and _bundle_leaks(out) == {}


# --- a full WebRTC call (WHIP): the bundle, and a session Location on another origin --------


def test_a_whip_call_with_url_secrets_writes_none_and_sends_no_hangup_elsewhere(tmp_path, short):
    """A real call (the reference agent, through a WHIP front that puts the session on another
    origin): no secret in any of the bundle's files or the output, and the hang-up DELETE,
    which would carry X-Api-Key, is not sent to that origin (a warning says so)."""
    import aiohttp

    elsewhere: list[dict[str, Any]] = []
    agent = subprocess.Popen(
        [*turnscope_exe(), "agent", "--port", "0", "--scenario", str(short), "--no-greet"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        line = agent.stdout.readline() if agent.stdout else ""
        assert "reference agent on" in line, line
        agent_base = line.split("reference agent on ", 1)[1].split()[0].rstrip(":")
        other: list[str] = []

        async def front(request: web.Request) -> web.Response:
            async with (
                aiohttp.ClientSession() as s,
                s.post(
                    f"{agent_base}/whip",
                    data=await request.text(),
                    headers={"Content-Type": "application/sdp"},
                ) as resp,
            ):
                answer = await resp.text()
            return web.Response(
                status=201,
                text=answer,
                content_type="application/sdp",
                headers={"Location": f"http://{other[0]}/session/{PASSWORD}"},
            )

        app = web.Application()
        app.router.add_post("/whip", front)
        out = tmp_path / "out"
        with serving(app, _recorder(elsewhere)) as (base, other_base):
            other.append(other_base)
            url = f"http://alice:{PASSWORD}@{base}/whip?token={ENCODED_TOKEN}"
            done = _call(url, out, short, "--loopback-only", "--signaling", "whip")
    finally:
        agent.terminate()
        agent.wait(10)
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "session on another origin" in done.stderr, done.stderr
    assert elsewhere == []  # no DELETE, so no X-Api-Key, reached the other origin
    assert not _leaks(done.stdout + done.stderr), done.stdout + done.stderr
    names = {p.name for p in out.iterdir()}
    assert {"result.json", "raw_provider_trace.json", "report.html"} <= names, names
    assert _bundle_leaks(out) == {}
    assert "...@" in (out / "result.json").read_text()


# --- phone lines: --param values and the URL's token echoed back by the agent ---------------


def test_a_phone_agent_that_echoes_params_and_token_leaks_nothing(tmp_path, short):
    """The agent reads the start's custom parameters and the URL's token and sends them back
    as event names and a mark's name, then hangs up: the degraded bundle and the output hold
    none of them."""

    async def hostile(request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()
        await ws.prepare(request)
        async for msg in ws:
            data = msg.json()
            if data.get("event") == "start":
                echoed = [*data["start"]["customParameters"].values(), request.query["token"]]
                for value in echoed:
                    await ws.send_json({"event": value})
                    await ws.send_json({"event": "mark", "mark": {"name": value}})
                await ws.send_json({"event": FAKE_PASS})
                await ws.close()
                break
        return ws

    app = web.Application()
    app.router.add_get("/ws", hostile)
    out = tmp_path / "out"
    with serving(app) as (base,):
        url = f"ws://{base}/ws?token={ENCODED_TOKEN}"
        done = _call(url, out, short, "--transport", "twilio", "--param", f"auth={PARAM_SECRET}")
    assert done.returncode == 4, done.stdout + done.stderr
    assert "protocol does not have" in done.stderr, done.stderr
    assert not _leaks(done.stdout + done.stderr), done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr
    assert (out / "result.json").exists() and _bundle_leaks(out) == {}


# --- redirects to another origin ------------------------------------------------------------


@pytest.mark.parametrize("transport", ["webrtc", "twilio"])
def test_a_redirect_to_another_origin_is_not_followed(tmp_path, short, transport):
    """An offer (or a websocket upgrade) answered with a 307 to another origin: the call stops
    with one line, and the other origin sees no request at all (aiohttp would have sent it the
    X-Api-Key)."""
    elsewhere: list[dict[str, Any]] = []
    other: list[str] = []

    async def bounce(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect(f"http://{other[0]}/steal")

    app = web.Application()
    app.router.add_route("*", "/agent", bounce)
    out = tmp_path / "out"
    with serving(app, _recorder(elsewhere)) as (base, other_base):
        other.append(other_base)
        scheme = "http" if transport == "webrtc" else "ws"
        extra = ["--loopback-only"] if transport == "webrtc" else ["--transport", transport]
        done = _call(f"{scheme}://{base}/agent?token={ENCODED_TOKEN}", out, short, *extra)
    assert done.returncode == 4, done.stderr
    assert "redirected to another origin" in done.stderr and other_base in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert elsewhere == []
    assert not _leaks(done.stdout + done.stderr) and _bundle_leaks(out) == {}


def test_a_redirect_within_the_agents_origin_is_followed_with_its_headers():
    """The same origin is the same agent: its 307 is followed, the offer and headers re-sent."""
    from aiortc import RTCPeerConnection

    from turnscope.capture.webrtc.signaling import negotiate
    from turnscope.errors import CallSetupError

    seen: list[str | None] = []

    async def bounce(request: web.Request) -> web.Response:
        raise web.HTTPTemporaryRedirect("/api/offer2")

    async def refuse(request: web.Request) -> web.Response:
        seen.append(request.headers.get("X-Api-Key"))
        return web.Response(status=503, text="busy")

    app = web.Application()
    app.router.add_post("/api/offer", bounce)
    app.router.add_post("/api/offer2", refuse)

    async def go(base: str) -> str:
        pc = RTCPeerConnection()
        try:
            await negotiate(pc, f"http://{base}/api/offer", headers={"X-Api-Key": API_KEY})
        except CallSetupError as exc:
            return str(exc)
        finally:
            await pc.close()
        return ""

    with serving(app) as (base,):
        error = asyncio.run(go(base))
    assert "HTTP 503" in error and seen == [API_KEY]


def test_the_whip_hangup_goes_with_its_headers_only_to_the_agents_origin():
    """A session Location on the agent's own origin gets the DELETE with the user's headers;
    one on another origin gets nothing, and the trace says it was skipped."""
    from turnscope.capture.webrtc.signaling import SignalingSession

    own: list[dict[str, Any]] = []
    elsewhere: list[dict[str, Any]] = []
    with serving(_recorder(own), _recorder(elsewhere)) as (base, other_base):
        sessions = [
            SignalingSession("whip", f"http://{base}/whip", "", f"http://{base}/whip/1"),
            SignalingSession(
                "whip", f"http://{base}/whip", "", f"http://{other_base}/s/1", foreign_session=True
            ),
        ]
        for session in sessions:
            asyncio.run(session.hangup({"X-Api-Key": API_KEY}))
    assert [r["method"] for r in own] == ["DELETE"] and own[0]["headers"]["X-Api-Key"] == API_KEY
    assert elsewhere == [] and sessions[1].trace[0]["skipped"]


@pytest.mark.parametrize(
    "args",
    [
        [f"http://alice:{PASSWORD}@127.0.0.1:99999/api/offer?token={ENCODED_TOKEN}"],
        ["http://127.0.0.1:9/api/offer", "--ice-server", f"bogus:alice:{PASSWORD}@x"],
        ["ws://127.0.0.1:9/ws", "--transport", "twilio", "--param", PARAM_SECRET],
    ],
)
def test_bad_input_never_echoes_a_url_secret_or_a_param(cli, args):
    code, out, err = cli(
        "call", *args, "--scenario", str(ROOT / "configs/scenarios/refund-call.yaml")
    )
    assert code == 2 and err.startswith("turnscope: error:"), err
    assert not _leaks(out + err), err


def test_a_short_secret_never_breaks_a_reports_embedded_audio():
    """A 4-letter secret made of base64's letters would match inside report.html's audio by
    chance: the embedded media are left whole, the page's text is scrubbed."""
    from turnscope import redact

    redact.clear()
    try:
        redact.register(["AbCd"])
        payload = "QUJD" * 40 + "AbCd" + "QUJD" * 40
        page = f'<p>key AbCd</p><audio src="data:audio/wav;base64,{payload}"></audio><p>AbCd</p>'
        out = redact.scrub(page)
        assert payload in out and out.count(redact.MASK) == 2
    finally:
        redact.clear()
