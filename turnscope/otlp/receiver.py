"""An OTLP trace receiver that runs for one call: OTLP/HTTP (``POST /v1/traces`` in protobuf or
JSON), or OTLP/gRPC (``grpc://HOST:PORT``, with the ``otlp-grpc`` extra),
on loopback unless told otherwise, bounded (a body limit, a span limit), its spans written to
the bundle as ``agent_spans.json`` once the call has ended and a short grace has passed.

The file is what the latency breakdown reads (as ``--agent-trace`` reads any trace): one code
path for spans received live and spans given after the call.
"""

from __future__ import annotations

import asyncio
import logging
import time
from pathlib import Path

from aiohttp import web

from turnscope.capture.clock import CallClock
from turnscope.errors import InputError
from turnscope.jsonio import MESSAGE_LIMITS, loads, write_json
from turnscope.otlp.grpc_listener import GrpcListener
from turnscope.pipeline import Sink
from turnscope.scoring.otlp_spans import (
    AgentSpan,
    AgentSpans,
    from_otlp_json,
    from_otlp_protobuf,
)

log = logging.getLogger(__name__)
DEFAULT = "127.0.0.1:4318"
GRPC_PORT = 4317
SPANS_FILE = "agent_spans.json"
MAX_BODY = 4 * 1024 * 1024  # an exporter's batch (512 spans by default) is far below
MAX_SPANS = 50_000  # per call: past this, spans are counted, not kept
GRACE_S = 3.0  # after the call: the exporter's last batch (BatchSpanProcessor: every 5 s)
QUIET_S = 1.0  # ... or this long without a batch, once one came after the call ended


def parse_endpoint(text: str | None) -> tuple[str, str, int]:
    """``[grpc://|http://]HOST:PORT`` (either part may be left out: 127.0.0.1; 4318 over HTTP,
    4317 over gRPC) -> (protocol, host, port)."""
    text = text or DEFAULT
    protocol, sep, rest = text.partition("://")
    if not sep:
        protocol, rest = "http", text
    if protocol not in ("http", "grpc"):
        raise InputError(
            f"--otlp {text!r}: the protocol is http:// (the default) or grpc://, "
            f"e.g. {DEFAULT} or grpc://127.0.0.1:{GRPC_PORT}"
        )
    host, _, port = rest.rpartition(":") if ":" in rest else (rest, "", "")
    host = host or "127.0.0.1"
    try:
        number = int(port) if port else (GRPC_PORT if protocol == "grpc" else 4318)
    except ValueError:
        number = -1
    if not 0 < number < 65536:
        raise InputError(f"--otlp {text!r}: give HOST:PORT, e.g. {DEFAULT}")
    return protocol, host, number


