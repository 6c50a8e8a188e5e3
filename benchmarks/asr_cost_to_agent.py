"""What the harness's ASR takes from a CPU-bound agent on the same machine, at each ASR priority.

    .venv/bin/python benchmarks/asr_cost_to_agent.py [--rounds 2] [--calls 2] [--work 480]
        [--modes idle 10 0] [--holds end fixed follows]

The ASR decodes the caller's turn just as the agent computes its reply to it: on one machine
the two share the cores at the very moment whose length the harness reports. An agent with a
local model computes on every core; this one (benchmarks/cpu_bound_agent.py: the reference
agent, its own process, nice 0) does a fixed amount of matrix work on every core for each reply
(``--work`` products, about 600 ms alone on this machine) and speaks it as soon as it is done.

Measured per ASR priority (``idle``: nice 19 and SCHED_IDLE, the setting before; a number: that
niceness under the ordinary scheduler, see asr/worker.py), each with the caller's turns decoded
at their end (``end``, as before) and held until the agent answers (turnscope/answer_hold.py)
with the cap fixed at 3 s (``fixed``) or following the agent's slowest answer (``follows``, the
pipeline's), real WebRTC calls on 127.0.0.1, the order-status scenario, one call at a time (an
agent slower than 3 s, ``--work 3000`` or so, is where the two caps differ):

- the agent's computation per reply, from its own log, against the same computation timed
  alone after each of the row's calls (nothing else running): what the ASR (and the call)
  added to it;
- the latency heard at the caller's ear (end of the caller's turn to the start of the agent's,
  from the call's turns): what the harness reports, the computation inside it;
- the text delay after each end of turn (as benchmarks/text_delay.py measures it), the agent's
  turns (what a reacting caller waits for) and the caller's (held or not), and the caller
  frames sent more than 20 ms late.

Compare rows within one run: this machine's speed moves under it (the same work once took
1.1 s instead of 0.6 s for minutes, as if one of its two cores were gone), which the alternating
order spreads over every row, and which the "alone" times taken beside each row's calls follow
(one taken once at the agent's start made "added" negative in two runs).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from asr_priority import one_call, set_priority  # noqa: E402
from cpu_bound_agent import compute  # noqa: E402
from live import SCENARIO  # noqa: E402
from text_delay import RECORDS, instrument  # noqa: E402

from turnscope import pipeline  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.answer_hold import HOLD_MS, AnswerHold  # noqa: E402
from turnscope.asr import worker  # noqa: E402

PORT = 18097
HOLDS = {
    "end": ("at their end", lambda: AnswerHold(hold_ms=0.0, max_hold_ms=0.0)),
    "fixed": ("after the answer, 3 s cap", lambda: AnswerHold(max_hold_ms=HOLD_MS)),
    "follows": ("after the answer, cap following the agent", AnswerHold),
}


def set_hold(name: str) -> None:
    """The caller's turns decoded at once (a hold of 0 ms lets them go at the next frame) or
    held with one of the caps."""
    pipeline.AnswerHold = HOLDS[name][1]  # type: ignore[assignment,misc]


def start_cpu_bound_agent(
    scenario: Path, work: int, log: Path, stream: float | None = None
) -> subprocess.Popen:
    script = ROOT / "benchmarks" / "cpu_bound_agent.py"
    streaming = [] if stream is None else ["--stream", str(stream)]
    proc = subprocess.Popen(
        [sys.executable, str(script), str(work), str(log), *streaming, "--", "agent",
         "--port", str(PORT), "--scenario", str(scenario), "--no-greet"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if "reference agent on" not in line:
        raise SystemExit(f"agent did not start: {line}{proc.stdout.read()}")
    return proc


def agent_log(log: Path) -> tuple[float, list[dict]]:
    """The computation alone (ms) and every reply's line since the log began."""
    rows = [json.loads(x) for x in log.read_text().splitlines() if x.strip()]
    return rows[0]["alone_ms"], rows[1:]


