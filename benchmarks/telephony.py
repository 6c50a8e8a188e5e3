"""Phone-line calls on loopback: turnscope plays the carrier against the reference agent (and,
with --pipecat, pipecat's telephony serializers over its FastAPI websocket transport).

    .venv/bin/python benchmarks/telephony.py [--calls 5] [--concurrency 1 8 32] [--pipecat]
    .venv/bin/python benchmarks/telephony.py --hold-ups [--calls 5]
    .venv/bin/python benchmarks/telephony.py --busy [--calls 5]

The agents run in their own processes and log when their audio plays at the carrier (ground
truth on time.monotonic(), shared by every process). Printed: agent turn start/end error vs that
log (no delay removed: the agent channel is the carrier's playout, and loopback adds well under
a millisecond), the barge-in yield as the caller heard it vs as the agent logged it, and for 1,
8 and 32 concurrent calls on this machine: caller media messages sent more than 20 ms late, the
worst lateness, agent media messages lost (sent by the agent, never played), CPU per call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.interop.pipecat import loop_busy, pipecat_phone_bot  # noqa: E402
from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.asr.worker import asr_process_usage  # noqa: E402
from turnscope.capture.telephony.call import TelephonyOptions  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402

SCENARIO = """\
name: phone-bench
caller: {timeout_s: 60, hangup_after_ms: 800}
agent: {latency_ms: 600}
script:
  - agent: "Thank you for calling. How can I help you today?"
  - caller: "I would like a refund for my order please."
  - agent: >-
      Sure. Refunds take five to seven days and go back to the card you paid with,
      once the parcel reaches our warehouse.
  - caller: "Wait."
    barge_in_at: early
  - agent: "Yes, go ahead."
  - caller: "Can I get a return label by email?"
  - agent: "Yes, I will send it to you right away."
  - caller: "Thank you, goodbye."
  - agent: "Goodbye."
"""


def start_agent(scenario: Path, truth: Path, port: int) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("turnscope")
    cmd = [str(exe), "agent", "--transport", "twilio", "--port", str(port)]
    cmd += ["--scenario", str(scenario), "--truth-log", str(truth)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()  # type: ignore[union-attr]
    if "reference agent on" not in line:
        raise SystemExit(f"agent did not start: {line}{proc.stdout.read()}")  # type: ignore[union-attr]
    return proc


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of another process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def read_truth(path: Path) -> list[dict]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


HOLD_EVERY_S = 3.0  # --hold-ups: one hold-up this often, from 1.5 s into the call


def holding_up(hold_s: float):  # type: ignore[no-untyped-def]
    """``on_connected`` for a call whose event loop is held up ``hold_s`` every HOLD_EVERY_S."""

    def arm(call) -> None:  # type: ignore[no-untyped-def]
        loop = asyncio.get_running_loop()
        for k in range(20):
            loop.call_at(call.clock.origin + 1.5 + k * HOLD_EVERY_S, time.sleep, hold_s)

    return arm if hold_s else None


async def one_call(url: str, sc, outdir: Path, on_connected=None) -> dict:  # type: ignore[no-untyped-def]
    run, call, _ = await place_call(
        TelephonyOptions(url), sc, load_settings(), scenario_contract(sc), outdir, console=None,
        on_connected=on_connected,
    )  # fmt: skip
    d = call.info.details
    return {
        "origin": call.clock.origin,
        "stream": call.ids.stream,
        "turns": [(t.speaker, t.start_ms, t.end_ms) for t in run.result.assembly.turns],
        "late": call.caller_track.late_frames,
        "lag_ms": call.caller_track.max_lag_ms,
        "lag_at_ms": d["caller_max_send_lag_at_ms"],
        "texts": [t.text for t in run.result.assembly.turns if t.speaker == "agent"],
        "media": d["agent_media"],
        "clears": d["clears"],
        "underruns": d["playout_underruns"],
        "degraded": list(run.result.degraded),  # every stage's, as the run assembled them
    }


def error_stats(errors: list[float], yields: list[float]) -> dict:
    """Boundary errors (signed, measured - logged) and yield errors, summarised."""
    nan = float("nan")
    abs_err = [abs(e) for e in errors]
    return {
        "err_med": float(np.median(abs_err)) if abs_err else nan,
        "err_p95": float(np.percentile(abs_err, 95)) if abs_err else nan,
        "bias": float(np.median(errors)) if errors else nan,
        "yield_med": float(np.median(np.abs(yields))) if yields else nan,
        "yield_max": float(np.max(np.abs(yields))) if yields else nan,
        "yields": len(yields),
    }


def analyse(calls: list[dict], truths: list[dict]) -> dict:
    """Each call against the agent's log of it: boundary errors, the yield, media lost."""
    errors, yields, lost, sent, outliers = [], [], 0, 0, []
    by_stream = {t.get("stream_id"): t for t in truths}
    matched = 0
    for c in calls:
        truth = by_stream.get(c["stream"])
        if truth is None:
            continue
        sent += truth.get("media_sent", 0)
        lost += max(0, truth.get("media_sent", 0) - c["media"])
        logged = [
            ((u["start_played_monotonic"] - c["origin"]) * 1000,
             (u["end_played_monotonic"] - c["origin"]) * 1000, u["stopped_early"])
            for u in truth["utterances"] if u["start_played_monotonic"] is not None
        ]  # fmt: skip
        agent = [(s, e) for sp, s, e in c["turns"] if sp == "agent"]
        if len(agent) != len(logged):
            continue
        matched += 1
        for i, ((ms, me), (ls, le, cut)) in enumerate(zip(agent, logged, strict=True)):
            errors += [ms - ls, me - le]
            for edge, err in (("start", ms - ls), ("end", me - le)):
                if abs(err) > 25:
                    outliers.append(f"{edge} {err:+.0f} ms at {ls / 1000:.1f} s: {c['texts'][i]!r}")
            if cut:
                yields.append(me - le)
    return {**error_stats(errors, yields), "matched": matched, "lost": lost, "sent": sent,
            "outliers": outliers}  # fmt: skip


