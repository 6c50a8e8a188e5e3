"""OTLP over gRPC for the call's receiver (``--otlp grpc://HOST:PORT``): the TraceService's
one method, its request bytes handed to the same code that keeps HTTP batches.

gRPC (grpcio, Apache-2.0) is optional, the ``otlp-grpc`` extra: most agents export over HTTP,
and pipecat's docs show the gRPC exporter as often.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from typing import Any

from turnscope.errors import InputError

__all__ = ["EXPORT", "GrpcListener"]

EXPORT = "/opentelemetry.proto.collector.trace.v1.TraceService/Export"
MAX_MESSAGE = 4 * 1024 * 1024  # as over HTTP: an exporter's batch is far below
GRACE_S = 0.5  # a stop lets a batch being received finish


class GrpcListener:
    """A grpc.aio server on HOST:PORT whose Export calls go to ``accept(bytes) -> bool``."""

    def __init__(self, server: Any):
        self._server = server

    @classmethod
    async def start(cls, host: str, port: int, accept: Callable[[bytes], bool]) -> GrpcListener:
        _check_free(host, port)  # before grpc's core logs its own bind failure to stderr
        os.environ.setdefault("GRPC_VERBOSITY", "NONE")  # its core's log is not the user's
        try:
            import grpc
        except ImportError:
            raise InputError(
                f"--otlp grpc://{host}:{port}: OTLP over gRPC needs grpcio; install "
                "turnscope[otlp-grpc], or point the agent's HTTP exporter at --otlp "
                f"{host}:4318"
            ) from None

        async def export(body: bytes, context: Any) -> bytes:
            if not accept(body):
                await context.abort(grpc.StatusCode.INVALID_ARGUMENT, "not OTLP traces")
            return b""  # an empty ExportTraceServiceResponse: everything was taken

        handler = grpc.method_handlers_generic_handler(
            "opentelemetry.proto.collector.trace.v1.TraceService",
            {"Export": grpc.unary_unary_rpc_method_handler(export)},  # raw bytes both ways
        )
        server = grpc.aio.server(
            handlers=[handler],
            options=[
                ("grpc.max_receive_message_length", MAX_MESSAGE),
                ("grpc.so_reuseport", 0),  # a port in use is refused, not shared
            ],
        )
        try:  # taken since the check: the same line
            bound = server.add_insecure_port(f"{host}:{port}")
        except RuntimeError:
            bound = 0
        if not bound:
            raise _in_use(host, port, "the port is in use")
        await server.start()
        return cls(server)

    async def stop(self) -> None:
        await self._server.stop(GRACE_S)


def _check_free(host: str, port: int) -> None:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise _in_use(host, port, exc.strerror or str(exc)) from None


def _in_use(host: str, port: int, why: str) -> InputError:
    return InputError(
        f"--otlp grpc://{host}:{port}: cannot listen ({why}); give a free port, e.g. "
        f"--otlp grpc://{host}:4319, and point the agent's exporter at it"
    )
