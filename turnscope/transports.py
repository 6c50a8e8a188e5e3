"""The registry of call transports: every way turnscope can call an agent, by name.

``live_call``, ``api.call``, the fixture runner, ``load`` and the CLI all make, open and describe
a call through here, so a transport is added in one place (its folder under ``capture/`` and one
registration: ``register`` from anywhere, or ``BUILTIN`` for the shipped ones). Its options are
given by name (``options("twilio", url, params={...})``); an option the transport does not take,
a URL of the wrong kind or a name registered twice is one line of bad input.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import Any

from turnscope import redact
from turnscope.capture.transport import TransportOptions, TransportSpec
from turnscope.errors import InputError
from turnscope.url_checks import check_agent_url, check_ice_server

__all__ = ["BUILTIN", "names", "open_call", "options", "register", "register_secrets", "spec"]

# The shipped transports: each module's TRANSPORTS are registered on first use, then those of
# the modules named by installed packages' "turnscope.transports" entry points and by
# TURNSCOPE_TRANSPORTS (comma-separated module names: a transport of your own, no package).
BUILTIN = (
    "turnscope.capture.webrtc.transport",
    "turnscope.capture.telephony.transport",
    "turnscope.capture.device.transport",
)
PLUGINS_ENV = "TURNSCOPE_TRANSPORTS"
_registry: dict[str, TransportSpec] = {}
_loaded: list[bool] = []  # the built-ins and plug-ins are registered (once per process)


def _modules() -> list[str]:
    plugins = [ep.value for ep in entry_points(group="turnscope.transports")]
    named = [m.strip() for m in os.environ.get(PLUGINS_ENV, "").split(",") if m.strip()]
    return [*BUILTIN, *plugins, *named]


def _load() -> dict[str, TransportSpec]:
    if not _loaded:
        _loaded.append(True)
        for module in _modules():
            try:
                found = importlib.import_module(module).TRANSPORTS
            except (ImportError, AttributeError) as exc:
                raise InputError(
                    f"{PLUGINS_ENV} / entry point {module!r}: not a module with TRANSPORTS "
                    f"({type(exc).__name__}: {exc})",
                    fix="name an importable module that defines TRANSPORTS (TransportSpec, ...)",
                ) from None
            for t in found:
                register(t)
    return _registry


def register(t: TransportSpec) -> None:
    """Add a transport; a name already taken by another is refused (one line)."""
    known = _registry.get(t.name)
    if known is not None and known is not t:
        raise InputError(f"transport {t.name!r} is registered twice: give the new one a new name")
    _registry[t.name] = t


def names() -> list[str]:
    """Every registered transport's name."""
    return list(_load())


def spec(name: str) -> TransportSpec:
    """The transport called ``name`` (bad input names the ones there are)."""
    found = _load().get(name)
    if found is None:
        raise InputError(f"--transport must be one of {', '.join(_registry)}; not {name!r}")
    return found


def options(
    name: str, url: str | None, *, flags: Mapping[str, str] | None = None, **given: Any
) -> TransportOptions:
    """The ``name`` transport's options for a call to ``url``. An option left at None is not
    given; one the transport does not take is bad input unless it is off (False, empty).
    ``flags``: how the caller spells each option (the CLI's flags, ``--ice-server`` for
    ``ice_servers``), so that the one line of a misuse names what was typed."""
    t = spec(name)
    given = {k: v for k, v in given.items() if v is not None}
    extra = sorted(k for k, v in given.items() if k not in t.takes and v not in (False, [], {}))
    given = {k: v for k, v in given.items() if k in t.takes}
    if extra:
        named = ", ".join(flags.get(k, _flag(k)) if flags else _flag(k) for k in extra)
        owners = sorted({n for n, o in _registry.items() for k in extra if k in o.takes})
        where = f" (an option of {', '.join(owners)})" if owners else ""
        takes = sorted(flags.get(k, _flag(k)) for k in t.takes) if flags else sorted(t.takes)
        raise InputError(
            f"{named}: not an option of the {name} transport{where}",
            fix=f"it takes {', '.join(takes)}",
        )
    if not t.url_schemes:
        if url is not None:
            raise InputError(f"a {name} call takes no URL (got {redact.scrub(url)!r})")
    elif url is None:
        raise InputError(f"a {name} call needs the agent's URL, e.g. {t.example}")
    else:
        check_agent_url(url, t.url_schemes, name, t.example)
    for server in given.get("ice_servers", ()):
        check_ice_server(server)
    made = t.make(url, given)
    register_secrets(made)
    return made


def _flag(option: str) -> str:
    """An option's name as a flag would spell it (``connect_timeout_s``: --connect-timeout)."""
    return "--" + option.removesuffix("_s").replace("_", "-")


def register_secrets(opts: TransportOptions) -> None:
    """Every secret the options carry is scrubbed from all this process writes or prints,
    however the options were made (a load or bench worker process only through here)."""
    values, urls = spec(opts.transport).secrets(opts)
    redact.register(values)
    for url in urls:
        redact.register_url(url)


def open_call(opts: TransportOptions) -> Any:
    """The call (a ``CallSource``, not yet connected) for ``opts``, its secrets registered."""
    register_secrets(opts)
    return spec(opts.transport).open(opts)


def failed_setup(opts: TransportOptions) -> tuple[str, dict[str, Any]]:
    """What a bundle says of a call that never started: its source name and details."""
    t = spec(opts.transport)
    return t.source, t.details(opts)


def folder_prefix(opts: TransportOptions) -> str:
    return spec(opts.transport).folder
