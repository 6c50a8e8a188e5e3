"""Live-call measurements on loopback: repeated real WebRTC calls against the reference agent.

    .venv/bin/python benchmarks/live.py [--calls 5] [--concurrency 1 4 8]

The reference agent runs in its own process (`turnscope agent`), so the CPU figures are the
harness's alone (the call process and its ASR worker process); the agent logs when it really
sent each prompt (ground truth, monotonic clock, shared by both processes). Printed: agent turn
start/end error vs that log after removing the constant one-way delay (which is reported),
measured reply latency vs the configured one after removing the constant round trip (reported),
set-up time, frame loss, caller send lag, and harness CPU per concurrent call.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
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

from common import order_call_scenario  # noqa: E402

from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.asr.worker import asr_process_usage  # noqa: E402
from turnscope.capture.webrtc.call import CallOptions  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402

LATENCY_MS = 800
SCENARIO = order_call_scenario("live-bench", first_at_ms=500, latency_ms=LATENCY_MS)


def start_agent(scenario: Path, truth: Path, port: int) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("turnscope")
    proc = subprocess.Popen(
        [
            str(exe),
            "agent",
            "--port",
            str(port),
            "--scenario",
            str(scenario),
            "--truth-log",
            str(truth),
            "--no-greet",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    line = proc.stdout.readline()
    if "reference agent on" not in line:
        raise SystemExit(f"agent did not start: {line}{proc.stdout.read()}")
    return proc


def read_truth(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


async def one_call(url: str, sc, outdir: Path) -> dict:
    options = CallOptions(url, loopback_only=True)
    run, call, _ = await place_call(
        options, sc, load_settings(), scenario_contract(sc), outdir, console=None
    )
    return {
        "origin": call.clock.origin,
        "turns": [(t.speaker, t.start_ms, t.end_ms) for t in run.result.assembly.turns],
        "connect_ms": call.connect_ms,
        "lost": call.info.details["agent_lost_frames"],
        "frames": call.stats.frames,
        "caller_lag_ms": call.caller_track.max_lag_ms,
        "late_frames": call.caller_track.late_frames,
        "duration_s": run.result.audio_ms / 1000,
        "degraded": list(run.result.degraded),  # every stage's, as the run assembled them
    }


def analyse(calls: list[dict], truths: list[dict]) -> dict:
    """Match each call to the agent's log by time; boundary errors and latency spread."""
    errors, offsets_all, lat_dev, rtts = [], [], [], []
    for c in calls:
        origin = c["origin"]
        truth = min(truths, key=lambda t: abs((t["clock_origin_monotonic"] or 0) - origin))
        sent = [
            ((u["start_monotonic"] - origin) * 1000, (u["end_monotonic"] - origin) * 1000)
            for u in truth["utterances"]
            if u["start_monotonic"] is not None
        ]
        agent = [(s, e) for sp, s, e in c["turns"] if sp == "agent"]
        if len(agent) != len(sent):
            continue
        offs = [m[0] - t[0] for m, t in zip(agent, sent, strict=True)]
        offs += [m[1] - t[1] for m, t in zip(agent, sent, strict=True)]
        one_way = statistics.median(offs)
        offsets_all.append(one_way)
        errors += [abs(o - one_way) for o in offs]
        turns = c["turns"]
        gaps = [
            b[1] - a[2]
            for a, b in itertools.pairwise(turns)
            if a[0] == "caller" and b[0] == "agent"
        ]
        rtt = statistics.median(gaps) - LATENCY_MS
        rtts.append(rtt)
        lat_dev += [abs(g - LATENCY_MS - rtt) for g in gaps]
    return {
        "err_med": float(np.median(errors)) if errors else float("nan"),
        "err_p95": float(np.percentile(errors, 95)) if errors else float("nan"),
        "one_way_ms": float(np.median(offsets_all)) if offsets_all else float("nan"),
        "lat_dev_max": max(lat_dev) if lat_dev else float("nan"),
        "lat_dev_med": float(np.median(lat_dev)) if lat_dev else float("nan"),
        "rtt_ms": float(np.median(rtts)) if rtts else float("nan"),
        "matched": len(offsets_all),
    }


