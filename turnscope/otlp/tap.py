"""A load run's call, taking its own spans from the run's one receiver (``shared.py``).

The tap stands where the single call's receiver stands (a pipeline sink that knows when the
call's audio ends; its ``path`` the call's agent trace): it notes where the run's file ends as
the call begins, waits after the call as the receiver does (a batch after the end, then quiet
1 s; 3 s at most), reads what arrived in between, keeps the spans of this call's conversation
and writes them as the call's own ``agent_spans.json``. From there the breakdown is the single
call's, read by the same code.

Which spans are the call's: those of any trace in which a span names the call's id (WebRTC:
the agent's session id; a phone line: the carrier's stream or call sid) in any attribute;
else, when only one conversation overlapped the call, that one; else none ("not separable").
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

from turnscope.asr.settings import Settings
from turnscope.capture.clock import CallClock
from turnscope.capture.source import SourceInfo
from turnscope.jsonio import write_json
from turnscope.offload import offload
from turnscope.otlp.receiver import GRACE_S, MAX_SPANS, QUIET_S, SPANS_FILE
from turnscope.otlp.records import SpansBy
from turnscope.otlp.shared import SharedSpans, SpanBatch
from turnscope.pipeline import Sink
from turnscope.scoring.otlp_spans import AgentSpan, AgentSpans, choose_call

MAX_READ = 64 * 1024 * 1024  # what one call reads of the run's file (the batches during it)
POLL_S = 0.1
WINDOW_S = 2.0  # as choose_call's: a span this close to the call's ends may be its


def call_ids(details: dict[str, Any]) -> list[str]:
    """The ids an agent may put in its spans for this call: WebRTC's session id, a phone line's
    stream and call sid."""
    ids = details.get("ids") if isinstance(details.get("ids"), dict) else {}
    found = [details.get("session_id"), ids.get("stream"), ids.get("call")]
    return [str(i) for i in found if i]


def _names(span: AgentSpan, ids: set[str]) -> bool:
    return any(isinstance(v, str) and v in ids for v in span.attributes.values())


def this_calls(
    spans: list[AgentSpan], ids: list[str], window: tuple[float, float] | None
) -> tuple[list[AgentSpan], SpansBy, int]:
    """The call's spans among the run's, how they were told, and how many conversations the
    spans held."""
    by_trace = {s.trace_id: s.conversation() for s in spans if s.conversation() != s.trace_id}
    conversations = len({by_trace.get(s.trace_id, s.conversation()) for s in spans})
    if not spans:
        return [], SpansBy.NONE, 0
    wanted = set(ids)
    traces = {s.trace_id for s in spans if _names(s, wanted)}
    mine = [s for s in spans if s.trace_id in traces or _names(s, wanted)]
    if mine:
        return mine, SpansBy.OWN_ID, conversations
    chosen, why = choose_call(spans, window, None)
    if why:
        return [], SpansBy.NOT_SEPARABLE, conversations
    return chosen, (SpansBy.ONLY_ONE if chosen else SpansBy.NONE), conversations


def read_batches(path: Path, start: int) -> tuple[list[AgentSpan], int]:
    """The spans of the whole lines from byte ``start`` of the run's file (MAX_READ at most),
    and the batches they came in."""
    spans: list[AgentSpan] = []
    batches = 0
    with path.open("rb") as f:
        f.seek(start)
        data = f.read(MAX_READ)
    for line in data[: data.rfind(b"\n") + 1].splitlines():  # a line being written: not yet
        try:
            batch = SpanBatch.model_validate(json.loads(line))
        except ValueError:
            continue
        batches += 1
        spans += batch.spans
    return spans, batches


class SpansTap(Sink):
    """One call's spans from the run's receiver, written to its bundle as agent_spans.json."""

    def __init__(self, shared: SharedSpans, outdir: Path):
        self.shared = shared
        self.path = outdir / SPANS_FILE
        self._start = self._size()
        self._info: SourceInfo | None = None
        self._ended_unix = 0.0
        self._written: asyncio.Task[None] | None = None
        self.clock: CallClock | None = None  # as the receiver's (unused: no live view in a load)

    def _size(self) -> int:
        try:
            return self.shared.path.stat().st_size
        except OSError:
            return 0

    def on_start(self, info: SourceInfo, settings: Settings) -> None:
        self._info = info

    def on_audio_end(self) -> None:
        self._ended_unix = time.time()
        self._written = asyncio.get_running_loop().create_task(self._write_after_grace())

    async def _write_after_grace(self) -> None:
        """As the receiver waits: a batch after the end then quiet, or the grace is over (any
        call's batch counts: the file is the run's)."""
        ended = time.monotonic()
        size, grew = self._size(), 0.0
        while True:
            await asyncio.sleep(POLL_S)
            now = time.monotonic()
            if (s := self._size()) != size:
                size, grew = s, now
            if (grew and now - grew >= QUIET_S) or now - ended >= GRACE_S:
                break
        details = self._info.details if self._info is not None else {}
        await offload(self.write, details)

    def write(self, details: dict[str, Any]) -> Path:
        """Read, choose and write (off the event loop: other calls are live)."""
        doc = AgentSpans(endpoint=self.shared.endpoint)
        try:
            spans, doc.received.batches = read_batches(self.shared.path, self._start)
        except OSError as exc:
            spans = []
            doc.problems.append(f"the run's {self.shared.path.name} could not be read: {exc}")
        origin = details.get("clock_origin_unix")
        window = None if origin is None else (origin - WINDOW_S, self._ended_unix + WINDOW_S)
        ids = call_ids(details)
        mine, by, conversations = this_calls(spans, ids, window)
        doc.spans = mine[:MAX_SPANS]
        doc.received.spans = len(mine)
        doc.received.dropped_spans = max(0, len(mine) - MAX_SPANS)
        if by is SpansBy.NOT_SEPARABLE:
            named = " / ".join(ids) or "none known"
            doc.problems.append(
                f"not separable: the spans of {conversations} conversations arrived during this "
                f"call and none names its id ({named}); the agent can put it in its spans' "
                "conversation.id"
            )
        elif by is SpansBy.NONE and not doc.problems:
            doc.problems.append(
                f"no span of this call arrived at {self.shared.endpoint} (the run's receiver) "
                "during it: is the agent's OTLP exporter pointed there?"
            )
        details["otlp"] = {"spans_by": by.value, "conversations": conversations,
                           "kept": len(doc.spans)}  # fmt: skip
        return write_json(self.path, doc.model_dump(mode="json"))

    async def stop(self) -> None:
        if self._written is not None and not self._written.done():
            self._written.cancel()
