"""A load run on Ray: one ``LoadWorker`` actor per CPU of every node, each an event loop placing
its share of the calls through the same ``run_slots`` as a local run; the driver gathers their
events as they come and stops them all on a signal."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from typing import Any

from turnscope.distributed import cluster
from turnscope.distributed.cluster import GONE, Node, one_line
from turnscope.errors import EnvironmentProblem
from turnscope.interrupts import signals_to
from turnscope.load.calls import Event, LoadJob
from turnscope.load.plan import LoadPlan

LEAD_S = 2.0  # the start time reaches every node's loops before it comes
POLL_S = 0.5


class LoadWorker:
    """The Ray actor: one event loop placing calls; its events wait here for the driver."""

    def __init__(self, job: LoadJob, cwd: str, name: str) -> None:
        from turnscope.offload import favour_the_loop

        cluster.enter_driver_cwd(cwd)
        favour_the_loop()  # the calls' audio before the bundles being written beside them
        self.job, self.name = job, name
        self.events: list[str] = []
        self.ready: Any = None
        self.stopping: Any = None

    async def prepare(self) -> tuple[str, int]:
        """Ready to call: the loop's name, and the niceness Ray runs it at."""
        from turnscope.load.calls import prepare

        self.ready = await prepare(self.job)
        return self.name, os.nice(0)

    async def run(self, slots: list[Any], start_at: float) -> None:
        from turnscope.load.calls import Stopping, run_slots

        self.stopping = Stopping()
        await run_slots(
            self.job,
            self.ready,
            slots,
            start_at,
            lambda e: self.events.append(e.model_dump_json()),
            worker=self.name,
            stopping=self.stopping,
        )

    async def drain(self) -> list[str]:
        out, self.events = self.events, []
        return out

    async def stop(self, reason: str) -> None:
        from turnscope.interrupts import stop_all

        if self.stopping is not None:
            self.stopping(reason)
        stop_all(reason)  # the live calls end and are written as usual


def run_load_on_ray(
    job: LoadJob,
    plan: LoadPlan,
    address: str,
    on_event: Callable[[Event], None],
    *,
    on_ready: Callable[[list[Node], int], None] | None = None,
) -> tuple[list[str], list[str], dict[int, str], list[str]]:
    """Place the plan's calls on the cluster at ``address``. Returns why it stopped early (a
    signal), the workers that failed (a line each), which worker had each slot, and notes."""
    ray = cluster.connect(address)
    try:
        found = cluster.nodes(ray)
        if not found:
            raise EnvironmentProblem(f"the Ray cluster at {address} has no node with a CPU")
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = ray.remote(LoadWorker)
        actors = []
        for node in found:
            for k in range(max(1, int(node.cpus))):
                if len(actors) >= plan.calls:
                    break
                actors.append(
                    remote.options(
                        num_cpus=1,
                        max_restarts=0,  # a restarted loop would not know its calls
                        scheduling_strategy=NodeAffinitySchedulingStrategy(node.node_id, soft=True),
                    ).remote(job, os.getcwd(), f"{node.address}/{node.node_id[:6]}#{k + 1}")
                )
        notes: list[str] = []
        ready, problems = _prepared(ray, actors, notes)
        assigned = list(zip(ready, plan.split(len(ready)), strict=True))
        owner = {s.index: name for (_, name), share in assigned for s in share}
        if on_ready is not None:
            on_ready(found, len(ready))
        start_at = time.time() + LEAD_S
        runs = {a.run.remote(share, start_at): (a, name) for (a, name), share in assigned}
        stopped: list[str] = []

        def stop(reason: str) -> None:
            stopped.append(reason)
            for a, _ in ready:
                with contextlib.suppress(Exception):
                    a.stop.remote(reason)

        with signals_to(stop):
            live = dict(runs)
            while live:
                done, _ = ray.wait(list(live), num_returns=len(live), timeout=POLL_S)
                _drain(ray, [a for a, _ in live.values()], on_event)
                for ref in done:
                    a, name = live.pop(ref)
                    try:
                        ray.get(ref)
                    except Exception as exc:  # the actor died (killed, out of memory, node gone)
                        if not cluster.alive(ray):
                            problems.insert(0, f"{GONE} ({one_line(exc)[:120]})")
                            live.clear()  # nothing more will come from any of them
                            break
                        problems.append(f"the Ray worker {name} died: {one_line(exc)}")
                    _drain(ray, [a], on_event)
        return stopped, problems, owner, notes
    finally:
        ray.shutdown()


def _prepared(
    ray: Any, actors: list[Any], notes: list[str]
) -> tuple[list[tuple[Any, str]], list[str]]:
    """The actors ready to call (with their names), a line for each that is not; ``notes``
    gets what a reader of the results should know (a loop Ray runs at low priority)."""
    ok, problems = cluster.started(ray, {a.prepare.remote(): a for a in actors})
    for _, (name, niceness) in ok:
        if niceness > 0 and not notes:
            notes.append(
                f"the Ray worker {name} runs at nice {niceness}: its calls lose the CPU to every "
                "other process and send the caller's audio late (start the nodes with "
                "RAY_worker_niceness=0 in their environment)"
            )
    return [(a, name) for a, (name, _) in ok], problems


def _drain(ray: Any, actors: list[Any], on_event: Callable[[Event], None]) -> None:
    for a in actors:
        try:
            batch = ray.get(a.drain.remote(), timeout=30)
        except Exception:  # a dead actor: its run's error says so
            continue
        for text in batch:
            on_event(Event.model_validate_json(text))
