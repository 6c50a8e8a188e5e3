"""Agent lines in a row: a caller line the script places after two agent lines goes out after
the second, not into the agent's pause between them (actors/caller/agent_lines.py). Against
the stock pipecat bot here; against the reference agent in test_use_cases (the shipped
quick-exchange scenario through the demo)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.interop.pipecat import call_bot, pipecat_bot
from turnscope.actors.caller.agent_lines import agent_lines_before
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.configs import config_path

# The bot's --reply double: "Okay, let me check that for you.", a pause, "Alright, it is all
# done now." A pause this long is a lookup's (the 700 ms default the caller's think time spans).
PAUSE_MS = 1500
SCENARIO = """
name: agent-lines-in-a-row
task: {budgets: {max_latency_ms: 3000}}
caller: {voice: en-us, timeout_s: 60, hangup_after_ms: 600}
script:
  - agent: Hello, thanks for calling. How can I help you today?
  - caller: Hi, I would like to change my delivery address.
  - agent: Okay, let me check that for you.
  - agent: Alright, it is all done now.
  - caller: Great, and can you also send me a receipt?
  - agent: Okay, let me check that for you.
  - agent: Alright, it is all done now.
"""


def test_the_lines_a_caller_line_waits_for_are_the_agents_after_its_previous_line():
    def before(name: str, index: int) -> list[int]:
        return agent_lines_before(load_scenario(config_path("scenarios", f"{name}.yaml")).script,
                                  index)  # fmt: skip

    assert before("quick-exchange", 5) == [3, 4]  # "One moment please." then the answer
    assert before("quick-exchange", 2) == [1]
    assert before("pause-takeover", 3) == [2]  # the line spoken into the caller's pause is not
    assert before("backchannel-yield", 5) == []  # after the caller's "yeah": its turn goes on


async def test_a_caller_line_after_two_replies_waits_for_the_second(tmp_path: Path):
    scenario = tmp_path / "row.yaml"
    scenario.write_text(SCENARIO)
    with pipecat_bot(tmp_path / "bot", reply="double", double_pause_ms=PAUSE_MS) as bot:
        run, call, _ = await call_bot(bot.url, scenario, tmp_path / "call")
        replies = bot.replies()
    origin = call.clock.origin  # time.monotonic() seconds: the bot's clock too
    ends = [(r["end_monotonic"] - origin) * 1000 for r in replies]
    assert len(replies) == 5, (replies, bot.log_tail())  # the greeting, two doubles
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    lines = {r["line"]: r for r in result["script"]["lines"]}
    second = lines[4]
    # The second caller line went out after the bot's second reply ended, not in its pause.
    agent = [(round(t.start_ms), round(t.end_ms), t.text) for t in run.result.assembly.turns
             if t.speaker == "agent"]  # fmt: skip
    said = (second["sent"], second.get("notes"), result["warnings"], ends, agent)
    assert second["sent"]["start_ms"] > ends[2], said
    assert any("waited for the agent's next line (script[3]" in n for n in second.get("notes", []))
    assert result["degraded_codes"] == [] and "agent_lines_cut_short" not in result[
        "warning_codes"], (result["degraded"], result["warnings"])  # fmt: skip
    assert len(agent) == 5, agent


# A caller line with a pause the bot takes for its end of turn (Silero's 0.2 s stop): its reply
# begins in the pause and, barge-ins ignored, goes on over the rest of the line and past it.
OVER = """
name: answer-begun-over-the-line
task: {budgets: {max_latency_ms: 3000}}
caller: {voice: en-us, timeout_s: 60, hangup_after_ms: 600}
script:
  - agent: Hello, thanks for calling. How can I help you today?
  - caller: Hi, I would like to change the delivery address for my order.
    pauses: [{after_words: 3, ms: 1200}]
  - agent: Sure, I can help with that.
  - caller: Thank you very much.
  - agent: Sure, I can help with that.
"""


async def test_an_answer_begun_over_the_callers_line_is_its_answer(tmp_path: Path):
    scenario = tmp_path / "over.yaml"
    scenario.write_text(OVER)
    with pipecat_bot(tmp_path / "bot", latency_ms=300, ignore_barge_ins=True) as bot:
        _, call, _ = await call_bot(bot.url, scenario, tmp_path / "call")
        replies = bot.replies()
    origin = call.clock.origin
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    lines = {r["line"]: r for r in result["script"]["lines"]}
    first, second = lines[1]["sent"], lines[3]
    started = [(r["start_monotonic"] - origin) * 1000 for r in replies]
    # The bot's reply began inside the first line (its pause) and the second line answered it
    # after it ended: not an 8 s wait for a turn that began after the line, "unanswered".
    assert any(first["start_ms"] < s < first["end_ms"] for s in started), (first, started)
    assert any("began its answer over the end of the caller's line" in n
               for n in second.get("notes", [])), second  # fmt: skip
    assert "line_unanswered" not in result["warning_codes"], result["warnings"]
    assert second["sent"]["start_ms"] - first["end_ms"] < 6000, (first, second)
