"""Live calls' turn texts with batched ASR: how long after each end of turn its text is back.

    .venv/bin/python benchmarks/text_delay.py [--rounds 3] [--sizes 1 8] [--batched-only]
        [--json FILE]

Real WebRTC calls on 127.0.0.1 against the reference agent (its own process, as in live.py),
the order-status scenario, 1 call at a time and 8 at once. Each round runs both decodings,
alternating which goes first: ``asr.batch_size`` 1 (one utterance at a time, as before
batching) and the default settings (batched). Measured in this process, per transcribed
utterance: from the moment the pipeline dispatches it for transcription (``_Stages.transcribe``
starts, at the end of turn; this includes waiting for the previous utterance when it is the
context, not a caller turn's wait for the agent's answer, ``turnscope/answer_hold.py``: its
``held_ms`` is taken off) to the moment its text is back, and the batch it was decoded in
(``Transcription.batch``). Also the caller frames sent more than 20 ms late (the calls' audio),
and apart the agent's turns: the texts a reacting or LLM-driven caller waits for, at most
``TRANSCRIPT_WAIT_MS`` (actors/caller/conversation.py) before it decides without them.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from live import SCENARIO, start_agent  # noqa: E402

from turnscope import pipeline  # noqa: E402
from turnscope.actors.caller.conversation import TRANSCRIPT_WAIT_MS  # noqa: E402
from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.asr.settings import Settings, load_settings  # noqa: E402
from turnscope.asr.transcriber import Transcriber, Transcription  # noqa: E402
from turnscope.capture.webrtc.call import CallOptions  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402

PORT = 18090
CONCURRENCY = (1, 8)
RECORDS: list[dict] = []  # one per transcribed utterance, since the last clear
_submit_ms: dict[int, float] = {}  # id(utterance) -> its Transcriber call (submit to result)


def instrument() -> None:
    """Time ``_Stages.transcribe`` from its call (in ``dispatch``, at the end of turn) and
    ``Transcriber.__call__`` (submit to result), in this process only."""
    stage, call = pipeline._Stages.transcribe, Transcriber.__call__

    async def timed_call(self, utt, context=None) -> Transcription:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        tr = await call(self, utt, context)
        _submit_ms[id(utt)] = (time.perf_counter() - t0) * 1000
        return tr

    def timed_stage(self, utt, previous):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()  # now, as dispatch creates the task, not when it first runs
        inner = stage(self, utt, previous)

        async def run() -> Transcription:
            tr = await inner
            RECORDS.append(
                {
                    "channel": utt.channel,
                    "duration_ms": utt.duration_ms,
                    "delay_ms": (time.perf_counter() - t0) * 1000,
                    # a live caller turn's wait for the agent's answer (call ms), inside delay_ms
                    "held_ms": self.held_ms.get(utt.key, 0.0),
                    "submit_ms": _submit_ms.pop(id(utt), float("nan")),
                    "batch": tr.batch,
                    "asr_ms": tr.asr_ms,
                    "context": tr.context_ms > 0,
                }
            )
            return tr

        return run()

    pipeline._Stages.transcribe = timed_stage  # type: ignore[method-assign]
    Transcriber.__call__ = timed_call  # type: ignore[method-assign]


async def one_call(url: str, sc, settings: Settings, outdir: Path) -> dict:  # type: ignore[no-untyped-def]
    options = CallOptions(url, loopback_only=True)
    run, call, _ = await place_call(
        options, sc, settings, scenario_contract(sc), outdir, console=None
    )
    return {"late_frames": call.caller_track.late_frames, "degraded": list(run.result.degraded)}


async def run_group(url: str, sc, settings: Settings, n: int, root: Path) -> list[dict]:  # type: ignore[no-untyped-def]
    return list(
        await asyncio.gather(*[one_call(url, sc, settings, root / f"c{i}") for i in range(n)])
    )


def agent_and_scenario(prefix: str, port: int):  # type: ignore[no-untyped-def]
    """A work folder, the order-status scenario, the reference agent serving it on ``port``
    (its own process) and its offer URL."""
    work = Path(tempfile.mkdtemp(prefix=prefix))
    scenario = work / "scenario.yaml"
    scenario.write_text(SCENARIO)
    agent = start_agent(scenario, work / "truth.jsonl", port)
    return work, load_scenario(scenario), agent, f"http://127.0.0.1:{port}/api/offer"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each setting and size")
    parser.add_argument("--json", type=Path, help="also write every utterance's record here")
    parser.add_argument("--sizes", type=int, nargs="*", default=list(CONCURRENCY))
    parser.add_argument("--batched-only", action="store_true", help="the default settings only")
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    instrument()
    batched = load_settings()
    single = batched.model_copy(update={"asr": batched.asr.model_copy(update={"batch_size": 1})})
    decodings = {
        "one at a time (batch_size 1, as before)": single,
        f"batched (batch_size {batched.asr.batch_size}, default)": batched,
    }
    if args.batched_only:
        decodings = dict(list(decodings.items())[1:])
    work, sc, agent, url = agent_and_scenario("turnscope-textdelay-", PORT)
    groups: dict[tuple[int, str], dict] = {
        (n, name): {"utts": [], "late": 0, "calls": 0, "degraded": 0}
        for n in args.sizes
        for name in decodings
    }
    t_start = time.perf_counter()
    try:
        # One uncounted call first: the model's first decodes are slower.
        asyncio.run(run_group(url, sc, batched, 1, work / "warmup"))
        for r in range(args.rounds):
            for n in args.sizes:
                names = list(decodings) if r % 2 == 0 else list(reversed(decodings))
                for name in names:
                    RECORDS.clear()
                    calls = asyncio.run(
                        run_group(url, sc, decodings[name], n, work / f"r{r}-n{n}-{name[:3]}")
                    )
                    g = groups[(n, name)]
                    g["utts"] += [dict(rec, round=r) for rec in RECORDS]
                    g["late"] += sum(c["late_frames"] for c in calls)
                    g["calls"] += len(calls)
                    g["degraded"] += sum(1 for c in calls if c["degraded"])
    finally:
        agent.terminate()
        agent.wait(10)
    wall = time.perf_counter() - t_start
    if args.json:
        args.json.write_text(
            json.dumps({f"{n} | {name}": g for (n, name), g in groups.items()}, indent=1)
        )
    print()
    print(
        f"{args.rounds} rounds x {args.sizes} calls at once x {len(decodings)} decodings, "
        f"alternating, after 1 warm-up call; reference agent on 127.0.0.1:{PORT}, "
        f"{os.cpu_count()} cores, {wall:.0f} s"
    )
    print(
        "| calls at once | decoding | utterances | text delay after end of turn "
        "median / p95 / max (ms) | mean batch size | agent turns: text delay median / p95 / max "
        f"(ms), over {TRANSCRIPT_WAIT_MS} ms | caller frames > 20 ms late |"
    )
    print("|---|---|---|---|---|---|---|")
    for (n, name), g in groups.items():
        delays = [u["delay_ms"] - u["held_ms"] for u in g["utts"]]
        batches = [u["batch"] for u in g["utts"]]
        if delays:
            d = f"{np.median(delays):.0f} / {np.percentile(delays, 95):.0f} / {max(delays):.0f}"
            b = f"{np.mean(batches):.2f}"
        else:
            d, b = "-", "-"
        agent = [u["delay_ms"] for u in g["utts"] if u["channel"] == "agent"]
        a = "-"
        if agent:
            over = sum(x > TRANSCRIPT_WAIT_MS for x in agent)
            a = (f"{np.median(agent):.0f} / {np.percentile(agent, 95):.0f} / {max(agent):.0f}, "
                 f"{over} of {len(agent)}")  # fmt: skip
        degraded = f" ({g['degraded']} degraded calls)" if g["degraded"] else ""
        print(f"| {n} | {name}{degraded} | {len(delays)} | {d} | {b} | {a} | {g['late']} |")


if __name__ == "__main__":
    main()
