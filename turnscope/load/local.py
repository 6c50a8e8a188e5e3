"""A load run on this machine: one worker process (one event loop, its own ASR process) per
core, each placing its share of the calls; the driver collects their events as they come."""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import queue
import signal
import time
from collections.abc import Callable
from typing import Any

from turnscope.errors import EnvironmentProblem
from turnscope.interrupts import signals_to
from turnscope.load.calls import Event, LoadJob
from turnscope.load.plan import Slot

READY_TIMEOUT_S = 300.0  # a worker's start: imports, the caller's speech, the model
LEAD_S = 0.5  # from "everyone is ready" to the first call: the start time reaches every loop


def _loop_main(job: LoadJob, slots: list[Slot], name: str, out: Any, go: Any, start: Any) -> None:
    """A worker process: prepare, say ready, wait for the start, place the calls."""
    import asyncio

    os.setpgrp()  # signals come from the driver, one each (see _stopper)
    from turnscope.offload import favour_the_loop

    favour_the_loop()  # the calls' audio before the bundles being written beside them

    from turnscope.interrupts import stop_on_signals
    from turnscope.load.calls import Stopping, prepare, run_slots

    def send(kind: str, payload: str | None = None) -> None:
        out.put((kind, name, payload))

    async def main() -> None:
        stopping = Stopping()
        with stop_on_signals(stopping):
            # A signal while the caller's lines are spoken stops that too, at once: prepare is
            # cancelled (and its synthesis with it) rather than finished first.
            preparing = asyncio.ensure_future(prepare(job))
            stopped = asyncio.ensure_future(stopping.event.wait())
            await asyncio.wait({preparing, stopped}, return_when=asyncio.FIRST_COMPLETED)
            stopped.cancel()
            if not preparing.done():
                preparing.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await preparing
                return
            ready = preparing.result()
            send("ready")
            while not go.wait(0):  # not go.wait(): a signal meanwhile must reach the loop
                if stopping.reason is not None:
                    return
                await asyncio.sleep(0.05)
            await run_slots(
                job,
                ready,
                slots,
                start.value,
                lambda e: send("event", e.model_dump_json()),
                worker=name,
                stopping=stopping,
            )

    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # a signal before the loop took them over: nothing placed yet
        pass
    except Exception as exc:  # the driver says it in one line
        send("failed", f"{type(exc).__name__}: {exc}")
    finally:
        from turnscope.asr.worker import stop_asr_worker

        stop_asr_worker()
        send("exit")


def _stopper(procs: list[Any], stopped: list[str]) -> Callable[[str], None]:
    """A signal at the driver is passed on to every worker, once per signal received (the
    workers are in process groups of their own: a terminal's Ctrl-C reaches only the driver, so
    each worker hears it once, and a second Ctrl-C ends them as it would a single call)."""
    from turnscope.interrupts import REASONS

    signals = {why: sig for sig, why in REASONS.items()}

    def stop(reason: str) -> None:
        stopped.append(reason)
        for p in procs:
            if p.pid is not None and p.exitcode is None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(p.pid, signals.get(reason, signal.SIGTERM))

    return stop


def run_local(
    job: LoadJob,
    shares: list[list[Slot]],
    on_event: Callable[[Event], None],
    *,
    on_ready: Callable[[float], None] | None = None,
) -> tuple[list[str], list[str]]:
    """Run every share on its own worker process; events go to ``on_event`` as they come.
    Returns why the run stopped early (a signal) and the workers that failed, one line each."""
    ctx = multiprocessing.get_context("spawn")
    out = ctx.Queue()
    go, start = ctx.Event(), ctx.Value("d", 0.0)
    procs = {
        f"loop-{k + 1}": ctx.Process(
            target=_loop_main, args=(job, share, f"loop-{k + 1}", out, go, start), daemon=False
        )
        for k, share in enumerate(shares)
    }
    stopped: list[str] = []
    problems: list[str] = []
    with signals_to(_stopper(list(procs.values()), stopped)):
        for p in procs.values():
            p.start()
        ready: set[str] = set()
        exited: set[str] = set()
        deadline = time.monotonic() + READY_TIMEOUT_S
        while len(exited) < len(procs):
            try:
                kind, name, payload = out.get(timeout=0.5)
            except queue.Empty:
                for name, p in procs.items():
                    if p.exitcode is not None and name not in exited:
                        exited.add(name)  # died without a word (killed, out of memory)
                        problems.append(f"{name} died (exit code {p.exitcode})")
                if not go.is_set() and time.monotonic() > deadline:
                    problems.append(f"a worker was not ready within {READY_TIMEOUT_S:.0f} s")
                    break
                continue
            if kind == "ready":
                ready.add(name)
            elif kind == "event":
                on_event(Event.model_validate_json(payload))
            elif kind == "failed":
                problems.append(f"{name}: {payload}")
            elif kind == "exit":
                exited.add(name)
            if not go.is_set() and ready | exited >= set(procs):
                if not ready:
                    break
                start.value = time.time() + LEAD_S
                if on_ready is not None:
                    on_ready(start.value)
                go.set()
        for p in procs.values():
            p.join(timeout=30)
            if p.exitcode is None:
                p.kill()
    if not go.is_set() and not stopped:
        raise EnvironmentProblem(
            "no worker process could start the calls: " + (problems[0] if problems else "?")
        )
    return stopped, problems
