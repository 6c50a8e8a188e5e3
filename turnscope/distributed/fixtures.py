"""A suite's fixtures on Ray workers, run by the same ``run_fixture`` as a local bench.

One ``FixtureWorker`` (a Ray actor) per ``asr.cpu_threads`` CPUs of each node, so the work
spreads over the nodes in proportion to their CPUs; each loads the Whisper model once, keeps it,
and runs up to ``PER_WORKER`` fixtures at once on its own event loop (they share its ASR
batches). The driver hands out fixtures as workers free up. A worker that dies (killed, out of
memory, its node gone) is restarted by Ray; its fixtures go to the next free worker, their
half-written bundles cleared first, so nothing is lost or counted twice. A fixture that fails on
its own input is void once with its reason, as locally.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnscope import interrupts
from turnscope.asr.settings import Settings
from turnscope.distributed.cluster import (
    GONE,
    Node,
    alive,
    connect,
    enter_driver_cwd,
    nodes,
    one_line,
    started,
)
from turnscope.errors import EnvironmentProblem
from turnscope.fixture_runner import FixtureRun, void_run
from turnscope.storage import bundle_store, is_remote

PER_WORKER = 4  # fixtures at once on one worker
MAX_ATTEMPTS = 3  # a fixture whose worker died this many times is void
REST_S = 1.0  # a restarting worker that refused its probe is asked again this much later
MAX_RESTART_S = 300.0  # no worker back this long after they all died: the rest is void
STOP_WAIT_S = 60.0  # after Ctrl-C, the fixtures under way this long to end and be written


@dataclass
class _Down:
    """A worker Ray is restarting: its probe (None: to be asked again at ``retry_at``)."""

    worker: Any
    probe: Any
    retry_at: float
    since: float


class _Restarting:
    """Workers Ray is restarting after one died under its fixtures: handed nothing until they
    answer a probe again. A restarting actor refuses what it is handed at once ("temporarily
    unavailable"); handed the died fixtures straight back, every worker killed together spent all
    three attempts of each in a second."""

    def __init__(self) -> None:
        self._down: dict[int, _Down] = {}  # by id(worker)

    def down(self, worker: Any) -> None:
        if id(worker) not in self._down:
            self._down[id(worker)] = _Down(worker, worker.where.remote(), 0.0, time.monotonic())

    def awake(self, workers: list[Any]) -> list[Any]:
        return [w for w in workers if id(w) not in self._down]

    def probes(self) -> list[Any]:
        """The probes to wait on (re-asking those whose wait is over)."""
        now = time.monotonic()
        for d in self._down.values():
            if d.probe is None and d.retry_at <= now:
                d.probe = d.worker.where.remote()
        return [d.probe for d in self._down.values() if d.probe is not None]

    def answered(self, ray: Any, ref: Any) -> bool:
        """Take a finished probe: its worker is back, or asked again later. False: not a probe."""
        from ray.exceptions import RayError

        down = next((d for d in self._down.values() if d.probe is ref), None)
        if down is None:
            return False
        try:
            ray.get(ref)
        except RayError:
            down.probe, down.retry_at = None, time.monotonic() + REST_S
        else:
            del self._down[id(down.worker)]
        return True

    def all_gone_for(self, workers: list[Any]) -> float:
        """How long every worker has been down (0 while one is up)."""
        if len(self._down) < len(workers):
            return 0.0
        return time.monotonic() - max(d.since for d in self._down.values())


@dataclass
class Progress:
    """What the driver has seen so far."""

    total: int
    done: int = 0
    failed: int = 0  # void fixtures (their own input, or workers that kept dying)
    retried: int = 0


@dataclass
class RayRun:
    """The fixtures' results in suite order, and where they ran."""

    runs: list[FixtureRun]
    nodes: list[Node]
    per_node: dict[str, int] = field(default_factory=dict)  # node id -> fixtures run
    devices: dict[str, list[str]] = field(default_factory=dict)  # node id -> its workers' ASR
    retried: int = 0
    warnings: list[str] = field(default_factory=list)
    gone: str | None = None  # the cluster went away: what did not run is void with this reason
    lost: int = 0  # fixtures void because the cluster went away (counted, never read from text)


class FixtureWorker:
    """The Ray actor: the run's settings, the model loaded once, the local pipeline."""

    def __init__(
        self, settings_json: str, suite_path: str | None, runs_dir: str, options: dict[str, Any]
    ) -> None:
        import ray

        from turnscope.asr.transcriber import Transcriber

        enter_driver_cwd(options.get("cwd"))
        self.settings = Settings.model_validate_json(settings_json)
        self.suite_path = Path(suite_path) if suite_path else None
        self.runs = bundle_store(runs_dir if is_remote(runs_dir) else Path(runs_dir))
        self.options = {k: v for k, v in options.items() if k != "cwd"}
        self.node = ray.get_runtime_context().get_node_id()
        Transcriber(self.settings.asr, self.settings.confirm).warm_up()

    def where(self) -> tuple[str, str]:
        """The worker's node, and what its ASR runs on (device, compute type, model)."""
        asr = self.settings.asr
        return self.node, f"{asr.device} {asr.compute_type} {Path(asr.model).name}"

    async def run(self, task: dict[str, Any]) -> tuple[FixtureRun, str]:
        from turnscope.fixture_runner import run_and_publish

        run = await run_and_publish(task, self.suite_path, self.settings, self.runs, **self.options)
        return run, self.node

    async def stop(self, reason: str) -> None:
        """The driver was interrupted: the fixtures under way end now, written as usual (a
        replay cut short is degraded, so void), and any handed over after this is stopped."""
        interrupts.stop_all(reason)


def _start_workers(
    ray: Any,
    found: list[Node],
    settings: Settings,
    suite_path: Path | None,
    runs_dir: Path | str,
    options: dict[str, Any],
) -> list[Any]:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    remote = ray.remote(FixtureWorker)
    per = max(1, settings.asr.cpu_threads or 1)
    workers = []
    for node in found:
        for k in range(max(1, int(node.cpus // per))):
            # A node's GPUs go one each to its first workers, when the settings say what to run
            gpu = settings.asr.on_gpu is not None and k < int(node.gpus)
            workers.append(
                remote.options(
                    num_cpus=min(per, node.cpus),
                    num_gpus=1 if gpu else 0,
                    max_restarts=-1,
                    max_concurrency=PER_WORKER + 1,  # a probe or a stop beside full work
                    scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=True),
                ).remote(
                    (settings.on_gpu() if gpu else settings).model_dump_json(),
                    str(suite_path.resolve()) if suite_path else None,
                    runs_dir if is_remote(runs_dir) else str(Path(runs_dir).resolve()),
                    {**options, "cwd": os.getcwd()},
                )
            )
    return workers


def _ready(
    ray: Any, workers: list[Any], devices: dict[str, list[str]]
) -> tuple[list[Any], list[str]]:
    """The workers that started (model loaded), their devices by node; a line for each that
    did not."""
    ok, problems = started(ray, {w.where.remote(): w for w in workers})
    for _, (node, device) in ok:
        devices.setdefault(node, []).append(device)
    return [w for w, _ in ok], problems


def run_on_ray(
    tasks: Sequence[dict[str, Any]],
    suite_path: Path | None,
    settings: Settings,
    runs_dir: Path | str,
    *,
    address: str,
    options: dict[str, Any],
    progress: Callable[[Progress], None] | None = None,
) -> RayRun:
    """Run every task's fixture on the cluster at ``address``; results in suite order."""
    ray = connect(address)
    try:
        found = nodes(ray)
        if not found:
            raise EnvironmentProblem(f"the Ray cluster at {address} has no node with a CPU")
        devices: dict[str, list[str]] = {}
        launched = _start_workers(ray, found, settings, suite_path, runs_dir, options)
        workers, problems = _ready(ray, launched, devices)
        out = _dispatch(ray, list(tasks), suite_path, workers, progress)
        out.nodes, out.devices = found, devices
        out.warnings = [f"a Ray worker did not start: {p}" for p in problems]
        return out
    finally:
        ray.shutdown()


def _dispatch(
    ray: Any,
    tasks: list[dict[str, Any]],
    suite_path: Path | None,
    workers: list[Any],
    progress: Callable[[Progress], None] | None,
) -> RayRun:
    """Keep every worker at ``PER_WORKER`` fixtures until all have a result. A signal (Ctrl-C,
    SIGTERM) hands out nothing more and stops the fixtures under way, as a local bench does."""
    stopped: list[str] = []

    def stop(reason: str) -> None:
        if not stopped:
            interrupts.stop_all(reason)  # the driver's record of it (SuiteRun.interrupted)
            for w in workers:
                with contextlib.suppress(Exception):
                    w.stop.remote(reason)
        stopped.append(reason)

    with interrupts.signals_to(stop):
        return _hand_out(ray, tasks, suite_path, workers, progress, stopped)


def _hand_out(
    ray: Any,
    tasks: list[dict[str, Any]],
    suite_path: Path | None,
    workers: list[Any],
    progress: Callable[[Progress], None] | None,
    stopped: list[str],
) -> RayRun:
    from ray.exceptions import RayError, RayTaskError

    state = Progress(len(tasks))
    results: list[FixtureRun | None] = [None] * len(tasks)
    attempts = [0] * len(tasks)
    queue = deque(range(len(tasks)))
    load = {id(w): 0 for w in workers}
    flying: dict[Any, tuple[int, Any]] = {}
    per_node: dict[str, int] = {}
    gone: str | None = None
    restarting = _Restarting()
    stop_by: float | None = None
    while (queue and gone is None and not stopped) or flying:
        if stopped and stop_by is None:
            stop_by = time.monotonic() + STOP_WAIT_S
        if stop_by is not None and time.monotonic() > stop_by:
            for k, _ in flying.values():  # a worker that does not end: void, not waited for
                why = f"{stopped[0]}: its Ray worker did not end it within {STOP_WAIT_S:.0f} s"
                results[k] = void_run(tasks[k], suite_path, why)
            break
        awake = restarting.awake(workers)
        while queue and gone is None and not stopped and awake:  # to the least loaded worker
            w = min(awake, key=lambda w: load[id(w)])
            if load[id(w)] >= PER_WORKER:
                break
            k = queue.popleft()
            attempts[k] += 1
            flying[w.run.remote(tasks[k])] = (k, w)
            load[id(w)] += 1
        if not flying and restarting.all_gone_for(workers) > MAX_RESTART_S:
            gone = f"no Ray worker came back within {MAX_RESTART_S:.0f} s of dying"
            break
        waiting = [*flying, *restarting.probes()]
        if not waiting:  # every worker restarting, each to be asked again
            time.sleep(REST_S / 4)
            continue
        done, _ = ray.wait(waiting, num_returns=1, timeout=1.0)
        for ref in done:
            if restarting.answered(ray, ref):
                continue
            k, w = flying.pop(ref)
            load[id(w)] -= 1
            try:
                run, node = ray.get(ref)
            except RayTaskError as exc:  # the fixture's own failure, outside run_fixture's care
                why = f"{type(exc.cause).__name__}: {exc.cause}"
                results[k] = void_run(tasks[k], suite_path, why)
            except RayError as exc:  # the worker died (killed, out of memory, node gone)
                restarting.down(w)
                if gone is None and not stopped and not alive(ray):
                    gone = f"{GONE} ({one_line(exc)[:120]})"
                if gone is not None and not stopped:
                    queue.appendleft(k)
                    continue
                if attempts[k] < MAX_ATTEMPTS and not stopped:
                    state.retried += 1
                    queue.appendleft(k)
                    continue
                why = (  # after a signal the worker's death is the signal's: never retried
                    f"{stopped[0]}: its Ray worker ended ({one_line(exc)})"
                    if stopped
                    else f"its Ray worker died {attempts[k]} times ({one_line(exc)})"
                )
                results[k] = void_run(tasks[k], suite_path, why)
            else:
                results[k] = run
                per_node[node] = per_node.get(node, 0) + 1
            state.done += 1
            state.failed += results[k].scores.verdict == "void"  # type: ignore[union-attr]
        if progress is not None:
            progress(state)
    for k in queue:  # never ran: the cluster went away, or a signal came first
        why = gone or (f"not run: {stopped[0]}" if stopped else GONE)
        results[k] = void_run(tasks[k], suite_path, why)
    run = RayRun([r for r in results if r is not None], [], per_node, retried=state.retried)
    run.gone, run.lost = gone, len(queue) if gone else 0
    return run
