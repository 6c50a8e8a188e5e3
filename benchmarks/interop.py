"""Calls against an agent turnscope did not write: the stock pipecat bot, side by side with the
reference agent, in one run. Prints two tables.

    .venv/bin/python benchmarks/interop.py [--calls 5] [--real-calls 2] [--sweep]

Per agent (each in its own process, each logging when it really sent every reply: the
reference agent from its player, the pipecat bot from inside pipecat's output track; both on
time.monotonic(), the call clock's own base):
- agent turn start/end error vs that log, median / p95, after the constant one-way delay (shown);
- measured reply latency at the caller's ear vs the configured one: the difference (the agent's
  own endpointing plus transport; median) and its spread across replies (p95 - p5);
- barge-ins planned / exercised / yielded within the verifier's 600 ms, with ``barge_in_at``
  early and mid;
- set-up time (offer to connected), median.
Then (``--real-calls``, 0 to skip) the pipecat bot answering with recordings of real people, room
tone kept, between digital silence, over WebRTC and a phone line (issue 28: benchmarks/live_real.py
does it; its table is printed here beside the others).
With ``--sweep``: every shipped scenario against every behaviour of the bot (greeting or not,
short, long and double replies, ignoring barge-ins, never answering, talking without a pause,
sending silence, dying mid-call, refusing the offer): how each call ended and how long it took,
so a hang shows as a call that ran past its scenario's timeout.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

import live_real  # noqa: E402

from tests.interop.pipecat import free_port, pipecat_bot  # noqa: E402
from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.capture.webrtc.call import CallOptions  # noqa: E402
from turnscope.configs import config_path  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402
from turnscope.scoring.verifier import verifier_facts  # noqa: E402

LATENCY_MS = 600
# The caller opens (neither agent greets); two barge-ins placed to fit any reply length.
SCENARIO = """
name: interop-bench
task: {budgets: {max_latency_ms: 2500}}
caller: {voice: en-us, timeout_s: 70, hangup_after_ms: 800}
agent: {voice: en-gb, latency_ms: LATENCY, yield_ms: 250}
script:
  - caller: Hi, I would like a refund for my headphones please.
    at_ms: 500
  - agent: >-
      Sure, I can help with that. Let me explain how it works. First, I look up your account.
      Then I check your recent orders.
  - caller: wait
    barge_in_at: early
  - agent: Yes, go ahead.
  - caller: Can I send them back by post?
  - agent: >-
      Yes. You can send them back by post. The return label is free, and your refund starts
      as soon as the parcel is scanned.
  - caller: sorry, one more thing
    barge_in_at: mid
  - agent: Of course.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
""".replace("LATENCY", str(LATENCY_MS))


def _stats(values: list[float]) -> tuple[float, float]:
    if not values:
        return float("nan"), float("nan")
    return float(np.median(values)), float(np.percentile(values, 95))


@contextlib.contextmanager
def reference_agent(scenario: Path, work: Path) -> Iterator[tuple[str, Path]]:
    """`turnscope agent` in its own process; its URL and truth log (one JSON line per call)."""
    port = free_port()
    truth = work / "reference-truth.jsonl"
    exe = Path(sys.executable).with_name("turnscope")
    proc = subprocess.Popen(
        [str(exe), "agent", "--port", str(port), "--scenario", str(scenario),
         "--truth-log", str(truth), "--no-greet", "--latency-ms", str(LATENCY_MS)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    line = proc.stdout.readline() if proc.stdout else ""
    if "reference agent on" not in line:
        proc.kill()
        raise SystemExit(f"the reference agent did not start: {line}")
    try:
        yield f"http://127.0.0.1:{port}/api/offer", truth
    finally:
        proc.terminate()
        proc.wait(10)


def reference_replies(truth: Path, origin: float) -> list[tuple[float, float]]:
    """The reference agent's sends in the call whose clock started at ``origin``."""
    calls = [json.loads(x) for x in truth.read_text().splitlines() if x.strip()]
    call = min(calls, key=lambda c: abs((c["clock_origin_monotonic"] or 0) - origin))
    return [
        ((u["start_monotonic"] - origin) * 1000, (u["end_monotonic"] - origin) * 1000)
        for u in call["utterances"]
        if u["start_monotonic"] is not None
    ]