class OtlpReceiver(Sink):
    """The receiver; a pipeline sink too, so it knows when the call's audio ends."""

    def __init__(self, endpoint: str | None, outdir: Path):
        self.protocol, self.host, self.port = parse_endpoint(endpoint)
        self.path = outdir / SPANS_FILE
        where = f"{self.host}:{self.port}"
        self.doc = AgentSpans(endpoint=where if self.protocol == "http" else f"grpc://{where}")
        self._runner: web.AppRunner | None = None
        self._grpc: GrpcListener | None = None
        self._last_batch = 0.0
        self._ended: float | None = None
        self._written: asyncio.Task[None] | None = None
        self._warned: set[str] = set()
        self.clock: CallClock | None = None  # the call's, once it is placed (place_call)

    async def start(self) -> None:
        """Listen (InputError when the port is taken: say which, and how to pick another)."""
        if self.protocol == "grpc":
            self._grpc = await GrpcListener.start(self.host, self.port, self.accept)
            return
        app = web.Application(client_max_size=MAX_BODY)
        app.router.add_post("/v1/traces", self._traces)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port)
        try:
            await site.start()
        except OSError as exc:
            await self._runner.cleanup()
            raise InputError(
                f"--otlp {self.host}:{self.port}: cannot listen ({exc.strerror or exc}); "
                "give a free port, e.g. --otlp 127.0.0.1:4319, and point the agent's exporter at it"
            ) from None

    async def stop(self) -> None:
        if self._written is not None and not self._written.done():
            self._written.cancel()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._grpc is not None:
            await self._grpc.stop()
            self._grpc = None

    def spans_so_far(self) -> list[AgentSpan]:
        """The spans received so far (the live view reconciles replies by them as they come)."""
        return self.doc.spans

    def origin_unix(self) -> float | None:
        """The call clock's sample 0 in Unix time, once the call's clock started (the source
        records it only as the call ends)."""
        origin = self.clock.origin if self.clock is not None else None
        return None if origin is None else time.time() - (time.monotonic() - origin)

    def on_audio_end(self) -> None:
        self._ended = time.monotonic()
        self._written = asyncio.get_running_loop().create_task(self._write_after_grace())

    async def _write_after_grace(self) -> None:
        while True:
            now = time.monotonic()
            assert self._ended is not None
            quiet = self._last_batch > self._ended and now - self._last_batch >= QUIET_S
            if quiet or now - self._ended >= GRACE_S:
                break
            await asyncio.sleep(0.1)
        self.write()

    def write(self) -> Path:
        if not self.doc.spans and not self.doc.problems:
            self.doc.problems.append(
                f"no span arrived at {self.doc.endpoint} during the call: is the agent's OTLP "
                f"exporter pointed at {self._exporter_url()}?"
            )
        return write_json(self.path, self.doc.model_dump(mode="json"))

    def _exporter_url(self) -> str:
        if self.protocol == "grpc":
            return f"{self.host}:{self.port} (its gRPC exporter)"
        return f"http://{self.host}:{self.port}/v1/traces"

    def refuse(self, line: str) -> None:
        """A batch refused: counted, and said once per kind."""
        self.doc.received.refused_batches += 1
        self._warn(line)

    def accept(self, body: bytes) -> bool:
        """One protobuf ExportTraceServiceRequest (from either protocol): kept, or refused."""
        try:
            spans = from_otlp_protobuf(body)
        except ValueError as exc:
            self.refuse(f"a batch that is not OTLP traces (protobuf) was refused: {exc}"[:200])
            return False
        self._keep(spans)
        return True

    def _keep(self, spans: list[AgentSpan]) -> None:
        self._last_batch = time.monotonic()
        self.doc.received.batches += 1
        room = MAX_SPANS - len(self.doc.spans)
        self.doc.spans += spans[: max(0, room)]
        self.doc.received.spans += len(spans)
        if len(spans) > room:
            self.doc.received.dropped_spans += len(spans) - max(0, room)
            self._warn(f"more than {MAX_SPANS} spans: the rest are counted, not kept")

    def _warn(self, line: str) -> None:
        """One line per kind of bad input, in the log and in the file."""
        if line not in self._warned:
            self._warned.add(line)
            self.doc.problems.append(line)
            log.warning("otlp: %s", line)

    async def _traces(self, request: web.Request) -> web.Response:
        size = request.content_length
        if size is not None and size > MAX_BODY:  # refused before a byte of it is read
            self.refuse(f"a batch of {size} bytes was refused (over {MAX_BODY // 1048576} MiB)")
            return web.Response(status=413, text="batch too large")
        try:
            body = await request.read()
        except web.HTTPRequestEntityTooLarge:
            self.refuse(f"a batch over {MAX_BODY // 1048576} MiB was refused")
            return web.Response(status=413, text="batch too large")
        kind = request.content_type
        if kind != "application/json":
            ok = self.accept(body)
            return web.Response(
                status=200 if ok else 400,
                body=b"" if ok else b"not an OTLP trace request",
                content_type="application/x-protobuf" if ok else "text/plain",
            )
        try:
            data = loads(body.decode("utf-8"), limits=MESSAGE_LIMITS)
            if not isinstance(data, dict):
                raise ValueError("not an object")
            spans, _bad = from_otlp_json(data)
        except (ValueError, UnicodeDecodeError) as exc:
            self.refuse(f"a batch that is not OTLP traces ({kind}) was refused: {exc}"[:200])
            return web.Response(status=400, text="not an OTLP trace request")
        self._keep(spans)
        return web.Response(body=b"{}", content_type="application/json")
