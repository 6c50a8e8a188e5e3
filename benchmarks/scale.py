"""Beyond one process: a suite locally and on Ray, and `turnscope load` at rising concurrency,
side by side in one run. Prints two tables.

    .venv/bin/python benchmarks/scale.py [--fixtures 45] [--loads 8 16 32] [--rate 4]

Runs in a network namespace of its own (Ray's servers listen on every interface), where only
the loopback exists; the script re-enters itself there.

Suite: the synthetic corpus calls (benchmarks/common.py) as replay fixtures, run by
`turnscope bench` with ``--jobs 2`` and ``--jobs 4`` locally (the one-node Ray's one worker runs
4 at once), on a one-node Ray started by the driver (``--ray``),
and on a two-node Ray on this machine (``ray start`` head with 2 CPUs, a second node with 4: the
fixtures should split 1:2). Wall time is the whole process (Ray's start included); the rows are
compared with the local run's, task by task.

Load: the reference agent in its own process (configured reply latency 600 ms), called by
`turnscope load` with N callers started --rate per second: one caller calling three times in a
row (the single-call baseline), then each N of --loads at once, then 16 from a one-node Ray.
From each run's load.json: the harness's own lateness (caller frames sent > 20 ms late, the
worst send lag, placement lag), agent frames lost, and the reply latency percentiles against
the single call's.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

ROOT = Path(__file__).resolve().parent.parent
BIN = ROOT / ".venv" / "bin"
TURNSCOPE = str(BIN / "turnscope")
LATENCY_MS = 600
SCENARIO = f"""
name: scale
task: {{budgets: {{max_latency_ms: 2000}}}}
caller: {{voice: en-us, timeout_s: 60, hangup_after_ms: 400}}
agent: {{voice: en-gb, latency_ms: {LATENCY_MS}, yield_ms: 250}}
script:
  - caller: Hi, I need help with my order.
  - agent: Sure, what is the order number?
  - caller: It is four two seven.
  - agent: Thanks, I found it. It ships tomorrow morning, and you will get an email with the
      tracking number as soon as it leaves.
  - caller: wait
    barge_in_at: early
  - agent: Yes?
  - caller: Thanks, bye.
  - agent: Goodbye.
