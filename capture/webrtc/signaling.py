"""Offer/answer exchange with a voice agent: SmallWebRTC (pipecat's JSON) or WHIP (RFC 9725).

Also the ICE configuration: no STUN/TURN server unless one is given (aiortc would otherwise use a
public STUN server), and an explicit loopback-only mode for local agents and tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import unquote, urljoin

import aiohttp
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription

from turnscope.capture.redirects import CrossOriginRedirect, other_origin, same_origin_only
from turnscope.capture.urls import public_url
from turnscope.errors import CallSetupError, ParseError, ParseProblem, SetupFailure, printable
from turnscope.jsonio import loads

Signaling = Literal["smallwebrtc", "whip"]
MAX_ANSWER_BYTES = 1024 * 1024  # an offer's answer larger than this is refused


_loopback_installed = False


def use_loopback_only() -> None:
    """Keep every ICE host candidate of this process on 127.0.0.1.

    aioice has no option for it and never offers 127.0.0.1 itself; it looks the host addresses
    up through ``aioice.ice.get_host_addresses`` at gathering time, so replacing that function
    (process-wide, once, before any call) is the one supported seam. Both peers of an in-process
    call are covered.
    """
    global _loopback_installed
    if _loopback_installed:
        return
    import aioice.ice

    aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: ["127.0.0.1"]
    _loopback_installed = True


def rtc_configuration(ice_servers: list[str] | None = None) -> RTCConfiguration:
    """ICE servers only when the user configured some: nothing leaves the machine by default."""
    return RTCConfiguration(iceServers=[ice_server(u) for u in ice_servers or []])


def ice_server(url: str) -> RTCIceServer:
    """One ``--ice-server`` URL as aiortc takes it: a ``user:pass@`` in it (how a TURN server's
    credentials are usually written) becomes its username and credential (aiortc's own URL
    parser refuses userinfo)."""
    scheme, _, rest = url.partition(":")
    userinfo, at, where = rest.rpartition("@")
    if not at:
        return RTCIceServer(urls=f"{scheme.lower()}:{rest}")
    user, _, password = userinfo.partition(":")
    return RTCIceServer(
        urls=f"{scheme.lower()}:{where}", username=unquote(user), credential=unquote(password)
    )


@dataclass
class SignalingSession:
    """What the remote side told us, and how to hang up."""

    mode: Signaling
    url: str
    answer_sdp: str
    session_url: str | None = None  # WHIP resource (Location)
    foreign_session: bool = False  # ... on another origin: the hang-up is not sent there
    pc_id: str | None = None  # SmallWebRTC peer connection id
    status: int = 0
    trace: list[dict[str, Any]] = field(default_factory=list)

    async def hangup(self, headers: Mapping[str, str], timeout: float = 5.0) -> None:
        """WHIP: DELETE the session resource. SmallWebRTC has no hang-up request. Not on
        another origin: it would carry the user's headers there."""
        if self.mode != "whip" or not self.session_url:
            return
        if self.foreign_session:
            self.trace.append({"request": "DELETE", "skipped": "the session is on another origin"})
            return
        try:
            client = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=timeout), trace_configs=[same_origin_only()]
            )
            async with client as s, s.delete(self.session_url, headers=dict(headers)) as resp:
                self.trace.append({"request": "DELETE", "status": resp.status})
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            self.trace.append({"request": "DELETE", "error": f"{type(exc).__name__}: {exc}"})


async def _body(resp: aiohttp.ClientResponse, shown: str) -> str:
    """The answer's body, read up to MAX_ANSWER_BYTES: a larger one is refused, never read
    whole (an SDP answer is a few KiB)."""
    too_large = CallSetupError(
        f"the agent at {shown} answered more than {MAX_ANSWER_BYTES // 1024} KiB: not an SDP "
        "answer (refused, not read)",
        SetupFailure.BAD_ANSWER,
    )
    if (resp.content_length or 0) > MAX_ANSWER_BYTES:
        raise too_large
    body = bytearray()
    async for chunk in resp.content.iter_any():
        body += chunk
        if len(body) > MAX_ANSWER_BYTES:
            raise too_large
    return body.decode("utf-8", "replace")  # SDP is ASCII, SmallWebRTC's JSON UTF-8


