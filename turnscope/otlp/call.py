"""The receiver's life around one call (place_call's hooks): a call's own receiver
(``turnscope call --otlp``), or a load run's call's tap on the run's one receiver."""

from __future__ import annotations

from pathlib import Path

from turnscope.errors import InputError
from turnscope.otlp.receiver import OtlpReceiver
from turnscope.otlp.shared import SharedSpans
from turnscope.otlp.tap import SpansTap

CallSpans = OtlpReceiver | SpansTap


async def start_receiver(
    endpoint: str | SharedSpans | None, outdir: Path, agent_trace: Path | None
) -> CallSpans | None:
    """Listening before the call connects (None without ``endpoint``); a load run's call
    (``SharedSpans``) notes where the run's batches stand instead."""
    if endpoint is None:
        return None
    if agent_trace is not None:
        raise InputError("give --otlp or --agent-trace for a call, not both")
    if isinstance(endpoint, SharedSpans):
        return SpansTap(endpoint, outdir)
    receiver = OtlpReceiver(endpoint, outdir)
    await receiver.start()
    return receiver


async def stop_receiver(receiver: CallSpans | None) -> None:
    if receiver is not None:
        await receiver.stop()
