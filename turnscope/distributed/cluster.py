"""Reaching a Ray cluster, or starting one on this machine: quiet, offline, one clear line when
it is not there.

Ray reads its usage-statistics switch when it is imported and started, so the environment is set
first; no dashboard, no log forwarding; nothing but the cluster's own addresses is contacted.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from turnscope.errors import EnvironmentProblem, InputError
from turnscope.errors import brief as one_line

QUIET_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",  # no usage statistics (Ray's own opt-out)
    "RAY_USAGE_STATS_PROMPT_ENABLED": "0",
    "RAY_DISABLE_DOCKER_CPU_WARNING": "1",
    "RAY_ENABLE_UV_RUN_RUNTIME_ENV": "0",
    "HF_HUB_OFFLINE": "1",  # the workers' faster-whisper: no hub lookups
    # Ray runs its workers at nice 15: a live call placed from one then loses the CPU to every
    # other process (benchmarks/scale.py: 16 calls sent 5557 caller frames late, worst 937 ms).
    "RAY_worker_niceness": "0",
}
PROBE_TIMEOUT_S = 5.0
LOCAL = "local"


@dataclass(frozen=True)
class Node:
    """A live node of the cluster and the CPUs (and GPUs) it offers."""

    node_id: str
    address: str
    cpus: float
    gpus: float


def _ray() -> ModuleType:
    os.environ.update(QUIET_ENV)
    try:
        import ray
    except ImportError:
        raise EnvironmentProblem(
            "Ray is not installed: pip install 'turnscope[ray]' (or scripts/setup.sh --dev)"
        ) from None
    return ray


def enter_driver_cwd(cwd: str | None) -> None:
    """In a worker, the driver's working folder, when this node has it: relative paths the
    driver was given (fixtures, scenarios, output, the synth cache) then mean the same here."""
    if cwd and os.path.isdir(cwd):
        os.chdir(cwd)


def check_address(address: str) -> str:
    """``local``, ``auto``, ``ray://HOST:PORT`` or ``HOST:PORT``; anything else is bad input."""
    if address in (LOCAL, "auto") or address.startswith("ray://"):
        return address
    host, sep, port = address.rpartition(":")
    if sep and host and port.isdigit():
        return address
    raise InputError(
        f"--ray {address!r} is not a cluster address",
        fix="give ray://HOST:10001, HOST:6379, auto, or --ray alone for a local Ray",
    )


def connect(address: str) -> ModuleType:
    """Ray, connected to the cluster at ``address`` (``local``: a new one on this machine)."""
    ray = _ray()
    quiet: dict[str, Any] = {
        "include_dashboard": False,
        "log_to_driver": False,
        "logging_level": "ERROR",
        "configure_logging": True,
    }
    if ray.is_initialized():
        return ray
    if address.startswith("ray://"):
        _client_installed()
    if address not in (LOCAL, "auto"):
        _probe(address)
    try:
        with _stderr_aside():
            if address == LOCAL:
                ray.init(num_cpus=os.cpu_count() or 1, **quiet)
            else:
                quiet.pop("include_dashboard")  # a running cluster has made that choice
                ray.init(address=address, **quiet)
    except (ConnectionError, TimeoutError, RuntimeError) as exc:
        if "token" in repr(exc.__cause__ or exc).lower():  # its message, never the token itself
            raise EnvironmentProblem(
                f"the Ray cluster at {address} wants its authentication token: set "
                "RAY_AUTH_MODE=token and RAY_AUTH_TOKEN_PATH (or RAY_AUTH_TOKEN) as on its nodes"
            ) from None
        raise EnvironmentProblem(
            f"no Ray cluster at {address} ({one_line(exc)}): start one with `ray start "
            "--head`, check the address, or pass --ray alone for a local Ray"
        ) from None
    return ray


# What the Ray client (ray://) needs beyond Ray itself: ``ray[client]`` adds it.
CLIENT_MODULES = ("grpc",)


def _client_installed() -> None:
    """EnvironmentProblem unless the Ray client can run (Ray's own error is an exception of
    no particular kind, raised from inside ``ray.init``)."""
    import importlib.util

    missing = [m for m in CLIENT_MODULES if importlib.util.find_spec(m) is None]
    if missing:
        raise EnvironmentProblem(
            f"--ray ray://... needs the Ray client, which is not installed ({missing[0]} is "
            "missing): pip install 'ray[client]', or give the cluster as HOST:6379 from one of "
            "its nodes"
        )