def _short(text: str, n: int = 160) -> str:
    """The agent's text as an error line may quote it: short, no control characters."""
    return printable(text, n)


async def negotiate(
    pc: RTCPeerConnection,
    url: str,
    *,
    mode: Signaling = "smallwebrtc",
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
) -> SignalingSession:
    """Create the offer (gathering all candidates, no trickle), send it, apply the answer."""
    await pc.setLocalDescription(await pc.createOffer())
    offer = pc.localDescription.sdp
    hdrs = dict(headers or {})
    client_timeout = aiohttp.ClientTimeout(total=timeout)
    shown = public_url(url)  # the URL as any message says it: no userinfo, no query values
    try:
        async with aiohttp.ClientSession(
            timeout=client_timeout, trace_configs=[same_origin_only()]
        ) as s:
            if mode == "whip":
                hdrs["Content-Type"] = "application/sdp"
                async with s.post(url, data=offer, headers=hdrs) as resp:
                    body = await _body(resp, shown)
                    if resp.status != 201:
                        raise CallSetupError(
                            f"WHIP endpoint {shown} answered HTTP {resp.status}, expected 201 "
                            f"Created: {_short(body)}",
                            SetupFailure.REFUSED,
                        )
                    location = resp.headers.get("Location")
                    session = SignalingSession(
                        "whip",
                        url,
                        body,
                        urljoin(url, location) if location else None,
                        status=resp.status,
                        foreign_session=bool(location and other_origin(url, location)),
                    )
            else:
                payload = {"sdp": offer, "type": "offer"}
                async with s.post(url, json=payload, headers=hdrs) as resp:
                    body = await _body(resp, shown)
                    if resp.status != 200:
                        raise CallSetupError(
                            f"SmallWebRTC endpoint {shown} answered HTTP {resp.status}: "
                            f"{_short(body)}",
                            SetupFailure.REFUSED,
                        )
                    try:
                        data = loads(body)
                    except ParseError as exc:
                        if exc.problem is not ParseProblem.INVALID:  # too deep, a bad number
                            raise CallSetupError(
                                f"SmallWebRTC answer from {shown} refused: {exc}",
                                SetupFailure.REFUSED,
                            ) from None
                        raise CallSetupError(
                            f"SmallWebRTC endpoint {shown} did not answer JSON: {_short(body)}",
                            SetupFailure.BAD_ANSWER,
                        ) from None
                    if not isinstance(data, dict) or "sdp" not in data:
                        raise CallSetupError(
                            f"SmallWebRTC answer from {shown} has no 'sdp': {_short(body)}",
                            SetupFailure.BAD_ANSWER,
                        )
                    session = SignalingSession(
                        "smallwebrtc",
                        url,
                        str(data["sdp"]),
                        pc_id=data.get("pc_id"),
                        status=resp.status,
                    )
    except aiohttp.ClientConnectorError as exc:
        why = printable(str(exc.os_error or exc))
        raise CallSetupError(
            f"cannot reach the agent at {shown}: {why}", SetupFailure.UNREACHABLE
        ) from None
    except (asyncio.TimeoutError, TimeoutError):
        why = f"did not answer within {timeout:.0f} s"
        raise CallSetupError(f"the agent at {shown} {why}", SetupFailure.TIMEOUT) from None
    except aiohttp.InvalidURL:
        raise CallSetupError(f"not a valid URL: {shown}") from None
    except CrossOriginRedirect as exc:
        raise CallSetupError(f"the agent at {shown} {exc}") from None
    except aiohttp.ClientError as exc:
        why = f"{type(exc).__name__}: {printable(str(exc))}"
        raise CallSetupError(f"signaling with {shown} failed: {why}") from None
    try:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=session.answer_sdp, type="answer"))
    except Exception as exc:  # aiortc raises ValueError and others on malformed SDP
        why = printable(str(exc))
        raise CallSetupError(
            f"the agent's SDP answer is not usable: {why}", SetupFailure.BAD_ANSWER
        ) from None
    session.trace.append(
        {
            "request": "POST offer",
            "mode": mode,
            "status": session.status,
            "offer_bytes": len(offer),
            "answer_bytes": len(session.answer_sdp),
        }
    )
    return session
