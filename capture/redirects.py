"""No request to an agent follows a redirect to another origin: aiohttp would re-send the user's
own headers (``X-Api-Key``, any ``--header``; it drops only ``Authorization`` and cookies)
wherever the agent points. A redirect within the agent's origin is followed as usual."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import aiohttp
from yarl import URL

from turnscope.errors import printable


class CrossOriginRedirect(aiohttp.ClientError):
    """The agent redirected a request to another origin; it was not followed. A ClientError, so
    every request's own handling of a failed request covers it."""

    def __init__(self, target: URL) -> None:
        self.target = target
        super().__init__(
            f"redirected to another origin ({printable(str(target.origin()), 120)}): not "
            "followed, so no header or credential of yours went there (give that URL itself if "
            "you trust it)"
        )


def other_origin(base: str | URL, location: str) -> URL | None:
    """``location`` (absolute or relative to ``base``) when it is on another origin than
    ``base``; None when it is on the same one or is not a URL (the request's own handling
    refuses that)."""
    base = URL(base)
    try:
        target = base.join(URL(location))
        return None if target.origin() == base.origin() else target
    except ValueError:
        return None


async def _on_redirect(_session: Any, _ctx: SimpleNamespace, params: Any) -> None:
    response = params.response
    location = response.headers.get("Location") or response.headers.get("URI")
    if location is None:
        return
    target = other_origin(params.url, location)
    if target is not None:
        response.close()
        raise CrossOriginRedirect(target)


def same_origin_only() -> aiohttp.TraceConfig:
    """A session's trace config that stops any redirect to another origin (pass it in
    ``aiohttp.ClientSession(trace_configs=[...])``)."""
    config = aiohttp.TraceConfig()
    config.on_request_redirect.append(_on_redirect)
    return config
