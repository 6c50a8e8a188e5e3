"""The options of a call to an agent over the network (WebRTC or a phone line), checked:
shared by `call`, `bench` and `load`. Every header value, token, ``--param`` value and every
URL's userinfo and query values are secrets from the moment they are parsed."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote, urlsplit

import typer

from turnscope import redact
from turnscope.cli.options import check_transport, number
from turnscope.errors import InputError

if TYPE_CHECKING:
    from turnscope.capture.telephony.call import TelephonyOptions
    from turnscope.capture.webrtc.call import CallOptions

_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")  # an HTTP header name (RFC 9110 token)


def parse_headers(pairs: list[str], bearer_env: str | None) -> dict[str, str]:
    """``Name: value`` options (and a bearer token from an environment variable). Every value
    is a secret from here on: scrubbed from all output, and never echoed in an error."""
    headers: dict[str, str] = {}
    for i, pair in enumerate(pairs, 1):
        name, sep, value = pair.partition(":")
        redact.register([pair, value])
        if not sep:
            raise InputError(
                f"--header #{i}: expected 'Name: value' (no colon found; the value is not shown)"
            )
        name = name.strip()
        if not _TOKEN.match(name):
            raise InputError(
                f"--header #{i}: the name is not a valid HTTP header name (letters, digits and "
                "!#$%&'*+.^_`|~- only; the value is not shown)"
            )
        if any(c in value for c in "\r\n\0"):
            raise InputError(
                f"--header {name}: the value contains a line break or NUL, which would split "
                "the request (the value is not shown)"
            )
        headers[name] = value.strip()
    if bearer_env:
        token = os.environ.get(bearer_env)
        if not token:
            raise InputError(f"--bearer-env {bearer_env}: that environment variable is empty")
        if any(c in token for c in "\r\n\0"):
            raise InputError(f"--bearer-env {bearer_env}: the token contains a line break or NUL")
        redact.register([token, f"Bearer {token}"])
        headers["Authorization"] = f"Bearer {token}"
    return headers


ICE_SCHEMES = ("stun", "stuns", "turn", "turns")


def _checked(url: str, schemes: tuple[str, ...], what: str, fix: str) -> str:
    """``url`` with one of ``schemes``, a host and a valid port (else bad input, exit 2). Its
    userinfo and query values are secrets from here on (they often carry the token)."""
    redact.register_url(url)
    parts = urlsplit(url)
    if parts.scheme not in schemes or not parts.hostname:
        raise InputError(f"{redact.scrub(url)!r} is not {what}", fix=fix)
    try:
        parts.port  # noqa: B018 (raises on a port out of range)
    except ValueError as exc:
        raise InputError(f"{redact.scrub(url)!r}: {exc}") from None
    return url


def check_url(url: str) -> str:
    """The agent's offer URL: http(s) with a host (its secrets registered)."""
    return _checked(
        url, ("http", "https"), "an agent URL",
        "give the offer endpoint, e.g. http://127.0.0.1:7860/api/offer",
    )  # fmt: skip


def check_ws_url(url: str) -> str:
    """A phone-line agent's websocket URL: ws(s) with a host (its secrets registered)."""
    return _checked(
        url, ("ws", "wss"), "a media-stream websocket URL",
        "give the agent's websocket, e.g. ws://127.0.0.1:8765/ws",
    )  # fmt: skip


def parse_params(pairs: list[str]) -> dict[str, str]:
    """``--param k=v`` options: the start message's custom parameters. Every value is a secret
    from here on (phone agents often take their auth there), and never echoed in an error."""
    params: dict[str, str] = {}
    for i, pair in enumerate(pairs, 1):
        key, sep, value = pair.partition("=")
        redact.register([value])
        if not sep or not key.strip():
            raise InputError(f"--param #{i}: expected NAME=VALUE (the value is not shown)")
        params[key.strip()] = value
    return params


def telephony_options(
    url: str, transport: str, codec: str | None, params: list[str], headers: dict[str, str],
    connect_timeout: float,
) -> TelephonyOptions:  # fmt: skip
    """A phone-line call's options, checked."""
    from turnscope.capture.telephony.call import TelephonyOptions

    check_ws_url(url)
    if codec is not None and transport != "telnyx":
        raise InputError(f"--codec is for --transport telnyx ({transport} streams have one codec)")
    if codec not in (None, "mulaw", "alaw"):
        raise InputError(f"--codec must be mulaw or alaw, not {codec!r}")
    return TelephonyOptions(
        url,
        dialect=transport,  # type: ignore[arg-type]
        codec=codec,  # type: ignore[arg-type]
        params=parse_params(params),
        headers=headers,
        connect_timeout_s=connect_timeout,
    )