def pipecat_errors(calls: list[dict], replies: list[dict]) -> dict:
    """Each call's agent turns against the pipecat bot's replies as they played at the carrier
    (its own model of the playout from when it sent each message)."""
    errors, yields, outliers, matched = [], [], [], 0
    for c in calls:
        mine = [r for r in replies if r.get("session") == c["stream"]]
        agent = [(s, e) for sp, s, e in c["turns"] if sp == "agent"]
        if len(agent) != len(mine):
            outliers.append(f"{len(agent)} agent turns for {len(mine)} replies")
            continue
        matched += 1
        for (ms, me), r in zip(agent, mine, strict=True):
            ls = (r["start_monotonic"] - c["origin"]) * 1000
            le = (r["end_monotonic"] - c["origin"]) * 1000
            errors += [ms - ls, me - le]
            for edge, err, at in (("start", ms - ls, ls), ("end", me - le, le)):
                if abs(err) > 25:
                    outliers.append(f"{edge} {err:+.0f} ms at {at / 1000:.2f} s")
            if r.get("interrupted"):
                yields.append(me - le)
    return {**error_stats(errors, yields), "matched": matched, "outliers": outliers,
            "errors": errors}  # fmt: skip


async def run_batch(
    url: str, sc, n: int, root: Path, stagger_ms: float = 0.0
) -> tuple[list[dict], float, float, float]:
    """n calls, started ``stagger_ms`` apart (0: all at once)."""
    asr0 = (await asyncio.to_thread(asr_process_usage))[0]
    cpu0, t0 = time.process_time(), time.perf_counter()

    async def later(i: int) -> dict:
        await asyncio.sleep(i * stagger_ms / 1000)
        return await one_call(url, sc, root / f"c{i}")

    results = await asyncio.gather(*[later(i) for i in range(n)])
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - t0
    asr = (await asyncio.to_thread(asr_process_usage))[0] - asr0
    return list(results), cpu, asr, wall