@contextlib.contextmanager
def _stderr_aside() -> Iterator[None]:
    """While Ray starts or connects, what its C++ core writes to stderr (a line per retry,
    for a minute, when the cluster refuses us) goes to a scratch file: the outcome is ours to
    say, in one line."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as scratch:
        os.dup2(scratch.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


# An HTTP/2 client's connection preface and an empty SETTINGS frame: a gRPC server (Ray's
# control store, its client server) answers them with a SETTINGS frame of its own at once.
HTTP2_HELLO = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
HTTP2_SETTINGS = 4  # the frame type, byte 3 of a frame header


def _probe(address: str) -> None:
    """A TCP connection to the cluster's port and an HTTP/2 greeting, so an address where
    nothing listens, or where something listens that is not Ray (a port that accepts and never
    answers held ``ray.init`` for minutes), is one line within the network timeout."""
    import socket

    from turnscope.timeouts import network_timeout_s

    timeout = network_timeout_s(PROBE_TIMEOUT_S)
    host, _, port = address.removeprefix("ray://").rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=timeout) as conn:
            conn.sendall(HTTP2_HELLO)
            got = b""
            silent = False
            try:
                while len(got) < 4:  # a frame's type is its fourth byte
                    more = conn.recv(9 - len(got))
                    if not more:
                        break
                    got += more
            except TimeoutError:
                silent = not got
    except (OSError, ValueError) as exc:
        raise EnvironmentProblem(
            f"no Ray cluster at {address} ({one_line(exc)}): start one with `ray start "
            "--head`, check the address, or pass --ray alone for a local Ray"
        ) from None
    if len(got) < 4 or got[3] != HTTP2_SETTINGS:
        what = (
            f"it took the connection but said nothing for {timeout:g} s"
            if silent
            else "it took the connection but did not answer as Ray does (gRPC)"
        )
        raise EnvironmentProblem(
            f"no Ray cluster at {address} ({what}): check the address and port (a head "
            "node's GCS, 6379 by default, or ray://HOST:10001 for the Ray client)"
        )


def alive(ray: ModuleType) -> bool:
    """Whether the cluster's control store (GCS) still takes connections: a worker that dies
    with it alive is one worker lost, with it gone the cluster is."""
    import socket

    try:
        host, _, port = ray.get_runtime_context().gcs_address.rpartition(":")
        socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S).close()
    except (OSError, ValueError, AttributeError):
        return False
    return True


GONE = "the Ray cluster went away mid-run"
READY_TIMEOUT_S = 300.0  # a worker's start: the model load, on a busy node


def started(ray: ModuleType, refs: dict[Any, Any]) -> tuple[list[tuple[Any, Any]], list[str]]:
    """Wait for each worker's first call (``refs``: its ObjectRef -> the worker): (worker, what
    it returned) for each that started, a line for each that failed (its error: a node without
    the project or the model) or did not answer in time. None started: one line, to fix."""
    import time

    ok: list[tuple[Any, Any]] = []
    problems: list[str] = []
    pending = list(refs)
    deadline = time.monotonic() + READY_TIMEOUT_S
    while pending:
        left = max(0.1, deadline - time.monotonic())
        done, pending = ray.wait(pending, num_returns=1, timeout=left)
        if not done:
            late = f"a Ray worker did not start within {READY_TIMEOUT_S:.0f} s"
            problems += [late] * len(pending)
            break
        try:
            ok.append((refs[done[0]], ray.get(done[0])))
        except Exception as exc:
            problems.append(one_line(exc))
    if not ok:
        raise EnvironmentProblem(
            f"no Ray worker could start: {problems[0] if problems else '?'} (install turnscope "
            "and its model on every node: see the README's Ray section)"
        )
    return ok, problems


def nodes(ray: ModuleType) -> list[Node]:
    """The cluster's live nodes with CPUs."""
    out = []
    for n in ray.nodes():
        res = n.get("Resources") or {}
        if n.get("Alive") and res.get("CPU", 0) > 0:
            out.append(
                Node(n["NodeID"], n.get("NodeManagerAddress", "?"), res["CPU"], res.get("GPU", 0.0))
            )
    return out
