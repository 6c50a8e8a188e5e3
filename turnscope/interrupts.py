"""SIGINT (Ctrl-C), SIGTERM (how CI cancels a job) and SIGHUP (the terminal closed) end a run
cleanly, in any phase: every run in the process is told to stop, and each scores and writes
whatever it captured, marked degraded with the signal. A second signal of the same kind is not
caught: it ends the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
from collections.abc import Callable, Iterator

REASONS = {
    signal.SIGINT: "interrupted by the user (Ctrl-C)",
    signal.SIGTERM: "terminated by SIGTERM",
    signal.SIGHUP: "the terminal closed (SIGHUP)",
}

_stops: dict[int, Callable[[str], None]] = {}
_ids = itertools.count()
_installed: asyncio.AbstractEventLoop | None = None
_received: str | None = None


def received() -> str | None:
    """Why the process was asked to stop, if it was (a bench starts no new fixture then)."""
    return _received


def _deliver(sig: signal.Signals) -> None:
    loop = _installed
    if loop is not None:
        # The next one of this kind is not ours: it ends the process as it normally would.
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.remove_signal_handler(sig)
    stop_all(REASONS[sig])


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[str], None]) -> Iterator[None]:
    """While the block runs (inside a running event loop), SIGINT and SIGTERM call
    ``stop(reason)``; outside any such block the process's own handling applies."""
    global _installed
    loop = asyncio.get_running_loop()
    key = next(_ids)
    if not _stops:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            for sig in REASONS:
                loop.add_signal_handler(sig, _deliver, sig)
            _installed = loop
    _stops[key] = stop
    if _received is not None:
        stop(_received)  # asked to stop before this run even began
    try:
        yield
    finally:
        del _stops[key]
        if not _stops and _installed is loop:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                for sig in REASONS:
                    loop.remove_signal_handler(sig)
            _installed = None


def reset() -> None:
    """Forget a signal received earlier (a long-lived process between runs; tests)."""
    global _received
    _received = None


def stop_all(reason: str) -> None:
    """Stop every run of the process, saying ``reason`` (a signal, or a worker told by its
    driver)."""
    global _received
    _received = _received or reason
    for stop in list(_stops.values()):
        stop(reason)


@contextlib.contextmanager
def signals_to(stop: Callable[[str], None]) -> Iterator[None]:
    """Outside an event loop (a driver waiting on its workers), SIGINT and SIGTERM call
    ``stop(reason)`` while the block runs, as often as they come."""

    def handle(sig: int, _frame: object) -> None:
        stop(REASONS[signal.Signals(sig)])

    saved = {s: signal.signal(s, handle) for s in REASONS}
    try:
        yield
    finally:
        for s, h in saved.items():
            signal.signal(s, h)