def hold_up_rows(work: Path, sc, calls: int) -> None:
    """--hold-ups: the pipecat bot's calls with turnscope's loop held up, by hold-up length."""
    print("| loop held up every 3 s | calls matched | agent turn |start/end| error median / p95 "
          "/ max | underruns counted against the agent |")  # fmt: skip
    print("|---|---|---|---|")
    with pipecat_phone_bot(work / "pipecat-held", reply="short", latency_ms=600) as bot:
        for hold_s in (0.0, 0.085, 0.2):
            got = [
                asyncio.run(one_call(bot.url, sc, work / f"held{hold_s}-{i}", holding_up(hold_s)))
                for i in range(calls)
            ]
            time.sleep(1)
            e = pipecat_errors(got, bot.replies())
            worst = max((abs(x) for x in e["errors"]), default=float("nan"))
            print(
                f"| {hold_s * 1000:.0f} ms | {e['matched']} of {calls} | {e['err_med']:.1f} / "
                f"{e['err_p95']:.1f} / {worst:.1f} ms | {sum(c['underruns'] for c in got)} |"
            )
            for o in e["outliers"]:
                print(f"  {o}")


def busy_rows(work: Path, sc, calls: int) -> None:
    """--busy: the pipecat bot's calls while turnscope's loop is busy, as the greeting begins
    (1.5 s) and for the whole call (30 s): each call's agent turns against its replies."""
    with pipecat_phone_bot(work / "pipecat-busy", reply="short", latency_ms=600) as bot:
        runs = {}
        for name, until_s in (("greeting", 1.5), ("whole call", 30.0)):
            runs[name] = [
                asyncio.run(one_call(bot.url, sc, work / f"busy{until_s}-{i}", loop_busy(until_s)))
                for i in range(calls)
            ]
        time.sleep(1)
        replies = bot.replies()
    print("| loop busy | call | agent turns / replies | start error (signed) | end error |")
    print("|---|---|---|---|---|")
    for name, got in runs.items():
        for i, c in enumerate(got):
            mine = [r for r in replies if r.get("session") == c["stream"]]
            agent = [(s, e) for sp, s, e in c["turns"] if sp == "agent"]
            pairs = list(zip(agent, mine, strict=False))  # merged turns: paired in order
            ds = [s - (r["start_monotonic"] - c["origin"]) * 1000 for (s, _), r in pairs]
            de = [e - (r["end_monotonic"] - c["origin"]) * 1000 for (_, e), r in pairs]
            print(f"| {name} | {i + 1} | {len(agent)} / {len(mine)} | "
                  f"{' '.join(f'{x:+.0f}' for x in ds)} ms | "
                  f"{' '.join(f'{x:+.0f}' for x in de)} ms |")  # fmt: skip
    print(f"(caller frames stated late: {sum(c['late'] for g in runs.values() for c in g)})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5, help="sequential calls for accuracy")
    parser.add_argument("--concurrency", type=int, nargs="*", default=[1, 8, 32])
    parser.add_argument(
        "--stagger-ms",
        type=float,
        default=250.0,
        help="also run the largest batch with its calls started this far apart (0: not)",
    )
    parser.add_argument("--port", type=int, default=18765)
    parser.add_argument(
        "--pipecat", action="store_true", help="also call the stock pipecat telephony bot"
    )
    parser.add_argument(
        "--hold-ups", action="store_true", help="only the pipecat bot's calls, loop held up"
    )
    parser.add_argument(
        "--busy",
        action="store_true",
        help="only the pipecat bot's calls, loop busy as the greeting begins / all call",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="turnscope-phone-"))
    scenario = work / "scenario.yaml"
    scenario.write_text(SCENARIO)
    sc = load_scenario(scenario)
    if args.hold_ups:
        hold_up_rows(work, sc, args.calls)
        return
    if args.busy:
        busy_rows(work, sc, args.calls)
        return
    truth_log = work / "truth.jsonl"
    agent = start_agent(scenario, truth_log, args.port)
    url = f"ws://127.0.0.1:{args.port}/ws"
    rows = []
    try:
        sequential = []
        for i in range(args.calls):
            sequential += asyncio.run(run_batch(url, sc, 1, work / f"seq{i}"))[0]
        time.sleep(1)
        acc = analyse(sequential, read_truth(truth_log))
        batches = [(n, 0.0) for n in args.concurrency]
        if args.stagger_ms and args.concurrency:
            batches.append((max(args.concurrency), args.stagger_ms))
        for n, stagger in batches:
            agent0 = process_cpu_s(agent.pid)
            calls, cpu, asr, wall = asyncio.run(
                run_batch(url, sc, n, work / f"conc{n}-{stagger:g}", stagger)
            )
            time.sleep(1)
            rows.append(
                {
                    "n": n if not stagger else f"{n}, one every {stagger:g} ms",
                    "cpu": 100 * cpu / wall / n,
                    "asr": 100 * asr / wall / n,
                    "cores": (cpu + asr) / wall,
                    "agent_cores": (process_cpu_s(agent.pid) - agent0) / wall,
                    "late": sum(c["late"] for c in calls),
                    "sent_caller": sum(1 for _ in calls),
                    "lag": max(c["lag_ms"] for c in calls),
                    "lag_at": sorted((c["lag_ms"], c["lag_at_ms"]) for c in calls)[-3:],
                    "degraded": sum(1 for c in calls if c["degraded"]),
                    "a": analyse(calls, read_truth(truth_log)),
                }
            )
    finally:
        agent.terminate()
        agent.wait(10)
    pipecat = None
    if args.pipecat:
        with pipecat_phone_bot(work / "pipecat", reply="short", latency_ms=600) as bot:
            piped = []
            for i in range(args.calls):
                piped += asyncio.run(run_batch(bot.url, sc, 1, work / f"pipecat{i}"))[0]
            time.sleep(1)
            pipecat = pipecat_errors(piped, bot.replies())
    print()
    print(f"reference agent (twilio dialect), {len(sequential)} sequential calls, "
          f"{acc['matched']} matched to its log")  # fmt: skip
    print(
        "| agent | calls matched | agent turn |start/end| error vs its playout log, median / p95 "
        "| signed median | barge-in yield heard vs logged, median / max | yields | agent media "
        "lost / sent |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| reference agent | {acc['matched']} of {len(sequential)} | "
        f"{acc['err_med']:.1f} / {acc['err_p95']:.1f} ms | {acc['bias']:+.1f} ms | "
        f"{acc['yield_med']:.1f} / {acc['yield_max']:.1f} ms | {acc['yields']} | "
        f"{acc['lost']} / {acc['sent']} |"
    )
    for o in acc["outliers"]:
        print(f"  over 25 ms: {o}")
    if pipecat is not None:
        pc = pipecat
        print(
            f"| pipecat phone bot | {pc['matched']} of {args.calls} | "
            f"{pc['err_med']:.1f} / {pc['err_p95']:.1f} ms | {pc['bias']:+.1f} ms | "
            f"{pc['yield_med']:.1f} / {pc['yield_max']:.1f} ms | {pc['yields']} | - |"
        )
        for o in pc["outliers"]:
            print(f"  pipecat: {o}")
    print()
    print("(calls start together unless said; a call lasts about 21 s)")
    print(
        "| concurrent calls | harness CPU per call: call process / ASR process | harness cores "
        "| agent process cores | caller media > 20 ms late | worst lateness | agent media lost / "
        "sent | boundary error med / p95 | degraded calls |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        a = r["a"]
        print(
            f"| {r['n']} | {r['cpu']:.0f}% / {r['asr']:.0f}% | {r['cores']:.2f} | "
            f"{r['agent_cores']:.2f} | {r['late']} | "
            f"{r['lag']:.0f} ms | {a['lost']} / {a['sent']} | {a['err_med']:.1f} / "
            f"{a['err_p95']:.1f} ms | {r['degraded']} |"
        )
    for r in rows:
        if r["lag"] > 20:
            print(f"  {r['n']} calls: worst lateness at {r['lag_at']}")


if __name__ == "__main__":
    main()
