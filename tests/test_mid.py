"""``barge_in_at: mid`` on a live call (actors/caller/mid.py): half-way through the script's agent
line spoken in the scenario's agent voice, as a rendered call places it, into the agent's first
turn and while the agent says the script's lines; half its typical turn otherwise. Against the
reference agent and the stock pipecat bot; the shipped barge-ins scenario live beside its
rendering: benchmarks/shipped_scenarios.py."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from turnscope.actors.caller.mid import MidLines
from turnscope.actors.caller.scenario import into_agent_ms
from turnscope.actors.caller.scenario_file import load_scenario

MID_FIRST = textwrap.dedent(
    """
    name: mid-first
    agent:
      latency_ms: 300
    script:
      - caller: Hi, where is my order?
        at_ms: 300
      - agent: Sure, I can look that up for you if you give me the order number please.
      - caller: wait
        barge_in_at: mid
      - agent: Yes?
      - caller: It is four two seven.
    """
)
REPLY = "Sure, I can look that up for you if you give me the order number please."


def test_mid_into_the_agents_first_turn_is_half_its_script_line(cli, tmp_path: Path):
    """Live, into a first turn (nothing heard yet to learn a length from): half the script's line
    as the scenario's agent voice says it, not 600 ms in as ``early``; nothing to warn of."""
    scenario = tmp_path / "mid-first.yaml"
    scenario.write_text(MID_FIRST)
    code, out, err = cli("demo", "--scenario", str(scenario), "-o", str(tmp_path / "d"), "-q")
    assert code in (0, 1), err
    assert "barge_in_at" not in err, err
    lines = out.strip().splitlines()
    assert lines[-1] == f"report: {tmp_path / 'd' / 'report.html'}", out
    result = json.loads((tmp_path / "d" / "result.json").read_text())
    wait = next(r for r in result["script"]["lines"] if r["line"] == 2)
    half = into_agent_ms("mid", MidLines(load_scenario(scenario)).lengths[2])
    assert half > 1500 and wait["trigger_ms"] == half, wait
    assert any(n.startswith("mid: half the script's agent line") for n in wait["notes"]), wait
    assert wait["spoken_as"] == "barge_in", wait
    # Counted from where the caller heard the turn begin (recorded), later by a pause's wait.
    paused = [n for n in wait["notes"] if n.startswith("due in a pause of the agent's turn")]
    waited = float(paused[0].rsplit(", ", 1)[1].split(" ms")[0]) if paused else 0.0
    gone = wait["sent"]["start_ms"] - wait["agent_start_ms"]
    assert abs(gone - (half + waited)) <= 40, (gone, half, waited, wait)
    # (the agent's times on its own clock, which starts with the media as the caller's does)
    truth = json.loads((tmp_path / "d" / "agent_truth.json").read_text())["utterances"]
    reply = next(u for u in truth if u["text"] == REPLY)
    into = wait["sent"]["start_ms"] - reply["start_ms"]
    assert half - 50 <= into <= half + 250, (into, half)  # heard a frame or two after it began
    assert reply["stopped_early"] is True
    assert result["script"]["barge_ins"] == {"planned": 1, "exercised": 1}


def test_mid_follows_the_script_while_the_agent_says_its_lines(tmp_path: Path):
    """The script's line while most heard turns clearly say a line of the script (misheard a
    little too); a turn the caller spoke into is not judged (cut short, it says part of its
    line); once most say none (replies of the agent's own), half its typical turn."""
    (tmp_path / "s.yaml").write_text(MID_FIRST)
    mid = MidLines(load_scenario(tmp_path / "s.yaml"))
    script_ms = mid.lengths[2]
    assert mid.turn_ms(2, [], [], None)[0] == script_ms  # nothing heard yet: as rendered
    misheard = (0.0, 3000.0, "Sure, I can look at that for you, if you give me the order")
    yes = (3500.0, 3900.0, "Yes.")
    assert mid.turn_ms(2, [misheard], [], 900.0)[0] == 900.0  # one turn: too little to tell
    assert mid.turn_ms(2, [misheard, yes], [], 900.0)[0] == script_ms
    cut = (4000.0, 5000.0, "Sure, I can")
    assert mid.turn_ms(2, [misheard, cut, yes], [4600.0], 900.0)[0] == script_ms
    assert mid.turn_ms(2, [misheard, cut], [4600.0], 900.0)[0] == 900.0  # cut: not judged
    wordless = (6000.0, 6500.0, "")  # a turn the ASR heard no words of tells nothing
    assert mid.turn_ms(2, [misheard, wordless, yes], [6200.0], 900.0)[0] == script_ms
    merged = (4000.0, 5600.0, "Sure, I can. Yes?")  # a cut reply heard as one with the next
    assert mid.turn_ms(2, [misheard, merged], [4600.0], 900.0)[0] == script_ms
    own = [(6000.0, 7000.0, "Let me check our system for that"), (8000.0, 9000.0, "Right.")]
    assert mid.turn_ms(2, [misheard, yes, *own], [4600.0], 900.0) == (
        900.0,
        "mid: half the agent's typical turn so far (0.9 s)",
    )
    assert mid.turn_ms(2, own, [], None) == (
        None,
        "mid: placed as early (no agent turn heard yet to learn its length from)",
    )
    assert mid.turn_ms(4, own, [], 900.0) == (900.0, None)  # not a mid line: nothing to note


