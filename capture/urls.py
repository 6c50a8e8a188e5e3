"""The secret-bearing parts of a URL the user gave (an agent's offer URL, a phone line's
websocket, a STUN/TURN server) and the URL as it may be written or printed without them.

Secret: the userinfo's password (or the whole userinfo when it is a lone name, a token in the
user's place, as ``https://TOKEN@host``), and every query value (or a bare query item), as given
and percent-decoded. Plain string work (no URL library): a URL that a library would refuse still
has its secrets found, and ``turn:user:pass@host`` (no ``//``) is read the same way.
"""

from __future__ import annotations

import base64
import contextlib
from dataclasses import dataclass
from urllib.parse import unquote, unquote_plus

HIDDEN = "..."


@dataclass(frozen=True)
class UrlParts:
    """``scheme:[//]userinfo@rest?query#fragment``, each part as written ("" when absent)."""

    scheme: str
    slashes: str  # "//" for a hierarchical URL, "" for stun:/turn: ones
    userinfo: str
    has_userinfo: bool
    rest: str  # host, port and path
    query: str
    has_query: bool
    fragment: str


def split_url(url: str) -> UrlParts:
    """``url`` cut into its parts, whatever it holds."""
    head, _, fragment = url.partition("#")
    head, qmark, query = head.partition("?")
    scheme, colon, rest = head.partition(":")
    if not colon or "/" in scheme:  # no scheme: the whole head is the rest
        scheme, rest = "", head
    slashes = "//" if rest.startswith("//") else ""
    rest = rest[len(slashes) :]
    authority, slash, path = rest.partition("/")
    userinfo, at, host = authority.rpartition("@")
    if at:
        rest = host + slash + path
    return UrlParts(scheme, slashes, userinfo, bool(at), rest, query, bool(qmark), fragment)


def _query_values(query: str) -> list[str]:
    return [item.partition("=")[2] if "=" in item else item for item in query.split("&") if item]


def url_secrets(url: str) -> list[str]:
    """Every secret in ``url``: the userinfo's password (or a lone user name), each query
    value, each as written and percent-decoded (an agent may echo either), and the userinfo as
    a Basic ``Authorization`` header carries it."""
    parts = split_url(url)
    raw: list[str] = []
    if parts.userinfo:
        user, colon, password = parts.userinfo.partition(":")
        raw += [parts.userinfo, password] if colon else [user]
    raw += _query_values(parts.query)
    found: list[str] = []
    for value in raw:
        for form in (value, unquote(value), unquote_plus(value)):
            if form and form not in found:
                found.append(form)
    if parts.userinfo:  # as an HTTP client sends it: Authorization: Basic base64(user:password)
        user, _, password = parts.userinfo.partition(":")
        pair = f"{unquote(user)}:{unquote(password)}"
        for encoding in ("utf-8", "latin-1"):
            with contextlib.suppress(UnicodeEncodeError):
                token = base64.b64encode(pair.encode(encoding)).decode("ascii")
                if token not in found:
                    found.append(token)
    return found


def public_url(url: str) -> str:
    """``url`` as it is written to a bundle or printed: the userinfo and every query value
    shown as ``...`` (the query's names stay: they say what was sent), a fragment too."""
    p = split_url(url)
    text = f"{p.scheme}:" if p.scheme else ""
    text += p.slashes + (f"{HIDDEN}@" if p.has_userinfo else "") + p.rest
    if p.has_query:
        items = [item for item in p.query.split("&") if item]
        text += "?" + "&".join(
            f"{item.partition('=')[0]}={HIDDEN}" if "=" in item else HIDDEN for item in items
        )
    if p.fragment:  # never sent, but it may hold a token too
        text += f"#{HIDDEN}"
    return text
