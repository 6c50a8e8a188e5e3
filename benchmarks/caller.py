"""The conversational caller against the stock pipecat bot asking a question no script line
foresees (its order-number question), with each driver.

    .venv/bin/python benchmarks/caller.py [--calls 20] [--concurrency 2] [--skip-llm]

The bot (tests/interop/pipecat_bot.py --reply order, its own venv) asks for the order number and
branches on the answer; the caller must answer from its facts and reach its goal (the bot saying
the order ships tomorrow). Printed, per driver:
- goal reached: the share of calls whose caller heard the goal (deterministic: facts and
  branches; llm: SmolLM2-135M behind llama.cpp's server, as the tests use it; a larger model is
  a flag away, and this tiny one is not expected to keep a caller's character);
- the caller's reaction: the agent's end of turn (as the endpointer placed it) to the caller's
  first sample sent, median and p95, beside the think time configured (the endpointer's
  end-of-turn wait plus after_agent_ms for the script; for the LLM, its answer time too);
- replay: the LLM calls replayed with --caller-from (no LLM): how many lines replayed and how far
  each went out from the recorded offset (the target: within one 20 ms frame).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.interop.llm_server import llm_server  # noqa: E402
from tests.interop.pipecat import pipecat_bot  # noqa: E402
from turnscope.actors.caller.llm import LlmEndpoint  # noqa: E402
from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.caller_llm import recorded_turns  # noqa: E402
from turnscope.capture.webrtc.call import CallOptions  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402

FACTS = """
facts:
  order number:
    value: four two seven
    answer: My order number is four two seven.
    asked_by: [order number, your order]
goal: {description: find out when my order ships, reached_when: {says: [tomorrow morning]}}
until: {agent_says: {says: [goodbye]}, goal_reached: false}
"""
SCRIPTED = f"""
name: order-script
task: {{budgets: {{max_latency_ms: 3000}}}}
caller: {{voice: en-us, timeout_s: 60, hangup_after_ms: 600}}
{FACTS}
script:
  - agent: Hello, thanks for calling. How can I help you today?
  - caller: Hi, I would like to know when my order ships.
  - agent: Can I have your order number please?
  - agent: Thank you. Your order ships tomorrow morning. Is there anything else?
  - choose:
      - when: {{says: [anything else]}}
        caller: No, that is all. Thank you.
      - caller: Sorry, could you repeat that?
  - agent: You are welcome. Goodbye.
"""
LLM = f"""
name: order-llm
task: {{budgets: {{max_latency_ms: 3000}}}}
caller:
  voice: en-us
  timeout_s: 90
  hangup_after_ms: 600
  driver: llm
  persona: a customer who answers in one short sentence
  llm: {{max_turns: 3, max_tokens: 240}}
{FACTS}
script:
  - agent: Hello, thanks for calling. How can I help you today?
  - caller: Hi, I would like to know when my order ships.
  - agent: Can I have your order number please?
  - agent: Thank you. Your order ships tomorrow morning. Is there anything else?
  - agent: You are welcome. Goodbye.
