"""Secrets the user gave turnscope (``--header`` values, ``--bearer-env`` tokens), scrubbed from
everything it writes or prints, wherever they turn up: a result, a trace of what the agent sent
back (an HTTP error body that echoes the token), an error message, a crash trace.

Secrets are registered where they enter (the command line) and live only in this process.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

MASK = "[redacted]"
MIN_LENGTH = 4  # shorter values ("1", "on") would mask ordinary words everywhere

_secrets: set[str] = set()


def register(values: Iterable[str]) -> None:
    """Treat each value (and its parts after an auth scheme, and its escaped spellings) as a
    secret from now on."""
    for value in values:
        for part in _spellings(value.strip()):
            if len(part) >= MIN_LENGTH:
                _secrets.add(part)


def _spellings(value: str) -> set[str]:
    forms = {value}
    scheme, _, token = value.partition(" ")
    if token and scheme.isalpha():  # "Bearer abc": the token alone is the secret too
        forms.add(token.strip())
    for form in list(forms):
        forms.add(json.dumps(form)[1:-1])  # as it appears inside a JSON string
        forms.add(quote(form, safe=""))  # as it appears in a URL
    return forms


def scrub(text: str) -> str:
    """``text`` with every registered secret replaced by MASK."""
    if not _secrets or not text:
        return text
    for secret in sorted(_secrets, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, MASK)
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


def registered() -> list[str]:
    """Every secret known to this process (to register them in a worker process it starts)."""
    return sorted(_secrets)
