"""How late a barge-in keyed on the agent's words (``barge_in_on``) starts after the phrase is
spoken: real WebRTC calls on loopback against the reference agent (`turnscope agent`, its own
process), whose long line says the phrase mid-way.

    .venv/bin/python benchmarks/partials.py [--calls 5] [--concurrency 1 8]

Per call: the lag the call recorded (barge-in audio out - the phrase's end by the partial's word
times) and the lag against the line's own audio (its heard start + where the phrase ends in it,
Whisper's word times on the whole line), partials decoded, how long one waited for the worker,
and how long a partial took to reach the caller after its audio's end. Printed as a table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from turnscope.actors.caller.phrase import words_through  # noqa: E402
from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.actors.caller.speech import speak  # noqa: E402
from turnscope.asr.partial import transcribe_partial  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.capture.webrtc.call import CallOptions  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402

PHRASE = "refund policy"
LONG = (
    "Sure, I can help you with that today. Before we start, let me explain our refund policy, "
    "which gives you thirty days to send the item back for a full refund of the price you paid, "
    "and the return label is free."
)
SCENARIO = f"""
name: partials-bench
caller: {{voice: en-us, timeout_s: 60, hangup_after_ms: 600}}
agent: {{voice: en-gb, latency_ms: 500, yield_ms: 200}}
script:
  - caller: I would like a refund for my order please.
    at_ms: 400
  - agent: {LONG}
  - caller: wait
    barge_in_on: {PHRASE}
  - agent: Yes, go ahead.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def start_agent(scenario: Path, port: int) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("turnscope")
    cmd = [str(exe), "agent", "--port", str(port), "--scenario", str(scenario)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    line = proc.stdout.readline()
    if "reference agent on" not in line:
        raise SystemExit(f"agent did not start: {line}{proc.stdout.read()}")
    return proc


def phrase_end_ms() -> float:
    """Where the phrase ends in the agent line's audio (ms from its voiced start)."""
    audio = speak(LONG, voice="en-gb")
    decoded = transcribe_partial(audio, 0.0, len(audio) / 16, load_settings().asr)
    k = words_through([w.text for w in decoded.words], PHRASE)
    if k is None:
        raise SystemExit(f"Whisper did not hear {PHRASE!r} in the line: {decoded.text}")
    return decoded.words[k - 1].end_ms


async def one_call(url: str, sc, outdir: Path, phrase_end: float) -> dict:
    options = CallOptions(url, loopback_only=True)
    run, _call, _ = await place_call(
        options, sc, load_settings(), scenario_contract(sc), outdir, console=None
    )
    script = json.loads((outdir / "result.json").read_text())["script"]
    line = next(r for r in script["lines"] if r["line"] == 2)
    hit = line.get("phrase") or {}
    sent = hit.get("sent_ms")
    starts = [h.start_ms for h in run.result.heard if h.channel == "agent"]
    before = [s for s in starts if sent is not None and s < sent]
    truth = before[-1] + phrase_end if before else None
    return {
        "exercised": line.get("spoken_as") == "barge_in",
        "lag": hit.get("lag_ms"),
        "lag_truth": None if sent is None or truth is None else sent - truth,
        "partials": script.get("partials", {}),
    }


def stats(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):.0f} / {np.percentile(values, 95):.0f}"


async def run(url: str, sc, calls: int, concurrency: int, root: Path, phrase_end: float):
    out = []
    for batch in range(0, calls, concurrency):
        n = min(concurrency, calls - batch)
        dirs = [root / f"c{concurrency}-{batch + i}" for i in range(n)]
        out += await asyncio.gather(*(one_call(url, sc, d, phrase_end) for d in dirs))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=5, help="calls per concurrency level")
    ap.add_argument("--concurrency", type=int, nargs="+", default=[1, 8])
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="partials-bench-"))
    path = root / "scenario.yaml"
    path.write_text(SCENARIO)
    sc = load_scenario(path)
    phrase_end = phrase_end_ms()
    from tests.conftest import free_port

    port = free_port()
    agent = start_agent(path, port)
    rows = []
    try:
        for conc in args.concurrency:
            calls = max(args.calls, conc)
            url = f"http://127.0.0.1:{port}/api/offer"
            results = asyncio.run(run(url, sc, calls, conc, root, phrase_end))
            ok = [r for r in results if r["exercised"]]
            delays = [r["partials"].get("delay_ms_median") for r in results]
            rows.append(
                (
                    conc,
                    f"{len(ok)}/{len(results)}",
                    stats([r["lag"] for r in ok if r["lag"] is not None]),
                    stats([r["lag_truth"] for r in ok if r["lag_truth"] is not None]),
                    stats([d for d in delays if d is not None]),
                    sum(r["partials"].get("decoded", 0) for r in results) / len(results),
                    stats(
                        [
                            r["partials"]["wait_ms_median"]
                            for r in results
                            if r["partials"].get("wait_ms_median") is not None
                        ]
                    ),
                )
            )
    finally:
        agent.terminate()
        agent.wait(timeout=10)
    head = ("calls at once", "barged in", "lag recorded ms (med / p95)",
            "lag vs line audio ms (med / p95)", "partial delay ms (med / p95)",
            "partials / call", "wait for the worker ms (med / p95)")  # fmt: skip
    print(" | ".join(head))
    for r in rows:
        print(" | ".join([str(r[0]), r[1], r[2], r[3], r[4], f"{r[5]:.1f}", r[6]]))


if __name__ == "__main__":
    main()
