"""``barge_in_at: mid`` on a live call (actors/caller/mid.py): half-way through the script's agent
line spoken in the scenario's agent voice, as a rendered call places it, while the agent says the
script's words; half its typical turn once it says words of its own. The shipped barge-ins
scenario live beside its rendering: benchmarks/shipped_scenarios.py."""

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
    # (the agent's times on its own clock, which starts with the media as the caller's does)
    truth = json.loads((tmp_path / "d" / "agent_truth.json").read_text())["utterances"]
    reply = next(u for u in truth if u["text"] == REPLY)
    into = wait["sent"]["start_ms"] - reply["start_ms"]
    assert half - 50 <= into <= half + 250, (into, half)  # heard a frame or two after it began
    assert reply["stopped_early"] is True
    assert result["script"]["barge_ins"] == {"planned": 1, "exercised": 1}


def test_mid_follows_the_script_while_the_agent_says_it_and_its_turns_after(tmp_path: Path):
    """The script's line while each heard turn is mostly the script's agent words (a reply cut
    short too, or misheard a little); the agent's typical turn once it says words of its own."""
    (tmp_path / "s.yaml").write_text(MID_FIRST)
    mid = MidLines(load_scenario(tmp_path / "s.yaml"))
    script_ms = mid.lengths[2]
    heard = ["Sure, I can look that up for you", "yes"]
    assert mid.turn_ms(2, heard, 900.0)[0] == script_ms
    assert (
        mid.turn_ms(2, ["Sure, I can look at that for you, if you give me the order"], 900.0)[0]
        == script_ms
    )
    own, how = mid.turn_ms(2, [*heard, "Let me check our system for that, one moment"], 900.0)
    assert own == 900.0 and how == "mid: half the agent's typical turn so far (0.9 s)"
    assert mid.turn_ms(2, ["Thanks for calling Acme, how can I help?"], None) == (
        None,
        "mid: placed as early (no agent turn heard yet to learn its length from)",
    )
    assert mid.turn_ms(4, heard, 900.0) == (900.0, None)  # not a mid line: nothing to note
