"""Blocking work off the event loop, on threads of our own.

aiortc encodes every outgoing audio frame on the loop's default executor (a handful of
threads). Our own blocking work (speech synthesis, scoring, writing a bundle) runs here instead:
on those threads it could hold up the encoder and make a live call's audio late.
"""

from __future__ import annotations

import asyncio
import functools
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_pools: dict[str, ThreadPoolExecutor] = {}
# Threads of CPU-bound Python share the GIL with the loop: four writing bundles at once (32
# concurrent calls ending together) held the loop up 250-380 ms and made the calls still live
# send their caller audio that late. Bundles are written one at a time instead.
_WORKERS = {"work": 4, "bundle": 1}


# How long a thread of ours may hold the GIL while the loop's thread waits for it (Python's
# default: 5 ms). Eight noisy-caller calls on two cores (benchmarks/voices.py's live rows),
# six runs each way alternated: the worst caller frame 17.6-201.8 ms late at 5 ms (late frames
# in five of six), 0.5-20.6 ms at 1 ms (one frame over 20 ms in six runs); plain callers, three
# each way: 12-36 ms at 5 ms, 1.5-88 ms at 1 ms (the machine's noise). The lateness fell at
# calls' ends: the bundle thread scoring and writing one call, the loop waiting on the GIL.
LOOP_SWITCH_S = 0.001


def favour_the_loop() -> None:
    """In a process whose event loop sends live calls' audio while threads of ours work beside
    it (a load worker): the GIL handed back to the loop within ``LOOP_SWITCH_S``."""
    sys.setswitchinterval(LOOP_SWITCH_S)


def work_pool(kind: str = "work") -> ThreadPoolExecutor:
    """The process's pool for blocking work of ours (never the loop's default executor):
    ``work`` (synthesis, waiting on other processes) or ``bundle`` (scoring and writing)."""
    with _lock:
        if kind not in _pools:
            _pools[kind] = ThreadPoolExecutor(
                max_workers=_WORKERS[kind], thread_name_prefix=f"turnscope-{kind}"
            )
        return _pools[kind]


async def offload(fn: Callable[..., T], /, *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` on the work pool, awaited without blocking the loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(work_pool(), functools.partial(fn, *args, **kwargs))


async def offload_stoppable(fn: Callable[..., T], /, *args: object, **kwargs: object) -> T:
    """As ``offload``, for long work that can stop part-way: ``fn`` is also given ``stop``, a
    ``threading.Event`` set when the awaiting task is cancelled (a signal ending the run), and
    checks it between its steps. A thread cannot be stopped from outside: without this the
    process, on its way out, would wait for the whole work to finish (a long scenario's speech
    went on synthesising after its bundle was written)."""
    stop = threading.Event()
    try:
        return await offload(fn, *args, stop=stop, **kwargs)
    except asyncio.CancelledError:
        stop.set()
        raise


async def offload_bundle(fn: Callable[..., T], /, *args: object, **kwargs: object) -> T:
    """As ``offload``, on the one-thread pool that scores runs and writes their bundles."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(work_pool("bundle"), functools.partial(fn, *args, **kwargs))
