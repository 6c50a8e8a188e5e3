"""Keep dependencies from contacting the network on their own (hub lookups, telemetry)."""

from __future__ import annotations

import os

_done = False


def ensure_offline() -> None:
    """Set the offline switches before faster-whisper / onnxruntime are used. Idempotent."""
    global _done
    if _done:
        return
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    try:
        import onnxruntime

        onnxruntime.disable_telemetry_events()
    except Exception:  # onnxruntime absent or without the switch: nothing to disable
        pass
    _done = True
