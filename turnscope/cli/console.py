"""Shared terminal output: one rich Console for tables, one for errors on stderr."""

from __future__ import annotations

import atexit
import contextlib
import io
import os
import sys
import threading
from typing import Any

from rich.console import Console
from rich.file_proxy import FileProxy

from turnscope import redact
from turnscope.cli.terminal_writer import TerminalWriter
from turnscope.errors import printable

# An error or warning is one line, whatever it quotes (an agent's page, a flood of names): its
# control characters escaped (they could clear the screen or fake a verdict), its length bounded.
LINE_LIMIT = 2000


class _Scrubbed:
    """The process's stdout or stderr (whichever it is at the time of writing: tests swap
    them), with every secret the user gave scrubbed from what is printed.

    While rich's live display runs on a terminal, ``sys.stdout`` is rich's ``FileProxy``, which
    prints back through this very console: writing to it looped forever (issue 26). The stream
    written is therefore the one behind any such proxy, and a write that still finds its way
    back here goes to the process's original stream. Scrubbing happens here, before any of
    that, so it holds whatever object ``sys.stdout`` is.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._inside = threading.local()

    @property
    def _stream(self) -> Any:
        stream = getattr(sys, self.name)
        seen = 0
        while isinstance(stream, FileProxy) and seen < 8:
            stream = stream.rich_proxied_file
            seen += 1
        if stream is None or isinstance(stream, (FileProxy, _Scrubbed)):
            stream = getattr(sys, f"__{self.name}__")
        return stream if stream is not None else _NOWHERE

    def write(self, text: str) -> int:
        text = redact.scrub(text)
        if getattr(self._inside, "on", False):  # came back round: never loop
            stream = getattr(sys, f"__{self.name}__") or _NOWHERE
        else:
            stream = self._stream
        if _terminal.takes(stream):
            _terminal.put(stream, text)
            return len(text)
        self._inside.on = True
        try:
            return stream.write(text)
        except (OSError, ValueError):  # a reader that went away, a closed stream
            return len(text)
        finally:
            self._inside.on = False

    def flush(self) -> None:
        stream = self._stream
        if _terminal.takes(stream):
            return  # the terminal's writer flushes after every write
        with contextlib.suppress(OSError, ValueError):
            stream.flush()

    def isatty(self) -> bool:
        try:
            return bool(self._stream.isatty())
        except ValueError:
            return False

    def fileno(self) -> int:
        return self._stream.fileno()

    @property
    def encoding(self) -> str:
        return getattr(self._stream, "encoding", None) or "utf-8"


_terminal = TerminalWriter()
atexit.register(_terminal.finish)


def finish() -> None:
    """Everything printed so far has reached the terminal when this returns."""
    _terminal.finish()


# Where the process started with no stdout or stderr at all (a closed descriptor), what is printed
# goes nowhere rather than raising at import.
class _Nowhere(io.TextIOBase):
    def write(self, text: str) -> int:
        return len(text)


_NOWHERE = _Nowhere()


def _size() -> tuple[int | None, int | None]:
    """Width and height for rich. Off a terminal (CI logs, pipes) rich would cut tables to 80
    columns ("adversar…"): print whole names there, unless COLUMNS says otherwise. On a terminal
    rich asks its size, but takes a dumb one (TERM=dumb: an editor's shell buffer) as 80 x 25
    whatever it is: ask it here (rich keeps a size only given both numbers)."""
    stdout = _Scrubbed("stdout")
    if "COLUMNS" in os.environ:
        return None, None
    if not stdout.isatty():
        return 200, None
    if os.environ.get("TERM", "").lower() in ("dumb", "unknown"):
        with contextlib.suppress(OSError, ValueError):
            size = os.get_terminal_size(stdout.fileno())
            if size.columns and size.lines:
                return size.columns, size.lines
    return None, None


_WIDTH, _HEIGHT = _size()
out = Console(file=_Scrubbed("stdout"), highlight=False, width=_WIDTH, height=_HEIGHT)  # type: ignore[arg-type]
err = Console(file=_Scrubbed("stderr"), highlight=False, width=_WIDTH, height=_HEIGHT)  # type: ignore[arg-type]


def say(message: str, *, markup: bool = True) -> None:
    """Print a line of the command's own output unwrapped (a path or a ``ray:`` line must
    survive a narrow terminal, ``COLUMNS=80`` in a CI log, and a grep)."""
    out.print(message, markup=markup, soft_wrap=True)


def fail_line(message: str) -> None:
    """Print the one-line error the CLI promises instead of a traceback."""
    err.print(f"turnscope: error: {printable(message, LINE_LIMIT)}", markup=False, soft_wrap=True)


def warn_line(message: str) -> None:
    """Print a one-line warning to stderr."""
    err.print(f"turnscope: warning: {printable(message, LINE_LIMIT)}", markup=False, soft_wrap=True)
