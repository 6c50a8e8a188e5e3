"""Run a command in a real pseudo-terminal, as a person at a keyboard would, with a deadline.

The child gets the pty as its controlling terminal (its own session), a window size, and
whatever the test does to the terminal while it runs: resize it, hold its output (Ctrl-S),
release it (Ctrl-Q), close it (the kernel hangs the session up: SIGHUP).
"""

from __future__ import annotations

import errno
import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\x1b[=>78]")


@dataclass
class Terminal:
    """What a step can do to the running terminal."""

    master: int
    pid: int
    closed: bool = False

    def resize(self, cols: int, rows: int = 40) -> None:
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        os.killpg(self.pid, signal.SIGWINCH)

    def type(self, keys: bytes) -> None:
        os.write(self.master, keys)

    def close(self) -> None:
        """Close the terminal as a window manager does: the session is hung up."""
        os.close(self.master)
        self.closed = True


@dataclass
class PtyRun:
    code: int | None  # None: it did not end by the deadline (killed)
    raw: str
    wall_s: float
    steps_done: list[str] = field(default_factory=list)
    read_at_step: list[int] = field(default_factory=list)  # bytes shown when each step ran

    @property
    def screen(self) -> str:
        """What was shown, escape sequences taken out and line ends made plain."""
        return ANSI.sub("", self.raw).replace("\r\n", "\n").replace("\r", "\n")


Step = tuple[float, str, Callable[[Terminal], None]]


def run_in_pty(
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    cols: int = 100,
    rows: int = 40,
    deadline_s: float = 180.0,
    steps: list[Step] | None = None,
) -> PtyRun:
    """Run ``argv`` on a new pty; ``steps`` are (seconds after start, name, action)."""
    environ = {**os.environ, "TERM": "xterm-256color", **(env or {})}
    environ.pop("COLUMNS", None)
    environ.pop("LINES", None)
    started = time.monotonic()
    pid, master = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal already
        try:
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.chdir(cwd)
            os.execvpe(argv[0], argv, environ)
        finally:
            os._exit(127)
    term = Terminal(master, pid)
    pending = sorted(steps or [], key=lambda s: s[0])
    done: list[str] = []
    shown: list[int] = []
    chunks: list[bytes] = []
    code: int | None = None
    while True:
        now = time.monotonic() - started
        while pending and pending[0][0] <= now:
            _, name, action = pending.pop(0)
            action(term)
            done.append(name)
            shown.append(sum(map(len, chunks)))
        if now > deadline_s:
            os.killpg(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            break
        if not term.closed:
            ready, _, _ = select.select([master], [], [], 0.1)
            if ready:
                try:
                    data = os.read(master, 65536)
                except OSError as exc:  # EIO: every writer of the pty has gone
                    if exc.errno != errno.EIO:
                        raise
                    data = b""
                if data:
                    chunks.append(data)
                    continue
                term.close()
        else:
            time.sleep(0.1)
        finished, status = os.waitpid(pid, os.WNOHANG)
        if finished:
            code = os.waitstatus_to_exitcode(status)
            if not term.closed:  # what is still buffered in the pty
                chunks.extend(_drain(master))
                term.close()
            break
    return PtyRun(
        code, b"".join(chunks).decode("utf-8", "replace"), time.monotonic() - started, done, shown
    )


def _drain(master: int) -> list[bytes]:
    out = []
    while select.select([master], [], [], 0.2)[0]:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out.append(data)
    return out


BOX = re.compile(r"[\u2500-\u257f]")


def words(text: str) -> list[str]:
    """The words of what was printed, with box drawing, escapes and layout taken out."""
    return BOX.sub(" ", ANSI.sub("", text)).split()


def missing_from(screen: str, piped: str) -> list[str]:
    """Lines of the piped output whose words do not appear, in order, on the screen (tables
    and long lines may wrap differently on a terminal; the words and their order may not)."""
    shown = " ".join(words(screen))
    lost = []
    for line in piped.splitlines():
        w = words(line)
        if not w:
            continue
        if BOX.search(line):  # a table row: its cells may wrap onto several screen lines
            if any(word not in shown for word in w):
                lost.append(line)
        elif " ".join(w) not in shown:
            lost.append(line)
    return lost