"""
ENV = {
    **os.environ,
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_worker_niceness": "0",
    "HF_HUB_OFFLINE": "1",
}


def in_namespace() -> None:
    """Re-run this script in a network namespace with only the loopback, unless already there."""
    if os.environ.get("SCALE_NETNS") == "1":
        return
    cmd = ["unshare", "--net", "--map-root-user", "sh", "-c", 'ip link set lo up && exec "$@"',
           "sh", sys.executable, __file__, *sys.argv[1:]]  # fmt: skip
    os.execvpe(cmd[0], cmd, {**os.environ, "SCALE_NETNS": "1"})


def timed(cmd: list[str], env: dict | None = None) -> tuple[float, subprocess.CompletedProcess]:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, env=env or ENV, cwd=ROOT)
    took = time.perf_counter() - t0
    if done.returncode not in (0, 1, 4):
        raise SystemExit(f"{' '.join(cmd[:3])} failed ({done.returncode}): {done.stderr[-800:]}")
    return took, done


def rows(result: Path) -> dict[str, str]:
    doc = json.loads(result.read_text())
    return {r["task_id"]: json.dumps(r["result"], sort_keys=True) for r in doc["per_task"]}


def ray_line(stdout: str) -> str:
    return next((x for x in stdout.splitlines() if x.startswith("ray: ")), "")


def suite_part(work: Path, fixtures: int) -> list[dict]:
    from common import build_corpus
    from suite_speed import suite_of

    calls = build_corpus(ROOT / ".turnscope" / "bench-corpus")[:fixtures]
    suite = suite_of(calls, work)
    out = []

    def bench(name: str, *extra: str, env: dict | None = None) -> None:
        runs = work / name.split()[0]
        cmd = [TURNSCOPE, "bench", str(suite), "-q", "--force", "--runs", str(runs), "-o",
               str(runs.with_suffix(".json")), *extra]  # fmt: skip
        wall, done = timed(cmd, env)
        out.append({"name": name, "wall": wall, "rows": rows(runs.with_suffix(".json")),
                    "ray": ray_line(done.stdout)})  # fmt: skip

    bench("local --jobs 2", "--jobs", "2")
    bench("local --jobs 4 (as many at once as the one-node Ray's worker)", "--jobs", "4")
    bench("one-node Ray (--ray, started by the driver)", "--ray")
    temp = tempfile.mkdtemp(prefix="ray")  # Ray's socket paths must be short
    token = Path(temp) / "token"
    token.write_text(secrets.token_hex(32))
    env = {**ENV, "PATH": f"{BIN}:{ENV['PATH']}", "RAY_AUTH_MODE": "token",
           "RAY_AUTH_TOKEN_PATH": str(token)}  # fmt: skip
    ray = str(BIN / "ray")
    # (RAY_worker_niceness=0 in env: Ray's nice 15 workers would lose the CPU to the agent)
    subprocess.run([ray, "start", "--head", "--num-cpus", "2", "--port", "6379",
                    "--disable-usage-stats", "--include-dashboard=false", "--temp-dir", temp],
                   check=True, capture_output=True, env=env)  # fmt: skip
    subprocess.run([ray, "start", "--address", "127.0.0.1:6379", "--num-cpus", "4",
                    "--disable-usage-stats"], check=True, capture_output=True, env=env)  # fmt: skip
    try:
        bench("two-node Ray (2 + 4 CPUs, ray start)", "--ray", "127.0.0.1:6379", env=env)
    finally:
        subprocess.run([ray, "stop", "--force"], capture_output=True, env=env)
    return out


def start_agent(scenario: Path, port: int, truth: Path) -> subprocess.Popen:
    cmd = [TURNSCOPE, "agent", "--port", str(port), "--scenario", str(scenario), "--truth-log",
           str(truth)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if "reference agent on" not in line:
        raise SystemExit(f"agent did not start: {line}{proc.stdout.read()}")
    return proc


def load_part(work: Path, loads: list[int], rate: float, harness_nice: int = 0) -> list[dict]:
    scenario = work / "scale.yaml"
    scenario.write_text(SCENARIO)
    truth = work / "truth.jsonl"
    agent = start_agent(scenario, 18411, truth)
    url = "http://127.0.0.1:18411/api/offer"
    out = []
    try:
        runs = [("1 (three calls in a row)", ["--calls", "1", "--duration", "40"])]
        runs += [(str(n), ["--calls", str(n)]) for n in loads]
        runs += [("16 from a one-node Ray", ["--calls", "16", "--ray"])]
        for k, (name, extra) in enumerate(runs):
            folder = work / f"load-{k}"
            nice = ["nice", "-n", str(harness_nice)] if harness_nice else []
            cmd = [*nice, TURNSCOPE, "load", url, "--loopback-only", "--scenario", str(scenario),
                   "-q", "--rate", str(rate), "-o", str(folder), "--force", *extra]  # fmt: skip
            seen = len(truth.read_text().splitlines()) if truth.exists() else 0
            wall, _ = timed(cmd)
            time.sleep(2)  # the agent logs each call as it ends
            doc = json.loads((folder / "load.json").read_text())
            lines = truth.read_text().splitlines()[seen:]
            own = agent_delays(lines)
            error = harness_error(folder, lines)
            out.append({"name": name, "wall": wall, "doc": doc, "agent": own, "error": error})
    finally:
        agent.terminate()
        agent.wait(10)
    return out


def agent_delays(lines: list[str]) -> list[float]:
    """How late the agent itself started each reply, by its own log: the reply's first sample
    sent, minus (the caller's end of speech as its endpointer placed it + its configured
    latency). What the machine's load did to the agent, not to the measurement."""
    late = []
    for line in lines:
        t = json.loads(line)
        origin = t.get("clock_origin_monotonic")
        if origin is None:
            continue
        starts = sorted((u["start_monotonic"] - origin) * 1000 for u in t["utterances"]
                        if u.get("start_monotonic") is not None)  # fmt: skip
        for e in t["events"]:
            if e["event"] == "caller_end_of_turn":
                after = [x for x in starts if x > e["at_ms"]]
                if after:
                    late.append(after[0] - e["at_ms"] - LATENCY_MS)
    return late


