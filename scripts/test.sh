#!/usr/bin/env bash
# The test suite, as CI runs it: every test file on three pytest-xdist workers, then the files
# marked `solo` on their own. Three workers on 2 cores, because most of a test's time is a real
# call waiting on the clock: with two the cores were 50-80% idle (measured earlier) and the run
# took 15.6 min, with three 11.0-11.4 (~12% idle, vmstat). The solo files time an agent's turns to within tens of
# milliseconds of what a stock pipecat bot logged, over phone-line calls it serves several at
# once; beside another worker's real calls on a 2-core runner their tails moved past 60-100 ms.
# Extra arguments go to both runs (e.g. `-x`, `-k carrier`). The slowest tests are listed: the
# suite's budget is about 10 minutes on 2 cores (it takes ~19: 12.8 + 5.8, 2026-12-08).
set -uo pipefail
cd "$(dirname "$0")/.."
rest=0
.venv/bin/python -m pytest -m "not solo" --durations=30 "$@" || rest=$?
solo=0
.venv/bin/python -m pytest -n 0 -m solo "$@" || solo=$?
# 5 is "no test selected": arguments naming only solo files, or none, leave one run empty.
if [ "$rest" -eq 5 ] && [ "$solo" -eq 5 ]; then exit 5; fi
for code in "$rest" "$solo"; do
  if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then exit "$code"; fi
done
exit 0
