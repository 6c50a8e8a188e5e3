"""The WebRTC transport's registration: a SmallWebRTC JSON offer or a WHIP endpoint."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from turnscope.capture.transport import TransportSpec
from turnscope.capture.urls import public_url
from turnscope.capture.webrtc.call import CallOptions, WebRTCCall
from turnscope.errors import InputError

SIGNALINGS = ("smallwebrtc", "whip")


def _make(url: str | None, given: Mapping[str, Any]) -> CallOptions:
    signaling = given.get("signaling", "smallwebrtc")
    if signaling not in SIGNALINGS:
        raise InputError(f"--signaling must be smallwebrtc or whip, not {signaling!r}")
    return CallOptions(str(url), **given)


def _details(o: CallOptions) -> dict[str, Any]:
    return {"url": public_url(o.url), "signaling": o.signaling, "header_names": sorted(o.headers)}


def _secrets(o: CallOptions) -> tuple[list[str], list[str]]:
    return list(o.headers.values()), [o.url, *o.ice_servers]


TRANSPORTS = (
    TransportSpec(
        name="webrtc",
        source="webrtc",
        folder="call",
        url_schemes=("http", "https"),
        takes=frozenset(
            (
                "signaling",
                "headers",
                "ice_servers",
                "loopback_only",
                "connect_timeout_s",
                "media_timeout_s",
                "max_duration_s",
            )
        ),
        make=_make,
        open=WebRTCCall,
        details=_details,
        secrets=_secrets,
        example="http://127.0.0.1:7860/api/offer",
    ),
)
