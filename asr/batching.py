"""Utterances waiting for the ASR worker go to it together.

One batch is on the worker at a time; what arrives meanwhile waits and goes as the next batch
(up to ``asr.batch_size``). A live call's turns, seconds apart, each go alone the moment they end,
as before; a fast replay, the calls of a suite run in one process, or many live calls at once
fill batches by themselves, and the model decodes them in one pass (``decode.py``). Texts do not
depend on what an utterance was batched with, so how batches form does not change a result.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

from turnscope.asr.settings import AsrSettings, ConfirmSettings
from turnscope.asr.worker import _loading, _on_worker, _worker_errors

if TYPE_CHECKING:
    from turnscope.asr.transcriber import Job, Transcription

T = TypeVar("T")


@dataclass
class _Waiting:
    job: Job
    asr: AsrSettings
    confirm: ConfirmSettings | None
    future: asyncio.Future[Transcription]


@dataclass
class Batcher:
    """The queue in front of the ASR worker, one per event loop."""

    waiting: list[_Waiting] = field(default_factory=list)
    busy: bool = False

    def submit(
        self, job: Job, asr: AsrSettings, confirm: ConfirmSettings | None
    ) -> asyncio.Future[Transcription]:
        future: asyncio.Future[Transcription] = asyncio.get_running_loop().create_future()
        self.waiting.append(_Waiting(job, asr, confirm, future))
        self._send()
        return future

    def _send(self) -> None:
        from turnscope.asr.transcriber import transcribe_batch

        self.waiting = [w for w in self.waiting if not w.future.done()]  # cancelled meanwhile
        if self.busy or not self.waiting:
            return
        head = self.waiting[0]
        loading = _model_loading(head.asr)
        loop = head.future.get_loop()
        if loading is not None:  # the first batch waits for the model, filling meanwhile
            self.busy = True
            loading.add_done_callback(_on_loop(loop, lambda _f: self._resume()))
            return
        size = head.asr.batch_size
        batch = [w for w in self.waiting if (w.asr, w.confirm) == (head.asr, head.confirm)]
        batch = batch[:size]
        chosen = {id(w) for w in batch}
        self.waiting = [w for w in self.waiting if id(w) not in chosen]
        self.busy = True
        pool, done = _on_worker(transcribe_batch, [w.job for w in batch], head.asr, head.confirm)
        done.add_done_callback(_on_loop(loop, lambda f: self._done(pool, batch, f)))

    def offer(self, fn: Callable[..., T], *args: object) -> asyncio.Future[T] | None:
        """Run ``fn(*args)`` on the worker now if it is idle and nothing waits for it, else
        None (a partial transcript: dropped, never queued, so a live turn's transcription waits
        at most for one partial already running)."""
        self.waiting = [w for w in self.waiting if not w.future.done()]
        if self.busy or self.waiting:
            return None
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self.busy = True
        pool, done = _on_worker(fn, *args)
        done.add_done_callback(_on_loop(loop, lambda f: self._offered(pool, future, f)))
        return future

    def _offered(self, pool: ProcessPoolExecutor, future: asyncio.Future, done: Future) -> None:
        self.busy = False
        try:
            with _worker_errors(pool):
                result = done.result()
        except BaseException as exc:
            if not future.done():
                future.set_exception(exc)
        else:
            if not future.done():
                future.set_result(result)
        self._send()

    def _resume(self) -> None:
        self.busy = False
        self._send()

    def _done(self, pool: ProcessPoolExecutor, batch: list[_Waiting], done: Future) -> None:
        self.busy = False
        try:
            with _worker_errors(pool):
                results = done.result()
        except BaseException as exc:  # the worker died or the decode failed: each waiter hears
            for w in batch:
                if not w.future.done():
                    w.future.set_exception(exc)
        else:
            for w, tr in zip(batch, results, strict=True):
                if not w.future.done():
                    w.future.set_result(tr)
        self._send()


def _on_loop(
    loop: asyncio.AbstractEventLoop, fn: Callable[[Future], None]
) -> Callable[[Future], None]:
    """A done-callback for a worker future that runs ``fn`` on ``loop`` (the future completes on
    another thread); once the loop has closed nobody waits any more, and nothing runs."""

    def back(f: Future) -> None:
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(fn, f)

    return back


def _model_loading(asr: AsrSettings) -> Future | None:
    """The worker's model load still under way for ``asr`` (``Transcriber.preload``), if any."""
    from turnscope.asr.transcriber import model_spec

    started = _loading.get(model_spec(asr))
    return None if started is None or started[1].done() else started[1]


_batchers: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Batcher] = (
    weakref.WeakKeyDictionary()
)


def batcher() -> Batcher:
    """The running event loop's batcher (every pipeline on the loop shares it)."""
    loop = asyncio.get_running_loop()
    found = _batchers.get(loop)
    if found is None:
        found = _batchers[loop] = Batcher()
    return found
