"""The ASR worker: one spawned process per harness process, below the live call, shared by
every call (``asr_pool``).

The transcriber submits with ``_on_worker`` and awaits under ``_worker_errors``; ``_loaded`` is
what the current worker has loaded and ``_loading`` what it is loading (both forgotten when the
worker is replaced or stopped).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
import time
import types
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TYPE_CHECKING

from turnscope.errors import EnvironmentProblem

if TYPE_CHECKING:
    from turnscope.asr.model import ModelSpec

# The ASR runs below the live call, not at idle priority: SCHED_IDLE (and nice 19, nearly the
# same) gets no CPU while any other program keeps the cores busy, so an agent with a local model
# on the same machine held every turn's text until the call was over (13 s median after each
# turn; benchmarks/asr_priority.py). At nice 10 the texts are back 1.7 s after each turn beside
# such a neighbour, and 8 calls at once on 2 cores send 6 caller frames 20-28 ms late (none at
# idle): the loop still comes first.
ASR_NICENESS = 10
ASR_IDLE = False  # SCHED_IDLE on top (the old setting, kept for that benchmark to measure)


def _asr_process_init(niceness: int = ASR_NICENESS, idle: bool = ASR_IDLE) -> None:
    """The ASR process runs below the live call (``niceness``) and leaves Ctrl-C to its parent
    (which ends the call cleanly and still needs the model for the turns already captured);
    the model's threads, created later from this one, inherit its priority."""
    with contextlib.suppress(AttributeError, OSError):
        os.nice(niceness)
    if idle:
        with contextlib.suppress(AttributeError, OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # a closed terminal: the parent decides too
    threading.Thread(target=_exit_with_parent, args=(os.getppid(),), daemon=True).start()


def _exit_with_parent(parent: int) -> None:
    """A worker whose parent was killed (SIGKILL, a timeout) must not live on, model loaded."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


_pool_lock = threading.Lock()
_shared_pool: ProcessPoolExecutor | None = None


def asr_pool() -> ProcessPoolExecutor:
    """The process's one ASR worker, a separate process: concurrent calls queue for the model
    instead of fighting over the cores (CTranslate2 already uses cpu_threads per transcription).

    A process, not a thread: faster-whisper runs Python between the model's calls, and a
    low-priority thread holding the GIL stalls the event loop whenever the machine is busy
    (measured: 8 concurrent live calls on 2 cores sent caller audio up to 6.6 s late with a
    niced ASR thread; the GIL is only the live loop's now).
    """
    global _shared_pool
    with _pool_lock:
        if _shared_pool is None:
            _shared_pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),  # no fork of a threaded process
                initializer=_asr_process_init,
                initargs=(ASR_NICENESS, ASR_IDLE),
            )
        return _shared_pool


_loaded: set[ModelSpec] = set()  # models the current ASR process has loaded
# Loads started by ``Transcriber.preload`` and not yet waited for: (pool, future) by model.
_loading: dict[ModelSpec, tuple[ProcessPoolExecutor, Future[None]]] = {}


def _reset_broken_pool(pool: ProcessPoolExecutor) -> None:
    global _shared_pool
    with _pool_lock:
        if _shared_pool is pool:
            _shared_pool = None
            _loaded.clear()
            _loading.clear()
    pool.shutdown(wait=False, cancel_futures=True)


def _prepare() -> None:
    import faster_whisper  # noqa: F401  (the heavy imports, before the model is known)


def start_asr_worker() -> None:
    """Start the ASR process and its imports now, for a command about to need it: the model
    load that follows (``Transcriber.preload``) then finds them done."""
    _on_worker(_prepare)


def stop_asr_worker() -> None:
    """End the ASR process now, whatever it is doing: for a command that is done with it.

    Interpreter exit would otherwise wait for work nobody needs any more (a replay of a silent
    call exits while the model it preloaded is still loading)."""
    global _shared_pool
    with _pool_lock:
        pool, _shared_pool = _shared_pool, None
        _loaded.clear()
        _loading.clear()
    if pool is None:
        return
    processes = list((getattr(pool, "_processes", None) or {}).values())
    manager = getattr(pool, "_executor_manager_thread", None)  # shutdown forgets it
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    for process in processes:
        with contextlib.suppress(Exception):
            process.join(timeout=2)
    # The executor's manager thread closes its wake-up pipe once it sees the process gone; at
    # interpreter exit CPython 3.11's ``concurrent.futures`` writes to that pipe without a lock,
    # so a close racing the write printed a Bad file descriptor traceback after the command's
    # one line (3 of 100 bad-path runs on a busy machine). With the thread waited for here,
    # exit finds the pipe closed and leaves it alone.
    if manager is not None:
        manager.join(timeout=2)


@contextlib.contextmanager
def _main_left_out() -> Iterator[None]:
    """While the ASR process is spawned, this program's ``__main__`` is a bare module, so the
    child does not run it again (the CLI's own imports, a user's script): it needs only the
    turnscope modules its work names, and starts that much sooner."""
    main = sys.modules.get("__main__")
    sys.modules["__main__"] = types.ModuleType("__main__")
    try:
        yield
    finally:
        if main is not None:
            sys.modules["__main__"] = main


def _submit(pool: ProcessPoolExecutor, fn, *args) -> Future:  # type: ignore[no-untyped-def]
    with _main_left_out():  # the first submit starts the process
        return pool.submit(fn, *args)


def _on_worker(fn, *args) -> tuple[ProcessPoolExecutor, Future]:  # type: ignore[no-untyped-def]
    """Submit to the ASR process; one that died (killed, out of memory) is replaced, and the
    work it lost is one clear error (``_worker_errors``), not a traceback."""
    pool = asr_pool()
    try:
        return pool, _submit(pool, fn, *args)
    except BrokenProcessPool:
        _reset_broken_pool(pool)
        pool = asr_pool()
        return pool, _submit(pool, fn, *args)


@contextlib.contextmanager
def _worker_errors(pool: ProcessPoolExecutor) -> Iterator[None]:
    """A worker that died under ``pool`` (killed, out of memory): the pool is dropped, so the
    next submit starts a new one, and the loss is one clear error."""
    try:
        yield
    except BrokenProcessPool as exc:
        _reset_broken_pool(pool)
        raise EnvironmentProblem(
            f"the ASR worker process died ({exc}); out of memory? "
            "Fewer concurrent calls or a smaller --threads may help"
        ) from None


def _usage() -> tuple[float, float]:
    import resource

    return time.process_time(), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def asr_process_usage() -> tuple[float, float]:
    """The ASR process's CPU time so far (s, all its threads) and peak RSS (MB); benchmarks."""
    _pool, future = _on_worker(_usage)
    return future.result()
