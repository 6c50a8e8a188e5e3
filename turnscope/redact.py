"""Secrets the user gave turnscope (``--header`` values, ``--bearer-env`` tokens, ``--param``
values, the userinfo and query values of every URL it is given), scrubbed from
everything it writes or prints, wherever they turn up: a result, a trace of what the agent sent
back (an HTTP error body that echoes the token), an error message, a crash trace.

Secrets are registered where they enter (the command line) and live only in this process.
"""

from __future__ import annotations

import json
import re
import string
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

MASK = "[redacted]"
MIN_LENGTH = 4  # shorter values ("1", "on") would mask ordinary words everywhere

_secrets: set[str] = set()
_encoded: dict[str, re.Pattern[str]] = {}  # URL secrets, however a client re-encodes them
_UNRESERVED = frozenset(string.ascii_letters + string.digits + "-._~")  # RFC 3986: never encoded


def register(values: Iterable[str]) -> None:
    """Treat each value (and its parts after an auth scheme, and its escaped spellings) as a
    secret from now on."""
    for value in values:
        for part in _spellings(value.strip()):
            if len(part) >= MIN_LENGTH:
                _secrets.add(part)


def register_url(url: str) -> None:
    """Treat every secret-bearing part of ``url`` (its userinfo, every query value, as written
    and percent-decoded: capture/urls.py) as a secret from now on."""
    from turnscope.capture.urls import url_secrets

    for value in url_secrets(url):
        for part in _spellings(value, auth=False):
            if len(part) >= MIN_LENGTH:
                _secrets.add(part)
        if len(value) >= MIN_LENGTH and not _UNRESERVED.issuperset(value):
            _encoded.setdefault(value, _any_encoding(value))


def _any_encoding(value: str) -> re.Pattern[str]:
    """``value`` however an HTTP client or server re-encodes it in a URL (yarl writes ``%2F``
    back as ``/``, a server may echo ``%2f``): each character outside RFC 3986's unreserved set
    as itself or percent-encoded in either case, a space also as ``+``. Unreserved characters
    stay literal (no client encodes them), which keeps a fast literal prefix over a large page."""
    parts = []
    for ch in value:
        if ch in _UNRESERVED:
            parts.append(re.escape(ch))
            continue
        encoded = "".join(
            "%" + "".join(f"[{d.upper()}{d.lower()}]" if d.isalpha() else d for d in f"{b:02x}")
            for b in ch.encode("utf-8")
        )
        forms = [re.escape(ch), encoded] + ([r"\+"] if ch == " " else [])
        parts.append(f"(?:{'|'.join(forms)})")
    return re.compile("".join(parts))


def _spellings(value: str, *, auth: bool = True) -> set[str]:
    forms = {value}
    scheme, _, token = value.partition(" ")
    if auth and token and scheme.isalpha():  # "Bearer abc": the token alone is the secret too
        forms.add(token.strip())
    for form in list(forms):
        forms.add(json.dumps(form)[1:-1])  # as it appears inside a JSON string
        forms.add(quote(form, safe=""))  # as it appears in a URL
    return forms


# A page's embedded media (report.html's audio): base64 of the call's own samples, which no agent
# text reaches. A short secret made of base64's letters would otherwise match inside it by
# chance (a 4-letter one, in a report's few MB, about one report in three) and break the audio.
_EMBEDDED = re.compile(r"(data:[\w/+.-]+;base64,)([A-Za-z0-9+/=]{64,})")


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by MASK (embedded base64 media left
    whole)."""
    if not _secrets or not text:
        return text
    if "base64," in text:
        parts = _EMBEDDED.split(text)  # text, prefix, payload, text, prefix, payload, ..., text
        return "".join(p if k % 3 == 2 else _scrub_text(p) for k, p in enumerate(parts))
    return _scrub_text(text)


def _scrub_text(text: str) -> str:
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
    for pattern in _encoded.values():
        text = pattern.sub(MASK, text)
    return text


def scrub_obj(obj: Any) -> Any:
    """A JSON-like value with every string (keys too) scrubbed."""
    if not _secrets:
        return obj
    if isinstance(obj, str):
        return scrub(obj)
    if isinstance(obj, dict):
        return {scrub(str(k)) if isinstance(k, str) else k: scrub_obj(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [scrub_obj(v) for v in obj]
    return obj


def clear() -> None:
    """Forget every secret (tests; a long-lived process between runs)."""
    _secrets.clear()
    _encoded.clear()


def registered() -> list[str]:
    """Every secret known to this process (to register them in a worker process it starts)."""
    return sorted(_secrets)