def check_ice_server(url: str) -> str:
    """A STUN/TURN URL (RFC 7064/7065): stun:HOST[:PORT], turn:HOST[:PORT][?transport=...]. A
    ``user:pass@`` in it is a secret from here on."""
    redact.register_url(url)
    scheme, sep, rest = url.partition(":")
    host = rest.split("?", 1)[0].rsplit("@", 1)[-1].split(":", 1)[0]
    if not sep or scheme.lower() not in ICE_SCHEMES or not host:
        raise InputError(
            f"--ice-server {redact.scrub(url)!r}: not a STUN/TURN URL",
            fix="e.g. stun:stun.example.com:3478 or turn:turn.example.com:3478",
        )
    # What aiortc will make of it, asked now: a URL it cannot use failed inside the call.
    from aiortc.rtcicetransport import parse_stun_turn_uri

    userinfo, at, where = rest.rpartition("@")
    if at:  # turn:USER:PASS@HOST:PORT (the call hands aiortc the two apart)
        password = userinfo.partition(":")[2]
        redact.register([password, unquote(password)])
    try:
        parsed = parse_stun_turn_uri(f"{scheme.lower()}:{where}")
    except ValueError:
        parsed = {}
    if not 0 < parsed.get("port", 0) < 65536 or parsed.get("transport", "udp") not in (
        "udp",
        "tcp",
    ):
        raise InputError(
            f"--ice-server {redact.scrub(url)!r}: not a STUN/TURN URL a call can use (a host, "
            "a port 1-65535, transport udp or tcp)",
            fix="e.g. stun:stun.example.com:3478 or turn:USER:PASS@turn.example.com:3478",
        )
    return url


def loopback_option() -> Any:
    return typer.Option(
        False, "--loopback-only", help="Keep every ICE candidate on 127.0.0.1 (local agents)."
    )


def connect_timeout_option() -> Any:
    return typer.Option(
        10.0, "--connect-timeout", help="Seconds.", callback=number(0, 3600, above=True)
    )


def media_timeout_option() -> Any:
    return typer.Option(
        None,
        "--media-timeout",
        help="WebRTC: end the call when no agent audio arrives this long (default 5 s).",
        callback=number(0, 3600, above=True),
    )


REMOTE_FLAGS = (
    "transport", "signaling", "header", "bearer_env", "ice_server", "loopback_only",
    "connect_timeout", "media_timeout", "param", "codec",
)  # fmt: skip


def remote_flags(values: Mapping[str, Any]) -> dict[str, Any]:
    """The command's values of the flags ``remote_options`` takes (a command passes its
    ``locals()``: `call` and `load` declare the same flags)."""
    return {k: values[k] for k in REMOTE_FLAGS}


def remote_options(
    url: str,
    *,
    transport: str,
    signaling: str,
    header: list[str],
    bearer_env: str | None,
    ice_server: list[str],
    loopback_only: bool,
    connect_timeout: float,
    media_timeout: float | None,
    param: list[str],
    codec: str | None,
) -> CallOptions | TelephonyOptions:
    """A WebRTC or phone-line call's options from the command line, checked (``call`` and
    ``load`` share them)."""
    from turnscope.capture.webrtc.call import CallOptions

    check_transport(transport)
    if (param or codec) and transport == "webrtc":
        raise InputError("--param and --codec are for phone lines (--transport twilio ...)")
    if signaling not in ("smallwebrtc", "whip"):
        raise InputError(f"--signaling must be smallwebrtc or whip, not {signaling!r}")
    headers = parse_headers(header, bearer_env)
    if url.startswith(("ws:", "wss:")) and transport == "webrtc":
        raise InputError(
            f"{redact.scrub(url)!r} is a websocket: a phone line",
            fix="say which carrier's messages to speak: --transport twilio (or telnyx, "
            "plivo, exotel)",
        )
    if transport != "webrtc":
        if ice_server or loopback_only or signaling != "smallwebrtc" or media_timeout:
            raise InputError(
                "--ice-server, --loopback-only, --signaling and --media-timeout are WebRTC "
                "options (a phone agent sends no audio while it listens; a dead one stops "
                "answering the websocket's pings)"
            )
        return telephony_options(url, transport, codec, param, headers, connect_timeout)
    check_url(url)
    for server in ice_server:
        check_ice_server(server)
    return CallOptions(
        url,
        signaling=signaling,  # type: ignore[arg-type]
        headers=headers,
        ice_servers=ice_server,
        loopback_only=loopback_only,
        connect_timeout_s=connect_timeout,
        media_timeout_s=5.0 if media_timeout is None else media_timeout,
    )
