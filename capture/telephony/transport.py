"""The phone-line transports' registration: one per carrier dialect, turnscope playing the
carrier on the agent's media-stream websocket."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from turnscope.capture.telephony.call import TelephonyCall, TelephonyOptions
from turnscope.capture.telephony.dialects import DIALECTS
from turnscope.capture.transport import TransportSpec
from turnscope.capture.urls import public_url
from turnscope.errors import InputError

CODECS = ("mulaw", "alaw")


def _maker(dialect: str) -> Callable[[str | None, Mapping[str, Any]], TelephonyOptions]:
    def make(url: str | None, given: Mapping[str, Any]) -> TelephonyOptions:
        codec = given.get("codec")
        if codec is not None and dialect != "telnyx":
            raise InputError(
                f"--codec is for --transport telnyx ({dialect} streams have one codec)"
            )
        if codec not in (None, *CODECS):
            raise InputError(f"--codec must be mulaw or alaw, not {codec!r}")
        return TelephonyOptions(str(url), dialect=dialect, **given)  # type: ignore[arg-type]

    return make


def _details(o: TelephonyOptions) -> dict[str, Any]:
    return {"url": public_url(o.url), "dialect": o.dialect, "header_names": sorted(o.headers)}


def _secrets(o: TelephonyOptions) -> tuple[list[str], list[str]]:
    return [*o.headers.values(), *o.params.values()], [o.url]


TRANSPORTS = tuple(
    TransportSpec(
        name=dialect,
        source="telephony",
        folder="phone",
        url_schemes=("ws", "wss"),
        takes=frozenset(
            (
                "codec",
                "params",
                "headers",
                "connect_timeout_s",
                "max_duration_s",
                "ping_s",
                "dtmf_duration_ms",
            )
        ),
        make=_maker(dialect),
        open=TelephonyCall,
        details=_details,
        secrets=_secrets,
        example="ws://127.0.0.1:8765/ws",
    )
    for dialect in DIALECTS
)
