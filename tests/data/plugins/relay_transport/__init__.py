"""A transport of the tests' own, added as a user would add one: this folder plus one
registration (``TURNSCOPE_TRANSPORTS=relay_transport``, or ``turnscope.transports.register``).

"relay" places a WebRTC call with every ICE candidate kept on 127.0.0.1 whatever it is given (as
a relay inside one host would): its own options type, name and run folder prefix, the WebRTC
call's machinery underneath.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from turnscope.capture.transport import TransportSpec
from turnscope.capture.urls import public_url
from turnscope.capture.webrtc.call import CallOptions, WebRTCCall


@dataclass
class RelayOptions(CallOptions):
    @property
    def transport(self) -> str:
        return "relay"


def make(url: str | None, given: Mapping[str, Any]) -> RelayOptions:
    return RelayOptions(str(url), loopback_only=True, **given)


TRANSPORTS = (
    TransportSpec(
        name="relay",
        source="webrtc",
        folder="relay",
        url_schemes=("http",),
        takes=frozenset(("headers", "connect_timeout_s")),
        make=make,
        open=WebRTCCall,
        details=lambda o: {"url": public_url(o.url), "relay": True},
        secrets=lambda o: (list(o.headers.values()), [o.url]),
        example="http://127.0.0.1:7860/api/offer",
    ),
)
