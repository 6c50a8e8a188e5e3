"""Start the stock pipecat bots for a test, in their own venv: the SmallWebRTC one
(tests/interop/pipecat_bot.py) and the telephony-websocket one (tests/interop/pipecat_phone_bot.py).

    with pipecat_bot(tmp_path, greeting=False, reply="short", latency_ms=600) as bot:
        ...  # call bot.url; bot.truth() is the bot's ground-truth log so far
    with pipecat_phone_bot(tmp_path, reply="short") as bot:
        ...  # bot.url is ws://127.0.0.1:PORT/ws; bot.replies(session=call.ids.stream)

Knobs are the bot's flags with underscores: ``reply="long"`` is ``--reply long``,
``ignore_barge_ins=True`` is ``--ignore-barge-ins``, ``greeting=False`` is ``--no-greeting``;
``otlp="http://127.0.0.1:PORT"`` has either bot export its spans there (the phone bot names a
call's conversation by the carrier's stream sid).
The bot runs in ``.venv-pipecat`` (``scripts/setup.sh --dev`` builds it); when that is missing
this raises, so the tests fail rather than skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import selectors
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
BOT = Path(__file__).with_name("pipecat_bot.py")
PHONE_BOT = Path(__file__).with_name("pipecat_phone_bot.py")
VENV_PYTHON = ROOT / ".venv-pipecat" / "bin" / "python"
READY_PREFIX = "pipecat bot ready on "
PHONE_READY_PREFIX = "pipecat phone bot ready on "
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0
# Flags that exist in a --x / --no-x pair (argparse.BooleanOptionalAction in the bot).
NEGATABLE = {"greeting"}


class PipecatBotError(RuntimeError):
    """The pipecat bot could not be started."""


@dataclass
class PipecatBot:
    url: str
    truth_log: Path
    proc: subprocess.Popen
    port: int
    log: Path

    def truth(self, session: str | None = None) -> list[dict]:
        """The bot's ground-truth records so far (a line being written is left out); with
        ``session``, that call's only (the phone bot's session is the carrier's stream id)."""
        if not self.truth_log.exists():
            return []
        out = []
        for line in self.truth_log.read_text(encoding="utf-8").splitlines():
            with contextlib.suppress(json.JSONDecodeError):
                out.append(json.loads(line))
        return out if session is None else [r for r in out if r.get("session") == session]

    def replies(self, session: str | None = None) -> list[dict]:
        """The replies whose audio was played, in order."""
        return [r for r in self.truth(session) if r.get("event") == "reply"]

    def log_tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def pipecat_python() -> Path:
    """The interpreter of .venv-pipecat; a clear error when it has not been built."""
    if not VENV_PYTHON.exists():
        raise PipecatBotError(
            f"{VENV_PYTHON} is missing: the pipecat interop tests need pipecat's own virtual "
            "environment; run scripts/setup.sh --dev (or scripts/setup_pipecat.sh)"
        )
    return VENV_PYTHON


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def knob_flags(knobs: dict[str, Any]) -> list[str]:
    flags: list[str] = []
    for key, value in knobs.items():
        flag = "--" + key.replace("_", "-")
        if value is None:
            continue
        if isinstance(value, bool):
            if value:
                flags.append(flag)
            elif key in NEGATABLE:
                flags.append("--no-" + key.replace("_", "-"))
            continue
        flags += [flag, str(value)]
    return flags


