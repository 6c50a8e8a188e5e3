"""Shared test helpers."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
STARTER = ROOT / "configs" / "suites" / "voice_starter.json"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
# pytest-xdist's workers get COLUMNS=80: the CLI's tables would wrap in the output the tests read
# (the CLI's own default off a terminal is wide; tests/test_bundle.py runs it narrow).
os.environ.pop("COLUMNS", None)


async def serve_offer(handler) -> tuple[Any, str]:
    """An HTTP server on 127.0.0.1 answering POST /api/offer with ``handler``: (runner, url)."""
    from aiohttp import web

    app = web.Application()
    app.router.add_post("/api/offer", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    return runner, f"http://127.0.0.1:{port}/api/offer"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on (at the time of asking)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def regression_suite(folder: Path, tasks: int) -> Path:
    """The first ``tasks`` synthetic fixtures of the regression suite, paths made absolute,
    as ``folder/suite.json``."""
    import json

    source = ROOT / "configs" / "suites" / "voice_regression.json"
    data = json.loads(source.read_text())
    data["tasks"] = data["tasks"][:tasks]
    for t in data["tasks"]:
        synth = t["fixture"]["synth"]
        synth["scenario"] = str((source.parent / synth["scenario"]).resolve())
    path = folder / "suite.json"
    path.write_text(json.dumps(data))
    return path


@contextlib.contextmanager
def reference_agent(scenario: Path, *flags: str) -> Iterator[str]:
    """The reference agent (`turnscope agent`) playing ``scenario`` (with ``flags``: its other
    options) in its own process on a free 127.0.0.1 port, until the block ends: its offer URL."""
    port = free_port()
    proc = subprocess.Popen(
        [*turnscope_exe(), "agent", "--port", str(port), "--scenario", str(scenario), *flags],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        line = proc.stdout.readline()
        assert "reference agent on" in line, line + proc.stdout.read()
        yield f"http://127.0.0.1:{port}/api/offer"
    finally:
        proc.terminate()
        proc.wait(10)


def turnscope_exe() -> list[str]:
    """The installed console script, falling back to `python -m`."""
    exe = Path(sys.executable).with_name("turnscope")
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "turnscope"]


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process: returns (exit_code, stdout, stderr)."""
    from turnscope.cli.main import main

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        captured = capsys.readouterr()
        return code, captured.out, captured.err

    return run


@pytest.fixture
def run_exe():
    """Run the real console script in a subprocess."""

    def run(*args: str, cwd: Path | None = None, timeout: float = 120, env=None):
        return subprocess.run(
            [*turnscope_exe(), *args],
            cwd=cwd or ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
        )

    return run


@pytest.fixture(scope="session")
def sample_bundle(tmp_path_factory) -> Path:
    """One real replay of the sample call (a bundle), shared by the tests that only read it."""
    from turnscope.cli.main import main

    out = tmp_path_factory.mktemp("sample") / "refund"
    code = main(
        [
            "replay",
            str(ROOT / "recordings" / "refund-call.wav"),
            "--reference",
            str(ROOT / "recordings" / "refund-call.reference.json"),
            "--suite",
            str(STARTER),
            "--task",
            "refund-call",
            "-q",
            "-o",
            str(out),
        ]
    )
    assert code == 0
    return out
