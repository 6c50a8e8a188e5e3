"""One OTLP receiver for a whole load run (``turnscope load --otlp``): the agent exports to one
endpoint, so the driver process listens once and appends every accepted batch, as one JSON line,
to ``agent_spans.jsonl`` in the load folder. Each call of the run reads the batches that arrived
during it from that file (``turnscope.otlp.tap``) and keeps its own spans in its bundle.

The receiver is the single call's (``OtlpReceiver``: HTTP or gRPC, the same body limit, the same
refusals); only where an accepted batch goes differs. It runs on an event loop of its own, on a
thread of the driver: the driver's main thread waits on its worker processes.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, Field

from turnscope import redact
from turnscope.otlp.receiver import OtlpReceiver
from turnscope.otlp.records import MAX_RUN_BYTES, RUN_FILE, OtlpSummary
from turnscope.scoring.otlp_spans import AgentSpan

START_TIMEOUT_S = 30.0
MAX_PROBLEMS = 20  # kinds of bad input said for the run (each is counted in received)


@dataclass(frozen=True)
class SharedSpans:
    """Where a load run's calls find the batches (picklable: it crosses to worker processes)."""

    path: Path
    endpoint: str  # as the agent's exporter is pointed at it


class SpanBatch(BaseModel):
    """One line of agent_spans.jsonl: a batch as received (times: Unix seconds, this machine)."""

    received_unix: float
    spans: list[AgentSpan] = Field(default_factory=list)


class _FileReceiver(OtlpReceiver):
    """The single call's receiver, its accepted batches appended to the run's file."""

    def __init__(self, endpoint: str | None, folder: Path):
        super().__init__(endpoint, folder)
        self.path = folder / RUN_FILE
        self._out: IO[bytes] | None = None
        self._bytes = 0

    async def start(self) -> None:
        await super().start()
        # Opened once listening (a port in use leaves no file behind), before the loop can
        # hand over a batch: both listeners run their handlers on this loop.
        self._out = self.path.open("ab")
        self._bytes = self.path.stat().st_size

    def _keep(self, spans: list[AgentSpan]) -> None:
        self._last_batch = time.monotonic()
        self.doc.received.batches += 1
        self.doc.received.spans += len(spans)
        line = SpanBatch(received_unix=time.time(), spans=spans).model_dump(mode="json")
        data = (redact.scrub(json.dumps(line, ensure_ascii=False)) + "\n").encode("utf-8")
        if self._bytes + len(data) > MAX_RUN_BYTES:
            self.doc.received.dropped_spans += len(spans)
            self._warn(f"{RUN_FILE} reached {MAX_RUN_BYTES >> 20} MiB: later spans are counted, "
                       "not kept")  # fmt: skip
            return
        # one write of the whole line: a call reading meanwhile sees it whole or not yet
        assert self._out is not None  # a batch arrives only once listening
        self._out.write(data)
        self._out.flush()
        self._bytes += len(data)

    def _warn(self, line: str) -> None:
        if len(self.doc.problems) < MAX_PROBLEMS:  # a run of hours: its lines bounded too
            super()._warn(line)

    def close(self) -> None:
        if self._out is not None:
            self._out.close()


class RunReceiver:
    """The load run's receiver on a thread of its own; ``start`` raises InputError as the single
    call's does (a port in use, a bad endpoint), before any call is placed."""

    def __init__(self, endpoint: str | None, folder: Path):
        self._receiver = _FileReceiver(endpoint, folder)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="turnscope-otlp",
                                        daemon=True)  # fmt: skip

    @property
    def shared(self) -> SharedSpans:
        r = self._receiver
        return SharedSpans(r.path, r.doc.endpoint)

    def start(self) -> None:
        self._thread.start()
        try:
            self._call(self._receiver.start())
        except BaseException:
            self.stop()
            raise

    def _call(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(START_TIMEOUT_S)

    def stop(self) -> OtlpSummary:
        """Stop listening (once the calls are over: each has read its batches)."""
        if self._thread.is_alive():
            try:
                self._call(self._receiver.stop())
            finally:
                self._loop.call_soon_threadsafe(self._loop.stop)
                self._thread.join(START_TIMEOUT_S)
        if not self._thread.is_alive():
            self._loop.close()
        self._receiver.close()
        doc = self._receiver.doc
        problems = list(doc.problems)
        if not doc.received.batches:
            problems.append(
                f"no span arrived at {doc.endpoint} during the run: is the agent's OTLP exporter "
                f"pointed at {self._receiver._exporter_url()}?"
            )
        return OtlpSummary(endpoint=doc.endpoint, received=doc.received, problems=problems)