def _wait_ready(proc: subprocess.Popen, deadline: float, prefix: str = READY_PREFIX) -> str:
    """The bot's ready line, or '' if it exited or the deadline passed first."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        buf = b""
        while time.monotonic() < deadline:
            if not sel.select(timeout=max(0.0, min(0.5, deadline - time.monotonic()))):
                if proc.poll() is not None:
                    return ""
                continue
            chunk = os.read(proc.stdout.fileno(), 4096)
            if not chunk:
                return ""
            buf += chunk
            for line in buf.decode(errors="replace").splitlines():
                if line.startswith(prefix):
                    return line
    return ""


def stop(proc: subprocess.Popen, timeout: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM the bot by its PID, wait, then SIGKILL; close its pipes."""
    try:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(proc.pid, signal.SIGKILL)
                proc.wait(timeout=timeout)
    finally:
        for pipe in (proc.stdin, proc.stdout, proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


@contextlib.contextmanager
def pipecat_bot(
    workdir: Path, *, script: Path = BOT, ready_prefix: str = READY_PREFIX, **knobs: Any
) -> Iterator[PipecatBot]:
    """Run the pipecat bot (``script``) on a free 127.0.0.1 port with ``knobs`` until the block
    ends; ready once it prints a line starting with ``ready_prefix`` (the rest is its URL)."""
    python = pipecat_python()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    truth_log = Path(knobs.pop("truth_log", workdir / f"pipecat-truth-{port}.jsonl"))
    log = workdir / f"{script.stem.replace('_', '-')}-{port}.log"
    cmd = [
        str(python),
        str(script),
        "--port",
        str(port),
        "--truth-log",
        str(truth_log),
        *knob_flags(knobs),
    ]
    env = dict(os.environ, ORT_DISABLE_TELEMETRY="1", HF_HUB_OFFLINE="1", PYTHONUNBUFFERED="1")
    env.pop("PYTHONPATH", None)  # nothing of the project's environment leaks into pipecat's
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log_file,  # a file, not a pipe: pipecat logs a lot and nobody reads it live
        )
    try:
        line = _wait_ready(proc, time.monotonic() + READY_TIMEOUT_S, ready_prefix)
        bot = PipecatBot(
            url=line[len(ready_prefix) :].strip() if line else "",
            truth_log=truth_log,
            proc=proc,
            port=port,
            log=log,
        )
        if not line:
            state = (
                f"exited with code {proc.returncode}"
                if proc.poll() is not None
                else f"printed no ready line within {READY_TIMEOUT_S:.0f} s"
            )
            raise PipecatBotError(
                f"the pipecat bot ({script.name}) {state}: {' '.join(cmd)}\n"
                f"--- its log ({log}):\n" + bot.log_tail()
            )
        yield bot
    finally:
        stop(proc)


def pipecat_phone_bot(workdir: Path, **knobs: Any) -> contextlib.AbstractContextManager[PipecatBot]:
    """The telephony-websocket bot (pipecat_phone_bot.py): ``bot.url`` is its ws://.../ws."""
    return pipecat_bot(workdir, script=PHONE_BOT, ready_prefix=PHONE_READY_PREFIX, **knobs)


async def call_bot(url: str, scenario: Path, outdir: Path) -> tuple[Any, Any, Any]:
    """A scripted turnscope call (loopback only) to ``url``: (run, call, caller)."""
    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.asr.settings import load_settings
    from turnscope.capture.webrtc.call import CallOptions
    from turnscope.live_call import place_call

    sc = load_scenario(scenario)
    return await place_call(
        CallOptions(url, loopback_only=True),
        sc,
        load_settings(),
        scenario_contract(sc),
        outdir,
        console=None,
    )


def loop_busy(until_s: float) -> Callable[[Any], None]:
    """``on_connected`` for a call whose own event loop is busy 15 ms of every 20 for its first
    ``until_s``, from 2 ms before each caller frame is due: each goes out some 13 ms late
    (under the 20 ms that is stated late) and the pace never catches up."""

    def arm(call: Any) -> None:
        loop = asyncio.get_running_loop()
        for k in range(1, int(until_s / 0.02)):
            loop.call_at(call.clock.origin + k * 0.02 - 0.002, time.sleep, 0.015)

    return arm


async def call_phone_bot(
    url: str,
    scenario: Path,
    outdir: Path,
    dialect: str = "twilio",
    on_connected: Callable[[Any], None] | None = None,
) -> tuple[Any, Any, Any]:
    """A scripted turnscope phone-line call (turnscope plays the carrier, ``dialect``) to the
    media-stream websocket ``url``: (run, call, caller); ``on_connected`` as place_call's."""
    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.asr.settings import load_settings
    from turnscope.capture.telephony.call import TelephonyOptions
    from turnscope.live_call import place_call

    sc = load_scenario(scenario)
    return await place_call(
        TelephonyOptions(url, dialect=dialect),  # type: ignore[arg-type]
        sc,
        load_settings(),
        scenario_contract(sc),
        outdir,
        console=None,
        on_connected=on_connected,
    )
