"""An agent that runs ahead of the script (says a reply before what it answers) degrades the
call's evidence: the caller's lines were answered by other turns than the script's."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from turnscope.actors.caller.in_step import ahead_of_script
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.configs import config_path

REFUND = load_scenario(config_path("scenarios", "refund-call.yaml"))


def _heard(*turns: tuple[float, int]) -> list[tuple[float, float, str]]:
    """Agent turns at (start ms, the script line whose words they say, as tiny.en writes)."""
    return [(at, at + 1000, REFUND.script[k].text.replace("30", "30-")) for at, k in turns]


def test_a_reply_before_the_line_it_answers_is_ahead_and_an_answer_after_it_is_not():
    sent = {1: 5000.0, 3: 12000.0, 5: 15000.0, 7: 22000.0}
    in_step = _heard((600, 0), (6200, 2), (12500, 4), (16000, 6), (23000, 8))
    assert ahead_of_script(REFUND.script, in_step, sent) is None
    # The greeting cut short (too few words to tell), then the refund policy before the caller
    # asked for a refund: as recorded with a Piper caller on a noisy line.
    cut = [(582, 662, "Thank you."), *_heard((1743, 2), (12700, 4))]
    ahead = ahead_of_script(REFUND.script, cut, {1: 12580.0})
    assert ahead is not None and (ahead.said, ahead.answers) == (2, 1), ahead
    assert ahead.at_ms == 1743 and ahead.answers_sent_ms == 12580.0
    assert "script[2]" in ahead.message and "script[1]" in ahead.message
    assert ahead_of_script(REFUND.script, cut, {}).answers_sent_ms is None  # never said
    # The policy cut by "wait" and the answer to it, heard as one turn from the policy's start.
    merged = [*in_step[:1], (6200, 9000, "Sure, I can help with that. Yes, go ahead.")]
    assert ahead_of_script(REFUND.script, merged, {**sent, 3: 7000.0}) is None


def test_an_agent_with_words_of_its_own_is_never_judged():
    own = [(600, 1600, "Hi there, how can I help you today?"), (6000, 9000, "Okay, refunds.")]
    assert ahead_of_script(REFUND.script, own, {1: 5000.0}) is None


def test_each_line_of_a_turn_that_says_two_is_judged():
    """An agent that yielded its reply to a noise it took for the caller and answered the noise
    with its next line is heard as one turn saying both (a babble bed on a live call: it passed
    as in step); each line is judged, the shorter one inside a longer one is not said again."""
    sent = {1: 5000.0, 3: 12000.0}
    both = REFUND.script[2].text.replace("30", "30-") + " " + REFUND.script[4].text
    ahead = ahead_of_script(REFUND.script, [(600, 800, "Thank you."), (6200, 11000, both)], sent)
    assert ahead is not None and (ahead.said, ahead.answers) == (4, 3), ahead
    assert ahead_of_script(REFUND.script, [(6200, 12500, both)], sent) is None  # in step
    two = REFUND.script[2].text + " " + REFUND.script[6].text
    assert ahead_of_script(REFUND.script, [(600, 9000, two)], {}) is not None


def test_two_words_a_short_line_shares_with_an_asr_error_are_no_evidence():
    """tiny.en heard the reference agent's "Thursday by noon." (quick-exchange's script[6]) as
    "Thursday afternoon.": two of the three words of "Done, Thursday afternoon." (script[16],
    ten lines on), which made the shipped scenario's demo "ahead of the script"."""
    quick = load_scenario(config_path("scenarios", "quick-exchange.yaml")).script
    heard = [(14871.0, 15970.0, "Thursday afternoon.")]
    assert ahead_of_script(quick, heard, {5: 13360.0, 15: 40000.0}) is None
    said = [(14871.0, 15970.0, "Done. Thursday afternoon.")]  # all of it: ahead
    assert ahead_of_script(quick, said, {5: 13360.0, 15: 40000.0}).said == 16


CALLER = """
name: ahead
caller: {voice: en-us, timeout_s: 40, hangup_after_ms: 500, reply_timeout_ms: 2500}
agent: {voice: en-gb, latency_ms: 400}
script:
  - agent: Hello, this is the help desk. What can I do for you?
  - caller: Hi, I have a question about my bill.
  - agent: Of course. What would you like to know about your bill?
  - caller: Why is it so high this month?
"""


def test_a_live_agent_that_skips_its_greeting_is_ahead_of_the_script(tmp_path: Path):
    """The reference agent without its greeting opens with the reply to the caller's first
    line: the call is degraded, said once, with the line it said and when."""
    from tests.conftest import reference_agent, turnscope_exe

    caller = tmp_path / "caller.yaml"
    caller.write_text(CALLER)
    agent = tmp_path / "agent.yaml"
    skipped = "  - agent: Hello, this is the help desk. What can I do for you?\n"
    agent.write_text(
        CALLER.replace(skipped + "  - caller: Hi, I have a question about my bill.\n", "")
    )
    with reference_agent(agent) as url:
        out = subprocess.run(
            [*turnscope_exe(), "call", url, "--scenario", str(caller), "--loopback-only",
             "-o", str(tmp_path / "call")],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
    assert "Traceback" not in out.stderr, out.stderr
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    assert result["degraded_codes"].count("agent_ahead_of_script") == 1, result["degraded"]
    (said,) = [m for m in result["degraded"] if "ahead of the script" in m]
    assert "script[2]" in said and "before the caller's script[1]" in said, said
    assert "ahead of the script" in out.stdout + out.stderr
