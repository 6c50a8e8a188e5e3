"""Checks the use cases and the CLI share, light enough for the CLI's start-up."""

from __future__ import annotations

import re
from pathlib import Path

from turnscope.errors import InputError

# A name that is safe as a file's: a fixture's task id, a suite's name.
PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def as_path(path: str | Path | None) -> Path | None:
    """A path given as a string or a Path (None stays None)."""
    return None if path is None else Path(path)


def has_tasks(data: dict, path: Path) -> None:
    """A suite with no task is said as such, before anything runs (its table would be empty
    and "every task is void" would speak of none)."""
    if not data.get("tasks"):
        raise InputError(
            "the suite has no tasks yet",
            path=path,
            fix=f"add one: turnscope fixture add RUN --suite {path} --tags conversational",
        )


def networked_transport(transport: str) -> str:
    """``--transport``: a registered transport that calls a URL (webrtc, a phone line's
    dialect, or one a plug-in registered)."""
    from turnscope import transports

    networked = [n for n in transports.names() if transports.spec(n).url_schemes]
    if transport not in networked:
        raise InputError(f"--transport must be {', '.join(networked)}; not {transport!r}")
    return transport
