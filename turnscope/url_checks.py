"""Checks of the URLs a call is given (the agent's, STUN/TURN servers'): one line of bad input
naming the URL (its secrets scrubbed) and the fix. Every secret in a URL is registered the
moment it is checked."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from turnscope import redact
from turnscope.errors import InputError

ICE_SCHEMES = ("stun", "stuns", "turn", "turns")
# Hosted rooms a voice agent is often reached in: turnscope joins none of them (it calls an
# agent's own SmallWebRTC or WHIP endpoint, or plays a carrier on its websocket).
ROOMS = {"daily.co": "a Daily room", "livekit.cloud": "a LiveKit Cloud room"}


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


def check_agent_url(url: str, schemes: tuple[str, ...], transport: str, example: str) -> str:
    """The agent URL of a ``transport`` call: one of ``schemes`` with a host and a valid port
    (its secrets registered)."""
    redact.register_url(url)
    host = (urlsplit(url).hostname or "").lower()
    room = next((name for domain, name in ROOMS.items() if host.endswith(f".{domain}")), None)
    if room is not None:
        raise InputError(
            f"{redact.scrub(url)!r} is {room}, which turnscope does not join: it calls the "
            "agent itself, over WebRTC (SmallWebRTC's /api/offer, or WHIP) or as a phone line",
            fix="serve the bot on WebRTC where turnscope can reach it, e.g. a pipecat bot "
            "with `python bot.py -t webrtc` at http://HOST:7860/api/offer; or call its phone "
            "line's websocket with --transport twilio",
        )
    if url.startswith(("ws:", "wss:")) and "ws" not in schemes:
        raise InputError(
            f"{redact.scrub(url)!r} is a websocket: a phone line",
            fix="say which carrier's messages to speak: --transport twilio (or telnyx, "
            "plivo, exotel)",
        )
    if "ws" in schemes:
        return check_ws_url(url)
    if "http" in schemes:
        return check_url(url)
    return _checked(url, schemes, f"a {transport} agent URL", f"e.g. {example}")


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