"""


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] if s else float("nan")


def reactions(result: dict[str, Any], turns: list[dict[str, Any]]) -> list[float]:
    """The agent's end of turn to the caller's next line going out, for every caller line that
    waited for the agent (the opening line included)."""
    ends = sorted(t["end_ms"] for t in turns if t["speaker"] == "agent")
    out = []
    for line in result["script"]["lines"]:
        sent = (line.get("sent") or {}).get("start_ms")
        if line.get("status") != "spoken" or sent is None:
            continue
        before = [e for e in ends if e < sent]
        if before:
            out.append(sent - before[-1])
    return out


async def one_call(
    url: str, scenario: Path, outdir: Path, llm: LlmEndpoint | None, replay: Any = None
) -> dict[str, Any]:
    sc = load_scenario(scenario)
    await place_call(
        CallOptions(url, loopback_only=True), sc, load_settings(), scenario_contract(sc),
        outdir, console=None, caller_llm=llm, caller_from=replay,
    )  # fmt: skip
    result = json.loads((outdir / "result.json").read_text())
    turns = json.loads((outdir / "transcript.json").read_text())["turns"]
    return {"result": result, "turns": turns, "outdir": outdir}


async def run_driver(
    name: str, scenario: Path, work: Path, calls: int, conc: int, llm: LlmEndpoint | None
) -> list[dict[str, Any]]:
    sem = asyncio.Semaphore(conc)

    async def go(k: int) -> dict[str, Any]:
        async with sem:
            bot_cm = pipecat_bot(work / f"bot-{name}-{k}", greeting=True, reply="order",
                                 latency_ms=400)  # fmt: skip
            bot = await asyncio.to_thread(bot_cm.__enter__)
            try:
                return await one_call(bot.url, scenario, work / f"{name}-{k}", llm)
            finally:
                await asyncio.to_thread(bot_cm.__exit__, None, None, None)

    return list(await asyncio.gather(*(go(k) for k in range(calls))))


async def replays(runs: list[dict[str, Any]], scenario: Path, work: Path) -> list[float]:
    """Each LLM call replayed (no LLM): the replayed lines' distance from the recorded offset."""
    gaps: list[float] = []
    for k, run in enumerate(runs):
        try:
            recorded = recorded_turns(run["outdir"])
        except Exception:  # a call whose LLM failed before its first turn: nothing to replay
            continue
        bot_cm = pipecat_bot(work / f"bot-replay-{k}", greeting=True, reply="order", latency_ms=400)
        bot = await asyncio.to_thread(bot_cm.__enter__)
        try:
            again = await one_call(bot.url, scenario, work / f"replay-{k}", None, recorded)
        finally:
            await asyncio.to_thread(bot_cm.__exit__, None, None, None)
        for a, b in zip(recorded, again["result"]["script"]["llm"]["turns"], strict=False):
            if b.get("source") == "replayed" and a.get("sent_offset_ms") is not None:
                gaps.append(abs(b["sent_offset_ms"] - a["sent_offset_ms"]))
    return gaps


def row(name: str, runs: list[dict[str, Any]], think: str) -> str:
    reached = sum(1 for r in runs if (r["result"]["script"].get("goal") or {}).get("reached"))
    rt = [x for r in runs for x in reactions(r["result"], r["turns"])]
    failed = sum(1 for r in runs if r["result"]["degraded"])
    return (
        f"| {name} | {reached} of {len(runs)} | {statistics.median(rt):.0f} / {pct(rt, 0.95):.0f}"
        f" ms | {think} | {failed} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--llm-calls", type=int, default=8, help="calls with the LLM driver")
    ap.add_argument("--skip-llm", action="store_true")
    a = ap.parse_args()
    rows, gaps = [], []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "script.yaml").write_text(SCRIPTED)
        (work / "llm.yaml").write_text(LLM)
        scripted = asyncio.run(
            run_driver("script", work / "script.yaml", work, a.calls, a.concurrency, None)
        )
        rows.append(row("deterministic", scripted, "600 ms end of turn + 500 ms think"))
        print(rows[-1], flush=True)  # as it comes: the LLM part takes long
        if not a.skip_llm:
            with llm_server(work / "llm") as server:
                endpoint = LlmEndpoint(server.url, server.model)
                llm_runs = asyncio.run(
                    run_driver("llm", work / "llm.yaml", work, a.llm_calls, a.concurrency, endpoint)
                )
            asked = [t["latency_ms"] for r in llm_runs
                     for t in (r["result"]["script"].get("llm") or {}).get("turns", [])
                     if t.get("latency_ms")]  # fmt: skip
            think = f"600 ms end of turn + LLM {statistics.median(asked or [0]):.0f} ms median"
            rows.append(row("llm (SmolLM2-135M)", llm_runs, think))
            gaps = asyncio.run(replays(llm_runs, work / "llm.yaml", work))
    print(
        f"\n{a.calls} deterministic and {a.llm_calls} LLM-driven calls against the pipecat bot "
        "asking for the order number\n"
    )
    print("| driver | goal reached | reaction median / p95 | think time configured | degraded |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))
    if gaps:
        print(
            f"\nreplayed (--caller-from, no LLM): {len(gaps)} lines, offset error median "
            f"{statistics.median(gaps):.1f} ms, max {max(gaps):.1f} ms (target: one 20 ms frame)"
        )


if __name__ == "__main__":
    main()
