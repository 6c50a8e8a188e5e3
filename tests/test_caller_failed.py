"""A bug in the scripted caller ends the call there: hung up, what was captured kept, the call
degraded with the error (before: the caller's task died and the call went on, unanswered, until
something else ended it: 300 s on a phone-line test)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

SCENARIO = """
name: broken-caller
caller: {voice: en-us, timeout_s: 60, hangup_after_ms: 500}
agent: {voice: en-gb, latency_ms: 400}
script:
  - agent: Hello, this is the help desk.
  - caller: Hi, I have a question about my bill.
  - agent: Of course, go ahead.
"""


def test_a_caller_that_fails_ends_the_call_and_says_why(tmp_path: Path, monkeypatch):
    from tests.conftest import reference_agent
    from tests.interop.pipecat import call_bot
    from turnscope.actors.caller.caller import ScriptedCaller

    async def broken(self: ScriptedCaller) -> None:  # a test double: the error path
        await asyncio.sleep(1.0)
        raise KeyError("start_ms")

    monkeypatch.setattr(ScriptedCaller, "_script", broken)
    scenario = tmp_path / "broken.yaml"
    scenario.write_text(SCENARIO)
    with reference_agent(scenario) as url:
        *_, caller = asyncio.run(call_bot(url, scenario, tmp_path / "call"))
    assert caller.finished_reason == "the scripted caller failed (KeyError)"
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    assert "caller_failed" in result["degraded_codes"], result["degraded"]
    assert "KeyError" in result["script"]["error"]
    assert result["timings"]["audio_ms"] < 10_000, result["timings"]  # ended at the failure
    assert (tmp_path / "call" / "agent.wav").stat().st_size > 44  # what was captured is kept
