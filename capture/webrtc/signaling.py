"""Offer/answer exchange with a voice agent: SmallWebRTC (pipecat's JSON) or WHIP (RFC 9725).

Also the ICE configuration: no STUN/TURN server unless one is given (aiortc would otherwise use a
public STUN server), and an explicit loopback-only mode for local agents and tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urljoin

import aiohttp
from aiortc import RTCConfiguration, RTCIceServer, RTCPeerConnection, RTCSessionDescription

from turnscope.errors import CallSetupError

Signaling = Literal["smallwebrtc", "whip"]


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
    return RTCConfiguration(iceServers=[RTCIceServer(urls=u) for u in ice_servers or []])


@dataclass
class SignalingSession:
    """What the remote side told us, and how to hang up."""

    mode: Signaling
    url: str
    answer_sdp: str
    session_url: str | None = None  # WHIP resource (Location)
    pc_id: str | None = None  # SmallWebRTC peer connection id
    status: int = 0
    trace: list[dict[str, Any]] = field(default_factory=list)

    async def hangup(self, headers: Mapping[str, str], timeout: float = 5.0) -> None:
        """WHIP: DELETE the session resource. SmallWebRTC has no hang-up request."""
        if self.mode != "whip" or not self.session_url:
            return
        try:
            client = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout))
            async with client as s, s.delete(self.session_url, headers=dict(headers)) as resp:
                self.trace.append({"request": "DELETE", "status": resp.status})
        except (aiohttp.ClientError, asyncio.TimeoutError) as exc:
            self.trace.append({"request": "DELETE", "error": f"{type(exc).__name__}: {exc}"})


def _short(text: str, n: int = 160) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[:n] + "..."


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
    try:
        async with aiohttp.ClientSession(timeout=client_timeout) as s:
            if mode == "whip":
                hdrs["Content-Type"] = "application/sdp"
                async with s.post(url, data=offer, headers=hdrs) as resp:
                    body = await resp.text()
                    if resp.status != 201:
                        raise CallSetupError(
                            f"WHIP endpoint {url} answered HTTP {resp.status}, expected 201 "
                            f"Created: {_short(body)}"
                        )
                    location = resp.headers.get("Location")
                    session = SignalingSession(
                        "whip",
                        url,
                        body,
                        urljoin(url, location) if location else None,
                        status=resp.status,
                    )
            else:
                payload = {"sdp": offer, "type": "offer"}
                async with s.post(url, json=payload, headers=hdrs) as resp:
                    body = await resp.text()
                    if resp.status != 200:
                        raise CallSetupError(
                            f"SmallWebRTC endpoint {url} answered HTTP {resp.status}: "
                            f"{_short(body)}"
                        )
                    try:
                        data = await resp.json(content_type=None)
                    except ValueError:
                        raise CallSetupError(
                            f"SmallWebRTC endpoint {url} did not answer JSON: {_short(body)}"
                        ) from None
                    if not isinstance(data, dict) or "sdp" not in data:
                        raise CallSetupError(
                            f"SmallWebRTC answer from {url} has no 'sdp': {_short(body)}"
                        )
                    session = SignalingSession(
                        "smallwebrtc",
                        url,
                        str(data["sdp"]),
                        pc_id=data.get("pc_id"),
                        status=resp.status,
                    )
    except aiohttp.ClientConnectorError as exc:
        raise CallSetupError(f"cannot reach the agent at {url}: {exc.os_error or exc}") from None
    except (asyncio.TimeoutError, TimeoutError):
        raise CallSetupError(f"the agent at {url} did not answer within {timeout:.0f} s") from None
    except aiohttp.InvalidURL:
        raise CallSetupError(f"not a valid URL: {url}") from None
    except aiohttp.ClientError as exc:
        raise CallSetupError(f"signaling with {url} failed: {type(exc).__name__}: {exc}") from None
    try:
        await pc.setRemoteDescription(RTCSessionDescription(sdp=session.answer_sdp, type="answer"))
    except Exception as exc:  # aiortc raises ValueError and others on malformed SDP
        raise CallSetupError(f"the agent's SDP answer is not usable: {exc}") from None
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
