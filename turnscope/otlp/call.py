"""The receiver's life around one call (place_call's hooks)."""

from __future__ import annotations

from pathlib import Path

from turnscope.errors import InputError
from turnscope.otlp.receiver import OtlpReceiver


async def start_receiver(
    endpoint: str | None, outdir: Path, agent_trace: Path | None
) -> OtlpReceiver | None:
    """Listening before the call connects (None without ``endpoint``)."""
    if endpoint is None:
        return None
    if agent_trace is not None:
        raise InputError("give --otlp or --agent-trace for a call, not both")
    receiver = OtlpReceiver(endpoint, outdir)
    await receiver.start()
    return receiver


async def stop_receiver(receiver: OtlpReceiver | None) -> None:
    if receiver is not None:
        await receiver.stop()