def decoded_before_answer(bundle: Path) -> tuple[int, int]:
    """Of a call's caller turns that the agent answered, how many had their decode let go
    before the answer began (while the agent was still computing it)."""
    doc = json.loads((bundle / "transcript.json").read_text())
    starts = [e["at_ms"] for e in doc["events"]
              if e["type"] == "speech_start" and e["channel"] == "agent"]  # fmt: skip
    early = answered = 0
    for u in doc["utterances"]:
        answer = min((a for a in starts if a >= u["end_ms"]), default=None)
        if u["channel"] == "caller" and answer is not None:
            answered += 1
            early += u["decided_ms"] + u["asr"].get("held_ms", 0.0) < answer
    return early, answered


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(xs, q)) if xs else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every mode")
    parser.add_argument("--calls", type=int, default=2, help="calls per mode and round")
    parser.add_argument("--work", type=int, default=480, help="matrix products per reply")
    parser.add_argument("--modes", nargs="*", default=["idle", "10", "0"])
    parser.add_argument("--holds", nargs="*", default=list(HOLDS), choices=list(HOLDS))
    parser.add_argument("--stream", type=float, help="the share of the work before speaking")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    instrument()
    work = Path(tempfile.mkdtemp(prefix="turnscope-asrcost-"))
    scenario, log = work / "scenario.yaml", work / "agent.jsonl"
    # An agent computing 3-7 s per reply needs more than the scenario's 60 s for its call and
    # its caller a longer wait for each answer than 8 s (or it speaks its next line over it).
    slow = "timeout_s: 150, reply_timeout_ms: 20000,"
    scenario.write_text(SCENARIO.replace("timeout_s: 60,", slow))
    sc = load_scenario(scenario)
    agent = start_cpu_bound_agent(scenario, args.work, log, args.stream)
    compute(args.work)  # uncounted: the first products start OpenBLAS's threads here too
    url = f"http://127.0.0.1:{PORT}/api/offer"
    rows = {(m, h): {"compute": [], "gaps": [], "agent": [], "caller": [], "late": 0,
                     "calls": 0, "degraded": 0, "early": 0, "answered": 0, "agent_late": 0,
                     "agent_lag": 0.0, "alone": []}
            for m in args.modes for h in args.holds}  # fmt: skip
    t0 = time.perf_counter()
    try:
        for r in range(args.rounds):
            for mode in args.modes if r % 2 == 0 else list(reversed(args.modes)):
                set_priority(mode)
                asyncio.run(one_call(url, sc, work / f"warm-{r}-{mode}"))  # the model loaded
                for hold in args.holds if r % 2 == 0 else list(reversed(args.holds)):
                    set_hold(hold)
                    RECORDS.clear()
                    before = len(agent_log(log)[1])
                    row = rows[(mode, hold)]
                    for k in range(args.calls):
                        out = work / f"r{r}-{mode}-{hold}-{k}"
                        c = asyncio.run(one_call(url, sc, out))
                        row["gaps"] += c["gaps"]
                        row["late"] += c["late"]
                        row["degraded"] += c["degraded"]
                        row["calls"] += 1
                        early, answered = decoded_before_answer(out)
                        row["early"] += early
                        row["answered"] += answered
                        row["alone"].append(compute(args.work))  # the call over, the ASR idle
                    replies = agent_log(log)[1][before:]
                    row["compute"] += [x["compute_ms"] + x.get("rest_ms", 0.0) for x in replies]
                    row["agent_late"] += sum(x.get("late", 0) for x in replies)
                    lags = [x.get("lag_ms", 0.0) for x in replies]
                    row["agent_lag"] = max([row["agent_lag"], *lags])
                    for u in RECORDS:
                        row[u["channel"]].append(u["delay_ms"])
    finally:
        worker.stop_asr_worker()
        agent.terminate()
        agent.wait(10)
    alone = agent_log(log)[0]
    between = [a for row in rows.values() for a in row["alone"]]
    spread = f"{min(between):.0f}-{max(between):.0f} ms" if between else "not timed"
    print()
    print(
        f"{args.rounds} rounds x {args.calls} calls per mode, modes alternating; the CPU-bound "
        f"reference agent on 127.0.0.1:{PORT} ({args.work} products per reply: {alone:.0f} ms "
        f"alone at its start, {spread} between calls); {os.cpu_count()} cores; "
        f"{time.perf_counter() - t0:.0f} s"
    )
    if args.stream is not None:
        print(f"streaming: {args.stream:.0%} of each reply's work before it is spoken, the rest "
              "while it is")  # fmt: skip
    print(
        "| ASR priority | caller's turns decoded | calls | replies | agent's computation "
        "median / p95 (ms) | added to it (median) | latency at the caller's ear median / p95 "
        "(ms) | text delay after end of turn, agent / caller turns, median (ms) "
        "| caller turns decoded while the agent computed | caller frames > 20 ms late "
        "| agent frames > 20 ms late while it spoke and computed (worst, ms) | degraded calls |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for (mode, hold), row in rows.items():
        comp, gaps = row["compute"], row["gaps"]
        name = "SCHED_IDLE, nice 19" if mode == "idle" else f"nice {mode}"
        added = statistics.median(comp) - statistics.median(row["alone"]) if comp else float("nan")
        agent_late = "-" if args.stream is None else f"{row['agent_late']} ({row['agent_lag']:.0f})"
        print(
            f"| {name} | {HOLDS[hold][0]} | {row['calls']} | {len(comp)} | {pct(comp, 50):.0f} / "
            f"{pct(comp, 95):.0f} | {added:+.0f} ms | {pct(gaps, 50):.0f} / {pct(gaps, 95):.0f}"
            f" | {pct(row['agent'], 50):.0f} / {pct(row['caller'], 50):.0f} | "
            f"{row['early']} of {row['answered']} | {row['late']} | {agent_late} | "
            f"{row['degraded']} |"
        )


if __name__ == "__main__":
    main()
