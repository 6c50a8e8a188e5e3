"""Blocking work off the event loop, on threads of our own.

aiortc encodes every outgoing audio frame on the loop's default executor (a handful of
threads). Our own blocking work (speech synthesis, scoring, writing a bundle) runs here instead:
on those threads it could hold up the encoder and make a live call's audio late.
"""

from __future__ import annotations

import asyncio
import functools
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")

_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def work_pool() -> ThreadPoolExecutor:
    """The process's pool for blocking work of ours (never the loop's default executor)."""
    global _pool
    with _lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=4, thread_name_prefix="turnscope-work")
        return _pool


async def offload(fn: Callable[..., T], /, *args: object, **kwargs: object) -> T:
    """``fn(*args, **kwargs)`` on the work pool, awaited without blocking the loop."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(work_pool(), functools.partial(fn, *args, **kwargs))
