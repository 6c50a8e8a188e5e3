"""The conversation's outcome from the caller's side (scoring/conversation.py) and the caller's
decisions in report.html.

- a pure unit test: a script report (as result.json holds it) gives the facts the agent asked
  for, those it never did, the goal and after how many agent turns, whether it asked at all;
  and the outcome dimensions of a task that expects an outcome, over the agent's own outcome when
  it reported one and the caller's side when it did not;
- a real call against the reference agent (a scenario naming a suite task that expects an
  outcome): result.json's ``conversation`` and report.html's decisions section and marks.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from tests.conftest import reference_agent
from tests.interop.pipecat import call_bot
from tests.test_conversation import ORDER
from tests.test_report import chromium, visible_text
from turnscope.scoring.conversation import (
    DecisionKind,
    OutcomeSource,
    conversation_outcome,
    scored,
)

# result.json's script of the ORDER call (tests/test_conversation.py), as the caller wrote it.
SCRIPT = {
    "finished": "the caller ended the call",
    "lines": [
        {"line": 1, "text": "Hi, I would like to know when my order ships.", "kind": "line",
         "status": "spoken", "queued_ms": 3100.0},
        {"line": 4, "text": "four two seven", "kind": "fact", "status": "spoken",
         "queued_ms": 7200.0},
        {"line": 4, "text": "No, that is all. Thank you.", "kind": "line", "status": "spoken",
         "queued_ms": 14000.0},
    ],
    "decisions": [
        {"kind": "fact", "at_ms": 7190.0, "line": 4, "heard": "Sure. Can I have your order "
         "number please?", "outcome": 'said "four two seven"', "matched": "order number",
         "notes": ["order number"]},
        {"kind": "goal", "at_ms": 13900.0, "heard": "Thank you. Order 427 ships tomorrow "
         "morning. Is there anything else?", "outcome": "goal reached",
         "matched": "ships tomorrow", "condition": {"says": ["ships tomorrow"]}},
        {"kind": "choose", "at_ms": 13950.0, "line": 4, "heard": "Thank you. Order 427 ships "
         "tomorrow morning. Is there anything else?", "outcome": "choose[0]",
         "matched": "anything else", "condition": {"says": ["anything else"]}},
        {"kind": "until", "at_ms": 19000.0, "heard": "You are welcome. Goodbye.",
         "outcome": "ended the call: the agent said it", "matched": "goodbye",
         "condition": {"says": ["goodbye"]}},
    ],
    "goal": {"description": "find out when order 427 ships", "reached": True},
    "ended_early": "the agent said it",
    "facts_given": {"order number": 1},
}  # fmt: skip
AGENT_STARTS = [400.0, 5600.0, 9800.0, 16600.0]
EXPECT = {
    "intent": "order_status",
    "fields": {"order number": "four two seven"},
    "missing": [],
    "clarify_expected": True,
}


def test_the_outcome_is_read_from_the_callers_decisions():
    facts = {"order number": "four two seven", "postcode": "N1 9GU"}
    out = conversation_outcome(SCRIPT, facts=facts, agent_turn_starts=AGENT_STARTS)
    assert out is not None
    assert out.goal == "find out when order 427 ships" and out.goal_reached is True
    assert out.goal_turns == 3 and out.agent_turns == 4  # the third agent turn said it
    assert out.facts_asked == ["order number"]
    assert out.fields == {"order number": "four two seven"}
    assert out.missing == ["postcode"]  # the caller knew it; the agent never asked
    assert out.clarified is True
    assert out.ended_early == "the agent said it" and out.decisions == 4
    assert out.dimensions is None  # no task expects an outcome

    # Without the scenario's facts, what the caller said answers for the value.
    bare = conversation_outcome(SCRIPT, agent_turn_starts=AGENT_STARTS)
    assert bare is not None and bare.fields == {"order number": "four two seven"}
    assert bare.missing == []

    # A caller that did not react has no outcome to tell (and the report shows nothing new).
    assert conversation_outcome({"lines": SCRIPT["lines"], "decisions": [], "goal": None}) is None
    assert conversation_outcome(None) is None


def test_the_outcome_dimensions_take_the_agents_outcome_first_and_the_callers_else():
    out = conversation_outcome(
        SCRIPT, facts={"order number": "four two seven"}, agent_turn_starts=AGENT_STARTS
    )
    assert out is not None
    mine = scored(out, EXPECT, None)
    assert mine.dimensions_from is OutcomeSource.CALLER
    assert mine.dimensions == {
        "accuracy": 1.0,
        "clarification": 1.0,
        "containment": 1.0,
        "graceful_failure": 1.0,
    }
    # The agent reported its own, a wrong one: it is what is scored; the caller's view stays.
    agent = {"intent": "refund", "fields": {}, "missing": [], "handed_off": True}
    theirs = scored(out, EXPECT, agent)
    assert theirs.dimensions_from is OutcomeSource.AGENT
    assert theirs.dimensions["accuracy"] == 0.0 and theirs.dimensions["containment"] == 0.0
    assert theirs.fields == out.fields and theirs.goal_reached is True

    # The goal never reached: the caller cannot say the intent was resolved, nor contained.
    missed = {**SCRIPT, "goal": {"description": "x", "reached": False},
              "decisions": [d for d in SCRIPT["decisions"] if d["kind"] != "goal"]}  # fmt: skip
    lost = conversation_outcome(missed, facts={"order number": "four two seven"})
    assert lost is not None and lost.goal_reached is False and lost.goal_turns is None
    dims = scored(lost, EXPECT, None).dimensions
    assert dims is not None
    assert dims["accuracy"] == 0.0 and dims["containment"] == 0.0
    assert dims["clarification"] == 1.0


def test_the_decision_kinds_are_the_ones_the_caller_writes():
    from turnscope.actors.caller.reactive import DecisionKind as Written

    assert DecisionKind is Written  # one enum, written by the caller, read by scoring
    assert {k.value for k in DecisionKind} == {k.value for k in Written}


SUITE = {
    "kind": "agent-learning.bench-suite.v1",
    "name": "orders",
    "version": "1",
    "control": "voice",
    "tasks": [
        {
            "id": "order-status",
            "budgets": {"max_latency_ms": 2500},
            "fixture": {
                "source": "synthetic",
                "audio": "order.yaml",
                "tags": ["conversational"],
                "expect": EXPECT,
            },
        }
    ],
}


def test_a_call_shows_the_callers_decisions_and_its_outcome(tmp_path: Path):
    """The ORDER call (the agent asks for the order number, says when it ships, says goodbye)
    with a task that expects an outcome: the agent reports none, so result.json's
    ``conversation`` scores the caller's side; report.html lists every decision, clickable,
    marks each on the timeline, and its one script still runs under the page's policy."""
    plain = "task: {budgets: {max_latency_ms: 2500}}"
    assert plain in ORDER
    scenario = tmp_path / "order.yaml"
    scenario.write_text(ORDER.replace(plain, "task: {suite: suite.json, id: order-status}"))
    (tmp_path / "suite.json").write_text(json.dumps(SUITE))
    with reference_agent(scenario) as url:
        asyncio.run(call_bot(url, scenario, tmp_path / "call"))
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    decisions = result["script"]["decisions"]
    assert [d["kind"] for d in decisions] == ["fact", "goal", "choose", "until"], decisions
    conv = result["conversation"]
    assert conv["goal_reached"] is True and conv["goal_turns"] == 3, conv
    assert conv["fields"] == {"order number": "four two seven"} and conv["missing"] == []
    assert conv["clarified"] is True and conv["agent_turns"] == 4
    assert conv["dimensions_from"] == "caller"
    assert conv["dimensions"] == {
        "accuracy": 1.0,
        "clarification": 1.0,
        "containment": 1.0,
        "graceful_failure": 1.0,
    }
    assert result["task"]["task_id"] == "order-status"
    assert set(result["verifier"]["result"]["components"]) == {
        "latency", "turn_taking", "barge_in", "content"
    }  # fmt: skip

    page = tmp_path / "call" / "report.html"
    html = page.read_text()
    assert html.count("<script") == 1  # still only the report's own, allowed by its hash
    dom = chromium(tmp_path, "--dump-dom", page.as_uri())
    assert 'data-seek="on"' in dom  # the policy let it run: clicks play
    assert dom.count('data-mark="decision"') == len(decisions)
    assert dom.count('class="decision"') == len(decisions)
    text = visible_text(dom)
    assert "The caller's decisions" in text and "find out when order 427 ships" in text
    assert "order number" in text and "ships tomorrow" in text and "goodbye" in text
    assert "reached" in text and "after 3 agent turn(s)" in text
    assert "from the caller's side" in text