async def run_batch(url: str, sc, n: int, root: Path) -> tuple[list[dict], float, float, float]:
    """n calls at once: results, harness CPU (this process), ASR process CPU, wall (s)."""
    asr0 = (await asyncio.to_thread(asr_process_usage))[0]
    cpu0, t0 = time.process_time(), time.perf_counter()
    results = await asyncio.gather(*[one_call(url, sc, root / f"c{i}") for i in range(n)])
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    asr = (await asyncio.to_thread(asr_process_usage))[0] - asr0  # after the last turns
    return list(results), cpu, asr, wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5, help="sequential calls for accuracy")
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 4, 8])
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="turnscope-live-"))
    scenario = work / "scenario.yaml"
    scenario.write_text(SCENARIO)
    sc = load_scenario(scenario)
    truth_log = work / "truth.jsonl"
    agent = start_agent(scenario, truth_log, 18080)
    url = "http://127.0.0.1:18080/api/offer"
    rows = []
    try:
        sequential = []
        for i in range(args.calls):
            sequential += asyncio.run(run_batch(url, sc, 1, work / f"seq{i}"))[0]
        time.sleep(1)
        acc = analyse(sequential, read_truth(truth_log))
        for n in args.concurrency:
            calls, cpu, asr, wall = asyncio.run(run_batch(url, sc, n, work / f"conc{n}"))
            rows.append(
                {
                    "n": n,
                    "cpu_per_call_pct": 100 * cpu / wall / n,
                    "asr_per_call_pct": 100 * asr / wall / n,
                    "harness_cores": (cpu + asr) / wall,
                    "late": sum(c["late_frames"] for c in calls),
                    "lost": sum(c["lost"] for c in calls),
                    "frames": sum(c["frames"] for c in calls),
                    "lag_max": max(c["caller_lag_ms"] for c in calls),
                    "degraded": sum(1 for c in calls if c["degraded"]),
                    "analysis": analyse(calls, read_truth(truth_log)),
                }
            )
    finally:
        agent.terminate()
        agent.wait(10)
    connect = [c["connect_ms"] for c in sequential]
    lost = sum(c["lost"] for c in sequential)
    print()
    print(
        f"sequential calls: {len(sequential)} (matched to the agent's log: {acc['matched']}), "
        f"configured reply latency {LATENCY_MS} ms"
    )
    print(
        "| agent turn |start/end| error vs log, median / p95 | one-way delay (removed) | "
        "latency deviation median / max | round trip (removed) | set-up time median | "
        "frames lost |"
    )
    print("|---|---|---|---|---|---|")
    print(
        f"| {acc['err_med']:.1f} / {acc['err_p95']:.1f} ms | {acc['one_way_ms']:.0f} ms | "
        f"{acc['lat_dev_med']:.1f} / {acc['lat_dev_max']:.1f} ms | {acc['rtt_ms']:.0f} ms | "
        f"{statistics.median(connect):.0f} ms | {lost} |"
    )
    print()
    print(
        "| concurrent calls | harness CPU per call: call process / ASR process (% of one core) "
        "| harness cores used | agent frames lost / received | caller frames sent > 20 ms late "
        "| max caller send lag | boundary error med / p95 | degraded calls |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        a = r["analysis"]
        print(
            f"| {r['n']} | {r['cpu_per_call_pct']:.0f}% / {r['asr_per_call_pct']:.0f}% | "
            f"{r['harness_cores']:.2f} | {r['lost']} / {r['frames']} | {r['late']} | "
            f"{r['lag_max']:.0f} ms | "
            f"{a['err_med']:.1f} / {a['err_p95']:.1f} ms | {r['degraded']} |"
        )


if __name__ == "__main__":
    main()
