"""The ASR process's CPU priority: live calls on time against turn texts back in time.

    .venv/bin/python benchmarks/asr_priority.py [--rounds 2] [--modes idle 19 10 5 0]

The ASR runs in its own process below the live call (asr/worker.py). How far below decides two
things at once, measured here for each priority (``idle``: nice 19 and SCHED_IDLE; a number: that
niceness alone, under the ordinary scheduler):

- **a busy neighbour**: one live call while other programs keep every core busy at nice 0 (one
  busy loop per core, as an agent with a local model, a build or a browser would; for as long
  as the call's audio lasts, then they stop, so that a starved ASR still finishes): how long
  after each end of turn its text is back (the scripted caller waits at most 4 s for it before
  deciding what to say), and whether the caller's audio still goes out on time;
- **the harness's own load**: 8 calls at once, nothing else busy: the caller frames sent more
  than 20 ms late (the reason the ASR runs below the calls), and the text delay.

Real WebRTC calls on 127.0.0.1 against the reference agent (its own process, nice 0, as in
live.py), the order-status scenario. Text delay as benchmarks/text_delay.py measures it (from
the end of turn's dispatch to the text), per transcribed utterance.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from text_delay import RECORDS, agent_and_scenario, instrument  # noqa: E402

from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.asr import worker  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.capture.webrtc.call import CallOptions  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402

PORT = 18095
SITUATIONS = {"busy neighbour": (1, True), "8 calls at once": (8, False)}


def set_priority(mode: str) -> None:
    """The next ASR process's priority (the current one is stopped)."""
    worker.stop_asr_worker()
    worker.ASR_IDLE = mode == "idle"
    worker.ASR_NICENESS = 19 if mode == "idle" else int(mode)


def hogs(n: int, seconds: float) -> list[subprocess.Popen]:
    """``n`` busy loops at nice 0 for ``seconds`` (the neighbour)."""
    loop = f"import time\nend = time.monotonic() + {seconds}\nwhile time.monotonic() < end: pass"
    return [subprocess.Popen([sys.executable, "-c", loop]) for _ in range(n)]


async def one_call(url: str, sc, outdir: Path) -> dict:  # type: ignore[no-untyped-def]
    run, call, _ = await place_call(
        CallOptions(url, loopback_only=True), sc, load_settings(), scenario_contract(sc), outdir,
        console=None,
    )  # fmt: skip
    turns = run.result.assembly.turns
    # each reply's latency at the caller's ear (end of a caller turn to the agent's start)
    gaps = [b.start_ms - a.end_ms for a, b in itertools.pairwise(turns)
            if a.speaker == "caller" and b.speaker == "agent"]  # fmt: skip
    return {
        "late": call.caller_track.late_frames,
        "lag": call.caller_track.max_lag_ms,
        "degraded": bool(run.result.degraded),
        "audio_s": run.result.audio_ms / 1000,
        "gaps": gaps,
    }


async def group(url: str, sc, n: int, root: Path) -> list[dict]:  # type: ignore[no-untyped-def]
    return list(await asyncio.gather(*[one_call(url, sc, root / f"c{i}") for i in range(n)]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2, help="rounds of every mode and situation")
    parser.add_argument("--modes", nargs="*", default=["idle", "19", "10", "5", "0"])
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    instrument()
    work, sc, agent, url = agent_and_scenario("turnscope-asrprio-", PORT)
    rows: dict[tuple[str, str], dict] = {
        (s, m): {"delays": [], "late": 0, "lag": 0.0, "calls": 0, "degraded": 0}
        for s in SITUATIONS
        for m in args.modes
    }
    t0 = time.perf_counter()
    try:
        # The first decodes are slower; the call's length is how long the neighbour is busy.
        call_s = asyncio.run(group(url, sc, 1, work / "warmup"))[0]["audio_s"]
        for r in range(args.rounds):
            modes = args.modes if r % 2 == 0 else list(reversed(args.modes))
            for situation, (n, busy) in SITUATIONS.items():
                for mode in modes:
                    set_priority(mode)
                    asyncio.run(group(url, sc, 1, work / f"load-{r}-{mode}"))  # model loaded
                    RECORDS.clear()
                    neighbours = hogs(os.cpu_count() or 1, call_s) if busy else []
                    try:
                        calls = asyncio.run(group(url, sc, n, work / f"r{r}-{n}-{mode}"))
                    finally:
                        for h in neighbours:
                            h.kill()
                            h.wait()
                    row = rows[(situation, mode)]
                    row["delays"] += [u["delay_ms"] - u["held_ms"] for u in RECORDS]
                    row["late"] += sum(c["late"] for c in calls)
                    row["lag"] = max(row["lag"], *(c["lag"] for c in calls))
                    row["calls"] += len(calls)
                    row["degraded"] += sum(c["degraded"] for c in calls)
    finally:
        worker.stop_asr_worker()
        agent.terminate()
        agent.wait(10)
    print()
    print(
        f"{args.rounds} rounds, modes alternating; reference agent on 127.0.0.1:{PORT}; "
        f"{os.cpu_count()} cores; busy neighbour = {os.cpu_count()} busy loops at nice 0 "
        "while the call lasts; "
        f"{time.perf_counter() - t0:.0f} s"
    )
    print(
        "| situation | ASR priority | calls | utterances | text delay after end of turn "
        "median / p95 / max (ms) | caller frames > 20 ms late "
        "| max caller send lag | degraded calls |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for (situation, mode), row in rows.items():
        d = row["delays"]
        delay = f"{np.median(d):.0f} / {np.percentile(d, 95):.0f} / {max(d):.0f}" if d else "-"
        name = "SCHED_IDLE, nice 19" if mode == "idle" else f"nice {mode}"
        print(
            f"| {situation} | {name} | {row['calls']} | {len(d)} | {delay} | "
            f"{row['late']} | {row['lag']:.0f} ms | {row['degraded']} |"
        )


if __name__ == "__main__":
    main()