def test_mid_against_a_bot_with_replies_of_its_own_is_half_its_typical_turn(tmp_path: Path):
    """benchmarks/interop.py's scenario holds the stock pipecat bot's long reply, and its short
    bot says only that reply's first sentence: its first turn cut by the early barge-in and its
    "Yes, go ahead." (a line of the script) are too little to show that its next reply is the
    script's 6 s line, so the mid into it is half the bot's typical turn."""
    import re

    from tests.conftest import ROOT

    text = re.search(r'SCENARIO = """(.*?)"""', (ROOT / "benchmarks" / "interop.py").read_text(),
                     re.S).group(1).replace("LATENCY", "600")  # fmt: skip
    (tmp_path / "s.yaml").write_text(text)
    mid = MidLines(load_scenario(tmp_path / "s.yaml"))
    index = max(mid.mid_lines)
    heard = [(1000.0, 2600.0, "Sure, I can help with that."), (3500.0, 4300.0, "Yes, go ahead.")]
    assert mid.turn_ms(index, heard, [1600.0], 1200.0)[0] == 1200.0


BOT_LONG = (
    "Let me explain how it works. First, I look up your account. Then I check your recent "
    "orders. Finally, I send you a summary by email."
)
PIPECAT_MID = f"""
name: pipecat-mid
task: {{budgets: {{max_latency_ms: 2500}}}}
caller: {{voice: en-us, timeout_s: 50, hangup_after_ms: 800}}
agent: {{voice: en-us}}
script:
  - caller: Hi, I would like a refund for my headphones please.
    at_ms: 500
  - agent: {BOT_LONG}
  - caller: wait
    barge_in_at: mid
  - agent: Yes, go ahead.
  - caller: Can I send them back by post?
"""


def test_mid_into_a_stock_pipecat_bots_first_reply(tmp_path: Path):
    """The stock pipecat bot (no greeting, its four-sentence reply, 8 s) is barged into half-way
    through the script's line as the scenario's agent voice says it, not 600 ms in; it yields
    (its own log: the reply interrupted)."""
    import asyncio

    from tests.interop.pipecat import call_bot, pipecat_bot

    scenario = tmp_path / "mid.yaml"
    scenario.write_text(PIPECAT_MID)
    half = into_agent_ms("mid", MidLines(load_scenario(scenario)).lengths[2])
    with pipecat_bot(tmp_path / "bot", greeting=False, reply="long", latency_ms=300) as bot:
        _run, call, _caller = asyncio.run(call_bot(bot.url, scenario, tmp_path / "call"))
        truth = bot.truth()
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    wait = next(r for r in result["script"]["lines"] if r["line"] == 2)
    assert wait["trigger_ms"] == half > 2000, (wait, half)
    assert wait["spoken_as"] == "barge_in" and result["script"]["barge_ins"]["exercised"] == 1
    reply = next(r for r in truth if r["event"] == "reply" and r["kind"] == "reply")
    assert reply["interrupted"], truth
    # (the bot's times on time.monotonic(), the call clock's own base)
    into = wait["sent"]["start_ms"] - (reply["start_monotonic"] - call.clock.origin) * 1000
    assert half - 50 <= into <= half + 300, (into, half)
