"""A live call imports nothing on its event loop once it has connected: what its path would
import there on first use is imported before (turnscope/settle.py). Imported mid-call, on the
loop, numpy.ma (a turn's first close) made every caller frame of 8 concurrent calls 40-67 ms
late at once.

A fresh process places a real call to the reference agent over WebRTC (loopback), watching
every import from the moment the heap is settled until the bundle is written.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import reference_agent

SCENARIO = """
name: settled
task: {budgets: {max_latency_ms: 2500}}
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 600}
agent: {voice: en-gb, latency_ms: 400}
script:
  - agent: Hello, how can I help?
  - caller: I would like a refund for my order please.
  - agent: Sure. You have thirty days to send it back.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""

# Runs in the fresh process: settle_heap is wrapped so that, once it has run, every import is
# written down (its name, thread and time) until the call's bundle is complete.
CALLER = """
import asyncio, json, sys, threading, time
from pathlib import Path
import turnscope.live_call as live_call
from tests.interop.pipecat import call_bot

imported = []

class Watch:
    def find_spec(self, name, path=None, target=None):
        imported.append([name, threading.current_thread().name, time.monotonic()])
        return None

settle = live_call.settle_heap

def settled():
    settle()
    sys.meta_path.insert(0, Watch())

live_call.settle_heap = settled
url, scenario, out, as_load = sys.argv[1:5]


async def main():
    if as_load == "load":  # prepared as a load worker is before its calls
        from turnscope.asr.settings import load_settings
        from turnscope.capture.webrtc.call import CallOptions
        from turnscope.load.calls import LoadJob, prepare

        await prepare(LoadJob(CallOptions(url), Path(scenario), load_settings(), Path(out)))
    await call_bot(url, Path(scenario), Path(out))


asyncio.run(main())
print(json.dumps(imported))
"""


def _settled_call(tmp_path: Path, as_load: str) -> tuple[dict, list]:
    """A call in a fresh process (``load``: its process prepared as a load worker's is): its
    result.json and what was imported once the heap was settled (name, thread, monotonic s)."""
    scenario = tmp_path / "settled.yaml"
    scenario.write_text(SCENARIO)
    with reference_agent(scenario) as url:
        proc = subprocess.run(
            [sys.executable, "-c", CALLER, url, str(scenario), str(tmp_path / "call"), as_load],
            capture_output=True, text=True, timeout=120, cwd=Path(__file__).parents[1],
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    assert result["script"]["finished"] == "scenario finished", result["script"]
    return result, json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_call_imports_nothing_after_it_connects(tmp_path: Path):
    result, imported = _settled_call(tmp_path, "call")
    # Connecting imports what DTLS needs (the process's first call: no other is live yet).
    origin = result["source"]["details"]["clock_origin_monotonic"]
    late = [(name, round((t - origin) * 1000)) for name, thread, t in imported
            if t > origin and thread == "MainThread"]  # fmt: skip
    assert late == [], late


def test_a_load_workers_call_imports_nothing_on_any_thread(tmp_path: Path):
    """In a load worker other calls are live as one ends: the bundle's thread, writing it, must
    not compile the report's modules then (turnscope.settle.BUNDLE_MODULES)."""
    result, imported = _settled_call(tmp_path, "load")
    origin = result["source"]["details"]["clock_origin_monotonic"]
    late = [(name, thread) for name, thread, t in imported if t > origin]
    assert late == [], late