def harness_error(folder: Path, lines: list[str]) -> list[float]:
    """Where the harness placed the start of each agent reply on its call clock, minus where
    the agent's own log says it went out (its first sample handed to its encoder, monotonic
    time): transit, the modelled playout delay and the endpointer's onset, a constant when the
    harness keeps up. Calls and the agent's logs are paired by their clock origins."""
    logs = [json.loads(x) for x in lines]
    logs = [t for t in logs if t.get("clock_origin_monotonic") is not None]
    out = []
    for call in sorted((folder / "calls").glob("call-*")):
        result = json.loads((call / "result.json").read_text())
        origin = result["source"]["details"].get("clock_origin_monotonic")
        if origin is None or not logs:
            continue
        log = min(logs, key=lambda t: abs(t["clock_origin_monotonic"] - origin))
        if abs(log["clock_origin_monotonic"] - origin) > 1.0:
            continue
        turns = json.loads((call / "transcript.json").read_text())["utterances"]
        heard = [u["start_ms"] for u in turns if u["channel"] == "agent"]
        for u in log["utterances"]:
            if u.get("start_monotonic") is None:
                continue
            sent = (u["start_monotonic"] - origin) * 1000
            near = [h - sent for h in heard if abs(h - sent) < 400]
            if near:
                out.append(near[0])
    return out


def pct(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(values, q)) if values else float("nan")


def print_suite(runs: list[dict]) -> None:
    base = runs[0]
    print(f"\nsuite of {len(base['rows'])} replay fixtures (wall: the whole process)")
    print(
        "| run | wall | vs local --jobs 2 | rows identical to local --jobs 2 | fixtures per node |"
    )
    print("|---|---|---|---|---|")
    for r in runs:
        same = sum(r["rows"].get(k) == v for k, v in base["rows"].items())
        where = r["ray"].split("per node: ")[-1].split("; retried")[0] if r["ray"] else "-"
        print(f"| {r['name']} | {r['wall']:.1f} s | {r['wall'] / base['wall']:.2f}x | "
              f"{same} of {len(base['rows'])} | {where} |")  # fmt: skip


def on_time(doc: dict, base: dict) -> str:
    lat = doc.get("latency_on_time_ms") or {}
    if not lat.get("n"):
        return "-"
    return f"{lat['n']}, {lat['p50'] - base['p50']:+.0f} / {lat['p99'] - base['p99']:+.0f} ms"


def print_load(runs: list[dict]) -> None:
    base = runs[0]["doc"]["latency_ms"]
    print(f"\nload against the reference agent (configured reply latency {LATENCY_MS} ms)")
    print("| callers | loops | most calls up | caller frames > 20 ms late | worst caller send lag "
          "| placed late by, max | agent frames lost | replies | latency p50 / p90 / p99 "
          "| p50 / p99 vs one call | replies with the caller's audio on time: n, p50 / p99 vs one "
          "call | the agent's own lateness p50 / p99 | reply start as placed by the harness vs "
          "as sent by the agent: p50 / p99 / spread | completed | degraded |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        d, h = r["doc"], r["doc"]["harness"]
        lat = d["latency_ms"]
        dp50 = lat["p50"] - base["p50"] if lat["p50"] is not None else float("nan")
        dp99 = lat["p99"] - base["p99"] if lat["p99"] is not None else float("nan")
        print(f"| {r['name']} | {d['loops']} | {h['max_calls_up']} | {h['caller_late_frames']} | "
              f"{h['caller_max_send_lag_ms']:.0f} ms | {h['placement_lag_max_s']:.2f} s | "
              f"{h['agent_lost_frames']} | {lat['n']} | {lat['p50']:.0f} / {lat['p90']:.0f} / "
              f"{lat['p99']:.0f} ms | {dp50:+.0f} / {dp99:+.0f} ms | {on_time(d, base)} | "
              f"{pct(r['agent'], 50):.0f} / {pct(r['agent'], 99):.0f} ms | "
              f"{pct(r['error'], 50):.0f} / {pct(r['error'], 99):.0f} / "
              f"{pct(r['error'], 100) - pct(r['error'], 0):.0f} ms | {d['completed']} of "
              f"{len(d['calls'])} | {len(d['degraded'])} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fixtures", type=int, default=45)
    parser.add_argument("--loads", type=int, nargs="*", default=[8, 16, 32])
    parser.add_argument("--rate", type=float, default=4.0)
    parser.add_argument("--skip-suite", action="store_true")
    parser.add_argument("--skip-load", action="store_true")
    parser.add_argument(
        "--harness-nice",
        type=int,
        default=0,
        help="run `turnscope load` at this niceness, so the agent on the same cores comes first "
        "(as if it had cores of its own)",
    )
    args = parser.parse_args()
    in_namespace()
    work = Path(tempfile.mkdtemp(prefix="scale-"))
    suite = [] if args.skip_suite else suite_part(work, args.fixtures)
    load = [] if args.skip_load else load_part(work, args.loads, args.rate, args.harness_nice)
    if suite:
        print_suite(suite)
    if load:
        print_load(load)


if __name__ == "__main__":
    main()
