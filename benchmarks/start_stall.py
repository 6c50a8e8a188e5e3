"""A call whose start the machine stalls: the demo (a real WebRTC call to the reference agent),
with turnscope's whole process stopped (SIGSTOP) for a while just as the call begins, as a
process starting beside it does on a busy 2-core machine.

    .venv/bin/python benchmarks/start_stall.py [--stalls 0 150 300 450] [--repeat 2]

The stall holds turnscope's event loop: the caller's first frames go out late, then together,
and the reference agent reads them so. Printed per stall (medians over the repeats): how late
the caller's audio went out at worst; where the agent placed the caller's barge-in against
where it began at the caller (its own log, both clocks on one machine's monotonic time); how
long the agent took to stop at the caller's ear (t_stop, the barge-in floor is 600 ms); the
median reply delivery; how much of the caller's silence the agent's receiver dropped to catch
up; the verdicts. Before a received stream caught up in its silence (2026-12-07), one 300 ms
stall left the agent placing the caller's speech 281 ms after it began (86 unstalled) and
yielding 632 ms after the barge-in: a FAIL.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = str(ROOT / ".venv" / "bin" / "turnscope")


def one_call(out: Path, stall_ms: int) -> dict[str, float | str]:
    """One demo call stopped ``stall_ms`` as its first audio is written; what it came to."""
    proc = subprocess.Popen([EXE, "demo", "-q", "-o", str(out)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)  # fmt: skip
    while not (out / "caller.wav").exists() and proc.poll() is None:
        time.sleep(0.005)
    if stall_ms:
        os.kill(proc.pid, signal.SIGSTOP)
        time.sleep(stall_ms / 1000)
        os.kill(proc.pid, signal.SIGCONT)
    proc.wait()
    result = json.loads((out / "result.json").read_text())
    truth = json.loads((out / "agent_truth.json").read_text())
    details = result["source"]["details"]
    barge = next(e for e in result["turn_taking"]["events"] if e["kind"] == "user_interruption")
    heard = [e["at_ms"] for e in truth["events"] if e["event"] == "caller_speech_start"]
    shift = (truth["clock_origin_monotonic"] - details["clock_origin_monotonic"]) * 1000
    placed = min(heard, key=lambda t: abs(t + shift - barge["start_ms"])) + shift
    replies = result["latency_breakdown"]["replies"]
    return {
        "sent_late": details["caller_max_send_lag_ms"],
        "placed_after": placed - barge["start_ms"],
        "t_stop": barge["t_stop_ms"],
        "delivery": statistics.median(r["delivery_ms"] for r in replies),
        "dropped": truth.get("caller_caught_up_ms", 0.0),
        "verdict": result["verdict"],
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--stalls", type=int, nargs="+", default=[0, 150, 300, 450])
    ap.add_argument("--repeat", type=int, default=2)
    args = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for stall in args.stalls:
            runs = [one_call(Path(tmp) / f"s{stall}-{k}", stall) for k in range(args.repeat)]
            med = {k: statistics.median(r[k] for r in runs) for k in runs[0] if k != "verdict"}
            rows.append((stall, med, " ".join(str(r["verdict"]) for r in runs)))
            print(f"stall {stall} ms done", file=sys.stderr)
    head = ("stall ms", "sent late ms", "agent placed barge-in +ms", "t_stop ms",
            "delivery ms", "agent caught up ms", "verdicts")  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for stall, m, verdicts in rows:
        cells = [stall, m["sent_late"], m["placed_after"], m["t_stop"], m["delivery"], m["dropped"]]
        print("| " + " | ".join(f"{c:.0f}" for c in cells) + f" | {verdicts} |")


if __name__ == "__main__":
    main()
