"""Each command's wall time on a real pseudo-terminal against the same command piped.

    .venv/bin/python benchmarks/terminal.py [--repeat 2] [--skip-demo]

On a terminal the CLI draws a live status line, a progress bar and wider tables, and writes
through its terminal writer thread; piped it does none of that. Printed: the median wall time of
each command piped and on a pty (100 columns, xterm-256color), and their ratio (target: within
1.10x). call, load (2 calls) and the demo are real calls in real time against the reference
agent: their wall time is mostly the calls' own length.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.pty_run import run_in_pty  # noqa: E402

EXE = str(ROOT / ".venv" / "bin" / "turnscope")
SUITE = ROOT / "configs" / "suites" / "voice_regression_transcripts.json"
BASELINE = ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json"


SCENARIO = ROOT / "configs" / "scenarios" / "refund-call.yaml"


def commands(work: Path, k: int, where: str, agent: str) -> dict[str, list[str]]:
    d = work / f"{where}{k}"
    live = ["--scenario", str(SCENARIO), "--loopback-only"]
    return {
        "replay": ["replay", "recordings/refund-call.wav", "-o", str(d / "replay")],
        "bench": ["bench", str(SUITE), "-o", str(d / "r.json"), "--runs", str(d / "runs")],
        "gate": ["gate", str(d / "r.scorecard.json"), "--baseline", str(BASELINE)],
        "call": ["call", agent, *live, "-o", str(d / "call")],
        "load": ["load", agent, *live, "--calls", "2", "--rate", "2", "-o", str(d / "load")],
        "demo": ["demo", "-o", str(d / "demo")],
    }


def start_agent() -> tuple[subprocess.Popen, str]:
    """The reference agent in its own process, on a free 127.0.0.1 port."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [EXE, "agent", "--port", str(port), "--scenario", str(SCENARIO)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and "reference agent on" in proc.stdout.readline()
    return proc, f"http://127.0.0.1:{port}/api/offer"


def piped(args: list[str]) -> tuple[float, int]:
    t = time.monotonic()
    p = subprocess.run([EXE, *args], cwd=ROOT, capture_output=True, timeout=600)
    return time.monotonic() - t, p.returncode


def on_pty(args: list[str]) -> tuple[float, int]:
    r = run_in_pty([EXE, *args], cwd=ROOT, deadline_s=600)
    return r.wall_s, -1 if r.code is None else r.code


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--skip-demo", action="store_true", help="also skips call and load")
    a = ap.parse_args()
    names = ["replay", "bench", "gate"] + ([] if a.skip_demo else ["call", "load", "demo"])
    agent, url = start_agent()
    times: dict[tuple[str, str], list[float]] = {}
    codes: dict[tuple[str, str], set[int]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for k in range(a.repeat):
            # alternate which goes first, so neither always meets a warm cache
            order = [("pipe", piped), ("pty", on_pty)]
            for where, run in order if k % 2 == 0 else order[::-1]:
                cmds = commands(work, k, where, url)
                for name in names:
                    wall, code = run(cmds[name])
                    times.setdefault((name, where), []).append(wall)
                    codes.setdefault((name, where), set()).add(code)
    agent.terminate()
    print(f"\n{a.repeat} run(s) each, median wall time\n")
    print("| command | piped | pseudo-terminal | pty / piped | exit codes (pipe ; pty) |")
    print("|---|---|---|---|---|")
    for name in names:
        p = statistics.median(times[(name, "pipe")])
        t = statistics.median(times[(name, "pty")])
        c = f"{sorted(codes[(name, 'pipe')])} ; {sorted(codes[(name, 'pty')])}"
        print(f"| {name} | {p:.2f} s | {t:.2f} s | {t / p:.2f}x | {c} |")


if __name__ == "__main__":
    main()