def pipecat_replies(records: list[dict[str, Any]], origin: float) -> list[tuple[float, float]]:
    return [
        ((r["start_monotonic"] - origin) * 1000, (r["end_monotonic"] - origin) * 1000)
        for r in records
        if r.get("event") == "reply" and r.get("start_monotonic") is not None
    ]


async def one_call(url: str, scenario: Path, outdir: Path) -> dict[str, Any]:
    sc = load_scenario(scenario)
    contract = scenario_contract(sc)
    run, call, caller = await place_call(
        CallOptions(url, loopback_only=True), sc, load_settings(), contract, outdir, console=None
    )
    dialogue = run.result.assembly.dialogue()
    facts = verifier_facts(dialogue, budgets=contract.verifier_budgets)
    turns = run.result.assembly.turns
    return {
        "origin": call.clock.origin,
        "agent_turns": [(t.start_ms, t.end_ms) for t in turns if t.speaker == "agent"],
        "latencies": [g.gap_ms for g in facts.gaps],
        "barge": caller.report()["barge_ins"],
        "yielded": sum(1 for b in facts.barge_ins if b.handled),
        "connect_ms": call.connect_ms,
        "degraded": list(run.result.degraded),  # every stage's, as the run assembled them
    }


def analyse(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Boundary errors after each call's constant one-way delay; latency vs configured."""
    starts, ends, one_ways, over = [], [], [], []
    matched = 0
    for c in calls:
        sent, heard = c["sent"], c["agent_turns"]
        over += [g - LATENCY_MS for g in c["latencies"]]
        if len(sent) != len(heard) or not sent:
            continue
        matched += 1
        offsets = [h[k] - s[k] for h, s in zip(heard, sent, strict=True) for k in (0, 1)]
        one_way = statistics.median(offsets)
        one_ways.append(one_way)
        starts += [abs(h[0] - s[0] - one_way) for h, s in zip(heard, sent, strict=True)]
        ends += [abs(h[1] - s[1] - one_way) for h, s in zip(heard, sent, strict=True)]
    return {
        "calls": len(calls),
        "matched": matched,
        "start": _stats(starts),
        "end": _stats(ends),
        "one_way": statistics.median(one_ways) if one_ways else float("nan"),
        "over_med": statistics.median(over) if over else float("nan"),
        "over_spread": float(np.percentile(over, 95) - np.percentile(over, 5)) if over else 0.0,
        "planned": sum(c["barge"]["planned"] for c in calls),
        "exercised": sum(c["barge"]["exercised"] for c in calls),
        "yielded": sum(c["yielded"] for c in calls),
        "setup": statistics.median(c["connect_ms"] for c in calls),
        "degraded": sum(1 for c in calls if c["degraded"]),
    }


def accuracy(n: int, work: Path) -> list[tuple[str, dict[str, Any]]]:
    scenario = work / "interop.yaml"
    scenario.write_text(SCENARIO)
    rows = []
    with reference_agent(scenario, work) as (url, truth):
        calls = []
        for i in range(n):
            c = asyncio.run(one_call(url, scenario, work / f"ref{i}"))
            time.sleep(0.5)  # the agent writes its log line when the call has closed
            c["sent"] = reference_replies(truth, c["origin"])
            calls.append(c)
        rows.append(("reference agent", analyse(calls)))
    for reply in ("long", "short"):
        knobs = {"greeting": False, "reply": reply, "latency_ms": LATENCY_MS}
        calls = []
        for i in range(n):
            with pipecat_bot(work / f"bot-{reply}{i}", **knobs) as bot:
                c = asyncio.run(one_call(bot.url, scenario, work / f"pc-{reply}{i}"))
                c["sent"] = pipecat_replies(bot.truth(), c["origin"])
            calls.append(c)
        rows.append((f"pipecat bot, {reply} replies", analyse(calls)))
    return rows


SWEEP_KNOBS: dict[str, dict[str, Any]] = {
    "greets, long": {"greeting": True, "reply": "long"},
    "no greeting, short": {"greeting": False, "reply": "short"},
    "double replies": {"greeting": False, "reply": "double"},
    "ignores barge-ins": {"greeting": True, "reply": "long", "ignore_barge_ins": True},
    "never answers": {"greeting": False, "mode": "mute"},
    "silence only": {"greeting": False, "mode": "silence"},
    "talks nonstop": {"greeting": False, "mode": "nonstop"},
    "dies after 8 s": {"greeting": False, "mode": "die-after", "die_after_s": 8},
    "refuses the offer": {"greeting": False, "mode": "refuse"},
}


def sweep(work: Path) -> list[dict[str, Any]]:
    """Every shipped scenario against every bot behaviour, through the `call` command."""
    out = []
    exe = Path(sys.executable).with_name("turnscope")
    for scenario in sorted(config_path("scenarios").glob("*.yaml")):
        limit = load_scenario(scenario).caller.timeout_s
        for name, knobs in SWEEP_KNOBS.items():
            outdir = work / "sweep" / f"{scenario.stem}-{name.replace(' ', '_')}"
            with pipecat_bot(work / "sweep-bots" / outdir.name, **knobs) as bot:
                t0 = time.monotonic()
                proc = subprocess.run(
                    [str(exe), "call", bot.url, "--scenario", str(scenario), "--loopback-only",
                     "-q", "-o", str(outdir)],
                    capture_output=True, text=True, timeout=limit + 120,
                )  # fmt: skip
                wall = time.monotonic() - t0
            result = json.loads((outdir / "result.json").read_text())
            script = result.get("script") or {}
            out.append(
                {
                    "scenario": scenario.stem,
                    "bot": name,
                    "exit": proc.returncode,
                    "wall_s": wall,
                    "limit_s": limit,
                    "ended": script.get("finished") or result.get("error") or "",
                    "spoken": f"{script.get('spoken', 0)}/{len(script.get('lines') or [])}",
                    "barge": script.get("barge_ins") or {},
                }
            )
            print(f"  {scenario.stem} x {name}: exit {proc.returncode} in {wall:.0f} s", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5, help="calls per agent")
    parser.add_argument(
        "--real-calls", type=int, default=2, help="calls per transport with recorded replies"
    )
    parser.add_argument("--sweep", action="store_true", help="shipped scenarios x bot behaviours")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="turnscope-interop-"))
    rows = accuracy(args.calls, work)
    real = live_real.run_rows(args.real_calls, work / "real") if args.real_calls > 0 else []
    swept = sweep(work) if args.sweep else []
    print()
    print(
        f"{args.calls} calls per agent, configured reply latency {LATENCY_MS} ms, barge-ins "
        "placed with barge_in_at early and mid"
    )
    print(
        "| agent | calls matched to its log | agent turn \\|start\\| error med / p95 | "
        "\\|end\\| error med / p95 | one-way delay (removed) | ear latency - configured: "
        "median / spread | barge-ins planned / exercised / yielded | set-up time | degraded |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, a in rows:
        print(
            f"| {name} | {a['matched']}/{a['calls']} | {a['start'][0]:.1f} / {a['start'][1]:.1f} "
            f"ms | {a['end'][0]:.1f} / {a['end'][1]:.1f} ms | {a['one_way']:.0f} ms | "
            f"{a['over_med']:.0f} / {a['over_spread']:.0f} ms | {a['planned']} / "
            f"{a['exercised']} / {a['yielded']} | {a['setup']:.0f} ms | {a['degraded']} |"
        )
    if real:
        live_real.print_rows(real, args.real_calls)
    if swept:
        print()
        print(
            "| scenario | bot | exit | wall / scenario timeout | caller lines spoken | "
            "barge-ins planned / exercised | how it ended |"
        )
        print("|---|---|---|---|---|---|---|")
        for r in swept:
            b = r["barge"]
            print(
                f"| {r['scenario']} | {r['bot']} | {r['exit']} | {r['wall_s']:.0f} / "
                f"{r['limit_s']:.0f} s | {r['spoken']} | {b.get('planned', '-')} / "
                f"{b.get('exercised', '-')} | {r['ended'][:70]} |"
            )
        hung = [r for r in swept if r["wall_s"] > r["limit_s"] + 30]
        print(f"\ncalls that ran past their scenario timeout + 30 s: {len(hung)} of {len(swept)}")


if __name__ == "__main__":
    main()
