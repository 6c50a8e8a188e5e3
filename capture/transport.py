"""What a call transport provides, to be registered (``turnscope.transports``): its name, the
options it takes, how it opens a call, and how it describes a call that never started.

Adding a transport is a folder under ``capture/`` holding its ``CallSource``, its options (a
dataclass with a ``transport`` property naming it) and a ``TRANSPORTS`` tuple of
``TransportSpec``; then one registration (``turnscope.transports.register``, or the built-in
list there). ``live_call``, ``api.call``, the fixture runner, ``load`` and the CLI all go
through the registry, so nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from turnscope.capture.call_source import CallSource

__all__ = ["TransportOptions", "TransportSpec"]


class TransportOptions(Protocol):
    """A transport's options: a dataclass that says which registered transport it is for."""

    @property
    def transport(self) -> str: ...


@dataclass(frozen=True)
class TransportSpec:
    """One call transport.

    - ``name``: what ``--transport`` and ``api.call(transport=...)`` say.
    - ``source``: the name result.json's ``source.transport`` gives its calls.
    - ``folder``: the prefix of its runs' default folders (``call-``, ``phone-`` ...).
    - ``url_schemes``: the agent URL's schemes; empty when it takes no URL (sound devices).
    - ``takes``: the options a user may give it (the names ``make`` takes).
    - ``make(url, options)``: its options object from the options given (already checked).
    - ``open(options)``: the call (a ``CallSource``), not yet connected.
    - ``details(options)``: what a bundle says of a call that never started (no secrets).
    - ``secrets(options)``: the values and the URLs whose secrets are never written.
    - ``example``: an agent URL, for the one line that says what to give.
    """

    name: str
    source: str
    folder: str
    url_schemes: tuple[str, ...]
    takes: frozenset[str]
    make: Callable[[str | None, Mapping[str, Any]], TransportOptions]
    open: Callable[[Any], CallSource]
    details: Callable[[Any], dict[str, Any]]
    secrets: Callable[[Any], tuple[list[str], list[str]]]
    example: str = ""
