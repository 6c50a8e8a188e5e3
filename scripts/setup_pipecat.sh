#!/usr/bin/env bash
# A separate virtual environment for the interop tests' third-party agent: a stock pipecat bot
# (tests/interop/pipecat_bot.py). pipecat pins its own versions of aiortc, numpy, onnxruntime ...,
# so it lives in .venv-pipecat and the project's .venv stays as turnscope resolves it.
#   scripts/setup_pipecat.sh          (scripts/setup.sh --dev runs it)
# Only pipecat's SmallWebRTC and FastAPI-websocket (phone line) transports, its Silero VAD
# (onnxruntime, no torch) and its runner:
# no LLM, no speech service, no cloud. Idempotent: does nothing when the pinned version imports.
set -euo pipefail
cd "$(dirname "$0")/.."

PIPECAT_VERSION=1.14.0
SPEC="pipecat-ai[webrtc,websocket,silero,runner]==${PIPECAT_VERSION}"
VENV=.venv-pipecat
PY=${PYTHON:-python3}

have() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$PIPECAT_VERSION" >/dev/null 2>&1 <<'PYEOF'
import sys
from importlib.metadata import version

assert version("pipecat-ai") == sys.argv[1]
import aiortc  # noqa: F401  (the webrtc extra)
import onnxruntime  # noqa: F401  (the silero extra)
import pipecat.runner.run  # noqa: F401  (the runner extra)
import pipecat.transports.websocket.fastapi  # noqa: F401  (the websocket extra: phone lines)
PYEOF
}

if have; then
  echo "turnscope setup: pipecat ${PIPECAT_VERSION} ready ($VENV)"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "turnscope setup: creating $VENV (pipecat ${PIPECAT_VERSION})"
  "$PY" -m venv "$VENV"
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
LOG=$VENV/setup-pip.log
if ! "$VENV/bin/python" -m pip install "$SPEC" >"$LOG" 2>&1; then
  tail -n 30 "$LOG" >&2
  echo "turnscope setup: pip install of $SPEC failed (full log: $LOG)" >&2
  exit 1
fi
if ! have; then
  tail -n 30 "$LOG" >&2
  echo "turnscope setup: $SPEC installed but does not import (full log: $LOG)" >&2
  exit 1
fi
echo "turnscope setup: pipecat ${PIPECAT_VERSION} ready ($VENV)"
