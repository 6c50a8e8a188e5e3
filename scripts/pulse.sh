#!/usr/bin/env bash
# Virtual sound devices for a headless machine (tests, CI, trying `turnscope call --device`):
# a private PulseAudio with two null sinks, exposed to PortAudio as caller_out/caller_in and
# agent_out/agent_in (ALSA pulse PCMs in $DIR/asoundrc).
#   scripts/pulse.sh start    start it, or reuse the one already running (idempotent)
#   scripts/pulse.sh stop     stop it, only if `start` started it
#   scripts/pulse.sh env      the variables for other shells: eval "$(scripts/pulse.sh env)"
#   scripts/pulse.sh status
# DIR is $TURNSCOPE_PULSE_DIR or /tmp/turnscope-pulse-$UID; turnscope finds it there by itself.
set -euo pipefail
cd "$(dirname "$0")/.."
exec .venv/bin/python -m turnscope.capture.device.pulse "$@"
