"""Output to a terminal written from a thread of its own, so that a terminal that holds its
output (Ctrl-S) never blocks the event loop running a call."""

from __future__ import annotations

import queue
import threading
from typing import Any


class TerminalWriter:
    """Writes to a terminal from a thread of its own, in the order written.

    A terminal whose output is held (Ctrl-S) blocks whoever writes to it: that must be this
    thread, never the event loop running a call (its caller audio would stop going out). A
    terminal that went away (SIGHUP, EIO) swallows what is written. Held output is bounded: past
    ``LIMIT`` characters the rest is counted, not kept, and the count is said when the terminal
    takes output again.
    """

    LIMIT = 4_000_000

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Any, str] | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0
        self._dropped = 0
        self._thread: threading.Thread | None = None
        # Streams asked, kept alive so that an id is never another stream's (tests swap them).
        self._ttys: dict[int, tuple[Any, bool]] = {}

    def takes(self, stream: Any) -> bool:
        """Whether ``stream`` is a terminal (asked once per stream object)."""
        known = self._ttys.get(id(stream))
        if known is None:
            try:
                tty = bool(stream.isatty())
            except (AttributeError, OSError, ValueError):
                tty = False
            known = self._ttys[id(stream)] = (stream, tty)
        return known[1]

    def put(self, stream: Any, text: str) -> None:
        with self._lock:
            if self._pending + len(text) > self.LIMIT:
                self._dropped += text.count("\n") or 1
                return
            self._pending += len(text)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="turnscope-terminal", daemon=True
                )
                self._thread.start()
        self._queue.put((stream, text))

    def _run(self) -> None:
        while (item := self._queue.get()) is not None:
            stream, text = item
            with self._lock:
                self._pending -= len(text)
                dropped, self._dropped = self._dropped, 0
            if dropped:
                text = f"({dropped} line(s) not shown: the terminal held its output)\n" + text
            try:
                stream.write(text)
                stream.flush()
            except (OSError, ValueError):  # the terminal is gone: nothing more to show
                pass

    def finish(self) -> None:
        """Wait until everything written has reached the terminal (at exit)."""
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join()
