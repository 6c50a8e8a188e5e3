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
    from turnscope.asr.partial import PartialRequest, PartialText
    from turnscope.asr.transcriber import Job, Transcription

T = TypeVar("T")


@dataclass
class _Waiting:
    job: Job
    asr: AsrSettings
    confirm: ConfirmSettings | None
    future: asyncio.Future[Transcription]


@dataclass(eq=False)
class _Wanted:
    """A partial transcript a call wants: ``build`` gives its request when the worker takes it
    (the freshest audio), or None when it is no longer wanted."""

    build: Callable[[], PartialRequest | None]
    asr: AsrSettings
    future: asyncio.Future[PartialText]


@dataclass
class Batcher:
    """The queue in front of the ASR worker, one per event loop. Finished utterances go first;
    partial transcripts go when none waits, every call's together as one batch."""

    waiting: list[_Waiting] = field(default_factory=list)
    wanted: list[_Wanted] = field(default_factory=list)
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
        self.wanted = [w for w in self.wanted if not w.future.done()]
        if self.busy or not (self.waiting or self.wanted):
            return
        head = self.waiting[0] if self.waiting else self.wanted[0]
        loading = _model_loading(head.asr)
        loop = head.future.get_loop()
        if loading is not None:  # the first batch waits for the model, filling meanwhile
            self.busy = True
            loading.add_done_callback(_on_loop(loop, lambda _f: self._resume()))
            return
        if not self.waiting:
            self._send_partials()
            return
        size = head.asr.batch_size
        batch = [w for w in self.waiting if (w.asr, w.confirm) == (head.asr, head.confirm)]
        batch = batch[:size]
        chosen = {id(w) for w in batch}
        self.waiting = [w for w in self.waiting if id(w) not in chosen]
        futures = [w.future for w in batch]
        self._to_worker(loop, futures, transcribe_batch, [w.job for w in batch], head.asr,
                        head.confirm)  # fmt: skip

    def partial(
        self, build: Callable[[], PartialRequest | None], asr: AsrSettings
    ) -> asyncio.Future[PartialText]:
        """A partial transcript of a running utterance, decoded once no finished utterance
        waits, with every other call's wanted meanwhile (a live turn's transcription waits at
        most for one batch of partials already running)."""
        future: asyncio.Future[PartialText] = asyncio.get_running_loop().create_future()
        self.wanted.append(_Wanted(build, asr, future))
        self._send()
        return future

    def _send_partials(self) -> None:
        from turnscope.asr.partial import transcribe_partials

        wanted = self.wanted
        head = wanted[0]
        batch = [w for w in wanted if w.asr == head.asr][: head.asr.batch_size]
        self.wanted = [w for w in wanted if w not in batch]
        requests = [(w, w.build()) for w in batch]
        for w, r in requests:
            if r is None:
                w.future.cancel()
        sent = [(w, r) for w, r in requests if r is not None]
        if not sent:
            self._send()
            return
        futures = [w.future for w, _ in sent]
        self._to_worker(head.future.get_loop(), futures, transcribe_partials,
                        [r for _, r in sent], head.asr)  # fmt: skip

    def _to_worker(
        self, loop: asyncio.AbstractEventLoop, futures: list[asyncio.Future],
        fn: Callable[..., list], *args: object,
    ) -> None:  # fmt: skip
        """Run one batch on the worker; each of ``futures`` gets its item of the result."""
        self.busy = True
        pool, done = _on_worker(fn, *args)
        done.add_done_callback(_on_loop(loop, lambda f: self._done(pool, futures, f)))

    def _resume(self) -> None:
        self.busy = False
        self._send()

    def _done(self, pool: ProcessPoolExecutor, futures: list[asyncio.Future], done: Future) -> None:
        """The worker finished a batch: each waiter gets its result (or the worker's error)."""
        self.busy = False
        try:
            with _worker_errors(pool):
                results = done.result()
        except BaseException as exc:  # the worker died or the decode failed: each waiter hears
            for f in futures:
                if not f.done():
                    f.set_exception(exc)
        else:
            for f, result in zip(futures, results, strict=True):
                if not f.done():
                    f.set_result(result)
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
