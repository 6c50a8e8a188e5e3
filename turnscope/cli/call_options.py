"""The command-line flags of a call to an agent over the network (WebRTC or a phone line),
parsed and handed to the transport registry: shared by `call`, `bench` and `load`. Every header
value, token, ``--param`` value and every URL's userinfo and query values are secrets from the
moment they are parsed."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import typer

from turnscope import redact
from turnscope.cli.options import TRANSPORT_FLAGS, number
from turnscope.errors import InputError

if TYPE_CHECKING:
    from turnscope.capture.transport import TransportOptions

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
) -> TransportOptions:
    """A WebRTC or phone-line call's options from the command line, checked (``call`` and
    ``load`` share them): the flags parsed here, the rest checked by the transport registry."""
    from turnscope import transports

    phone = transports.spec(transport).source == "telephony"
    if phone and (ice_server or loopback_only or signaling != "smallwebrtc" or media_timeout):
        raise InputError(
            "--ice-server, --loopback-only, --signaling and --media-timeout are WebRTC "
            "options (a phone agent sends no audio while it listens; a dead one stops "
            "answering the websocket's pings)"
        )
    return transports.options(
        transport,
        url,
        flags=TRANSPORT_FLAGS,
        signaling=None if signaling == "smallwebrtc" else signaling,
        headers=parse_headers(header, bearer_env),
        ice_servers=ice_server,
        loopback_only=loopback_only,
        connect_timeout_s=connect_timeout,
        media_timeout_s=media_timeout,
        params=parse_params(param),
        codec=codec,
    )
