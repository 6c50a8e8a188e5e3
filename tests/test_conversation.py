"""The caller as a listener: it stays in step with what the agent actually does.

- a stock pipecat bot that ignores a barge-in and queues its answer to it straight behind the
  reply it talked through (no pause: one agent turn for a listener): that turn's end answers
  the barge-in, the caller goes on without an unanswered-turn warning, and the rest of the
  script stays in step (each later caller line answered by the bot's next reply).

Needs .venv-pipecat (scripts/setup.sh --dev builds it): without it these fail, never skip.
"""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.interop.pipecat import call_bot, pipecat_bot

SCENARIO = """
name: queued-answer
task: {budgets: {max_latency_ms: 2500}}
caller: {voice: en-us, timeout_s: 60, hangup_after_ms: 800}
script:
  - agent: Hello, thanks for calling. How can I help you today?
  - caller: Hi, I would like a refund for my headphones please.
  - agent: Sure, I can help with that.
  - caller: wait
    barge_in_at: early
  - agent: Yes, go ahead.
  - caller: Can I send them back by post?
  - agent: Yes, you can.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def test_the_caller_waits_for_a_yield_as_long_as_the_verifier_allows_one():
    from turnscope.actors.caller.overlaps import YIELD_WAIT_MS
    from turnscope.scoring.verifier import BARGE_IN_YIELD_MS

    assert YIELD_WAIT_MS == BARGE_IN_YIELD_MS


def test_an_answer_queued_behind_an_ignored_barge_in_keeps_the_script_in_step(tmp_path: Path):
    scenario = tmp_path / "queued.yaml"
    scenario.write_text(SCENARIO)
    knobs = {
        "greeting": True,
        "reply": "long",
        "latency_ms": 400,
        "ignore_barge_ins": True,
        "queue_barge_in_answers": True,
    }
    with pipecat_bot(tmp_path / "bot", **knobs) as bot:
        run, call, _caller = asyncio.run(call_bot(bot.url, scenario, tmp_path / "call"))
        truth = bot.truth()
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    script = result["script"]
    assert script["finished"] == "scenario finished", script
    assert script["unanswered_lines"] == [], script
    assert not [w for w in result["warnings"] if "did not answer" in w], result["warnings"]
    lines = {r["line"]: r for r in script["lines"]}
    assert lines[3]["spoken_as"] == "barge_in"
    assert any("talked through the barge-in" in n for n in lines[5]["notes"]), lines[5]

    # In step: every caller line after the barge-in went out after the bot's reply before it
    # had finished, and the bot answered each with a reply of its own.
    origin = call.clock.origin
    replies = [r for r in truth if r["event"] == "reply"]
    ends = sorted((r["end_monotonic"] - origin) * 1000 for r in replies)
    for index in (5, 7):
        sent = lines[index]["sent"]["start_ms"]
        before = [e for e in ends if e < sent]
        after = [r for r in replies if (r["start_monotonic"] - origin) * 1000 > sent]
        assert before and after, (index, sent, ends)
    # The reply to "wait" followed the long reply with no pause: the caller heard one turn.
    agent_turns = [t for t in run.result.assembly.turns if t.speaker == "agent"]
    assert len(agent_turns) == 4, [(t.start_ms, t.end_ms, t.text) for t in agent_turns]


ORDER = """
name: order-question
task: {budgets: {max_latency_ms: 2500}}
caller: {voice: en-us, timeout_s: 60, hangup_after_ms: 600}
agent: {voice: en-gb, latency_ms: 500}
facts:
  # Whisper tiny.en hears espeak-ng's "order number" as "order then" now and then: ask words
  # a real user would list (never a bare "order": the agent's answer says "order 427" too).
  order number: {value: four two seven, asked_by: [order number, your order]}
goal:
  description: find out when order 427 ships
  reached_when: {says: [ships tomorrow]}
until: {agent_says: {says: [goodbye]}}
script:
  - agent: Hello, Northwind customer care. How can I help?
  - caller: Hi, I would like to know when my order ships.
  - agent: Sure. Can I have your order number please?
  - agent: Thank you. Order four two seven ships tomorrow morning. Is there anything else?
  - choose:
      - when: {says: [anything else]}
        caller: No, that is all. Thank you.
      - caller: Sorry, I did not catch that.
  - agent: You are welcome. Goodbye.
"""


def test_a_question_the_script_did_not_foresee_is_answered_from_the_facts(tmp_path: Path):
    """The agent asks for the order number (no caller line says it): the caller answers from
    its facts, hears the answer, takes the branch the agent's words choose, notes the goal
    reached, and ends the call when the agent says goodbye. Every decision is in result.json."""
    from tests.conftest import reference_agent

    scenario = tmp_path / "order.yaml"
    scenario.write_text(ORDER)
    with reference_agent(scenario) as url:
        run, _call, _caller = asyncio.run(call_bot(url, scenario, tmp_path / "call"))
    script = json.loads((tmp_path / "call" / "result.json").read_text())["script"]
    kinds = [d["kind"] for d in script["decisions"]]
    assert kinds == ["fact", "goal", "choose", "until"], script["decisions"]
    fact, goal, chose, until = script["decisions"]
    assert fact["matched"] in ("order number", "your order"), fact
    assert goal["matched"] == "ships tomorrow"
    assert chose["outcome"] == "said 'No, that is all. Thank you.' (choose[0])", chose
    assert chose["matched"] == "anything else"
    assert until["matched"] == "goodbye"
    assert script["goal"] == {"description": "find out when order 427 ships", "reached": True}
    assert script["facts_given"] == {"order number": 1}
    assert script["ended_early"] == "the agent said it"
    assert script["unanswered_lines"] == [], script
    said = [r["text"] for r in script["lines"] if r["status"] == "spoken"]
    assert said == [
        "Hi, I would like to know when my order ships.",
        "four two seven",
        "No, that is all. Thank you.",
    ], script["lines"]
    # The agent heard each answer in turn: all four of its lines were spoken, in order.
    agent_turns = [t.text for t in run.result.assembly.turns if t.speaker == "agent"]
    assert len(agent_turns) == 4 and "goodbye" in agent_turns[-1].lower(), agent_turns


# The reference agent speaks the script's agent lines: none answers the caller's last line.
UNANSWERED = """
name: last-line-unanswered
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 600, reply_timeout_ms: 2000}
until: {agent_says: {says: [goodbye]}}
script:
  - agent: Hello, how can I help?
  - caller: Hi, I would like to know when my order ships.
"""


def test_the_answer_until_waits_for_is_waited_for_as_any_answer(tmp_path: Path):
    """A script with ``until:`` that ends with the caller's line waits for the agent's answer
    to it as any caller line does: an agent that says nothing leaves a warning naming the line
    after ``caller.reply_timeout_ms`` and the caller hangs up (before: the same wait, silent)."""
    from tests.conftest import reference_agent

    scenario = tmp_path / "unanswered.yaml"
    scenario.write_text(UNANSWERED)
    with reference_agent(scenario) as url:
        asyncio.run(call_bot(url, scenario, tmp_path / "call"))
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    assert "last_line_unanswered" in result["warning_codes"], result["warnings"]
    said, lasted = result["script"]["lines"][-1]["sent"], result["source"]["duration_ms"]
    # hung up once reply_timeout_ms had passed after the line, not at the call's timeout
    assert said["end_ms"] + 2000 <= lasted < said["end_ms"] + 3500, (said, lasted)


NEVER_SAID = """
name: when-never-met
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 600, reply_timeout_ms: 1500}
script:
  - agent: Hello, how can I help?
  - caller: I would like a refund please.
    when: {says: [refund policy]}
  - agent: Sure.
"""


def test_a_line_whose_words_never_come_is_spoken_anyway_saying_what_was_heard(tmp_path: Path):
    """The agent never says what a ``when:`` line waits for (an agent's own words, or the ASR
    mishearing them: the stock pipecat bot's "order number" heard as "order, Amber"): after
    the agent's next turn does not come, the line is spoken, and the warning says what was
    heard last, so that a misheard word shows at once."""
    from tests.conftest import reference_agent

    scenario = tmp_path / "never.yaml"
    scenario.write_text(NEVER_SAID)
    with reference_agent(scenario) as url:
        asyncio.run(call_bot(url, scenario, tmp_path / "call"))
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    warned = [w for w in result["warnings"] if "script[1].when" in w]
    heard = re.search(r"heard last: '([^']*)'", warned[0] if warned else "")
    said = heard[1].lower().strip("?").replace(".", ",") if heard else None
    assert said == "hello, how can i help", warned
    lines = {r["line"]: r for r in result["script"]["lines"]}
    assert lines[1]["status"] == "spoken", lines[1]
    (decision,) = [d for d in result["script"]["decisions"] if d["kind"] == "when"]
    assert decision["outcome"] == "condition never met: spoken", decision


# The shipped example of an LLM-driven caller (docs/guide/caller.md): the test keeps it working.
LLM_CALLER = (ROOT / "configs" / "scenarios" / "order-status-llm.yaml").read_text()


def _bench(tmp_path: Path, url: str, task: str, fixture: dict, *llm: str) -> list[str]:
    """``bench`` of a one-task suite in tmp_path (its bundle in tmp_path/runs/TASK)."""
    from tests.conftest import turnscope_exe

    suite = {"kind": "agent-learning.bench-suite.v1", "control": "voice", "name": "llm",
             "version": "1", "tasks": [{"id": task, "fixture": {
                 "source": "recorded", "audio": "llm.yaml", "tags": ["conversational"],
                 **fixture}}]}  # fmt: skip
    (tmp_path / f"{task}.json").write_text(json.dumps(suite))
    return [*turnscope_exe(), "bench", str(tmp_path / f"{task}.json"), "--agent", url,
            "--loopback-only", "-q", "-o", str(tmp_path / f"{task}-r.json"),
            "--runs", str(tmp_path / "runs"), *llm]  # fmt: skip


def record_then_replay(tmp_path: Path, scenario_text: str, *, by_bench: str = "") -> None:
    """Call the reference agent with the LLM caller of ``scenario_text`` (the real local LLM
    server), bundle in tmp_path/first; then again with no LLM at all, replaying the first call's
    caller (``--caller-from``), bundle in tmp_path/second. ``by_bench``: "record" (the first
    call is a suite's live task run by ``bench --caller-llm``) or "replay" (the second is a
    suite's task pinned to the first call by ``caller_from``); else both by ``call``."""
    import subprocess

    from tests.conftest import reference_agent, turnscope_exe
    from tests.interop.llm_server import llm_server

    scenario = tmp_path / "llm.yaml"
    scenario.write_text(scenario_text)
    with reference_agent(scenario) as url:
        base = [*turnscope_exe(), "call", url, "--scenario", str(scenario), "--loopback-only",
                "-q"]  # fmt: skip
        with llm_server(tmp_path / "llm") as server:
            llm = ["--caller-llm", server.url, "--caller-llm-model", server.model]
            once = [*base, "-o", str(tmp_path / "first"), *llm]
            if by_bench == "record":
                once = _bench(tmp_path, url, "first", {}, *llm)
            first = subprocess.run(once, capture_output=True, text=True, timeout=180)
        # The server is gone: a replay that needed it would fail, said so.
        if by_bench == "record":
            (tmp_path / "first").symlink_to(tmp_path / "runs" / "first")
        again = [*base, "-o", str(tmp_path / "second"), "--caller-from", str(tmp_path / "first")]
        if by_bench == "replay":
            again = _bench(tmp_path, url, "second", {"caller_from": "first"})
        second = subprocess.run(again, capture_output=True, text=True, timeout=180)
        if by_bench == "replay":
            (tmp_path / "second").symlink_to(tmp_path / "runs" / "second")
    assert "Traceback" not in first.stderr + second.stderr, first.stderr + second.stderr


def test_an_llm_caller_is_asked_spoken_recorded_and_replayed(tmp_path: Path):
    """A real local LLM (SmolLM2-135M behind llama.cpp's OpenAI-compatible server) drives the
    caller after its scripted opening: it is asked with the conversation so far, its action is
    spoken, everything is recorded. The recorded call then replays with no LLM at all (the
    agent says the same things), each line at the recorded offset from the agent's end of turn
    within one 20 ms frame, here as a suite pins it (a task's live fixture with caller_from,
    run by bench). This proves the loop, not the persona: that model is too small to stay in
    character."""
    record_then_replay(tmp_path, LLM_CALLER, by_bench="replay")
    one = json.loads((tmp_path / "first" / "result.json").read_text())["script"]
    two = json.loads((tmp_path / "second" / "result.json").read_text())["script"]
    asked = one["llm"]["turns"]
    assert asked and all(t["source"] == "llm" for t in asked), one["llm"]
    assert all(t["latency_ms"] > 0 and t["messages"][0]["role"] == "system" for t in asked)
    assert "order number" in asked[0]["heard"].lower() or asked[0]["messages"][-1]["role"] == "user"
    spoken = [r for r in one["lines"] if r["kind"] == "llm" and r["status"] == "spoken"]
    said = [t for t in asked if t["action"]["action"] in ("say", "barge_in", "backchannel")]
    assert len(spoken) == len(said), (one["lines"], asked)
    # Replayed: the same actions, no LLM asked, each line at the recorded offset (one frame).
    replayed = two["llm"]["turns"]
    assert [t["action"] for t in replayed] == [t["action"] for t in asked], two["llm"]
    assert two["llm"]["asked"] == 0 and two["llm"]["replayed"] == len(asked), two
    # (when each had the agent's words: a replay later than the recording says why, below)
    assert all(t["heard_offset_ms"] >= 0 for t in asked + replayed), (asked, replayed)
    for a, b in zip(asked, replayed, strict=True):
        if a.get("sent_offset_ms") is not None:
            assert abs(b["sent_offset_ms"] - a["sent_offset_ms"]) <= 20, (a, b)
    warned = json.loads((tmp_path / "second" / "result.json").read_text())
    assert "replay_late" not in (warned.get("warning_codes") or []), warned["warnings"]


# The guide's example as written (docs/guide/caller.md): no agent line after the greeting, a
# choose: right after a caller line (it waits for the answer) and the caller's line last (with
# until:, the answer is waited for). The fact's answer is a sentence: the bot asks again after
# an answer under 0.8 s, and espeak-ng says "four two seven" in about that; the goal's words
# are ones tiny.en hears (its "ships tomorrow" was "ownership tomorrow" 3 calls of 3).
PIPECAT_ORDER = """
name: pipecat-order
task: {budgets: {max_latency_ms: 3000}}
caller: {voice: en-us, timeout_s: 60, hangup_after_ms: 600}
"""


def guide_example() -> str:
    """The reactive caller's example in docs/guide/caller.md: its facts, goal, until, script."""
    guide = (ROOT / "docs" / "guide" / "caller.md").read_text()
    block = guide.split("matched on which words) is in result.json's `script`:\n\n")[1]
    return "\n".join(line[4:] for line in block.split("\n\n")[0].splitlines()) + "\n"


def test_a_pipecat_bot_that_asks_for_the_order_number_gets_it_and_the_call_ends(tmp_path: Path):
    """The stock pipecat bot asks for the order number (no caller line says it) and branches on
    the answer (an answer too short to be one is asked again): the caller answers from its facts,
    the bot goes on to the shipping date, the caller takes the branch its words choose (once the
    bot has answered the line before it) and hangs up at the goodbye (the answer to the script's
    last line, waited for)."""
    scenario = tmp_path / "order.yaml"
    scenario.write_text(PIPECAT_ORDER + guide_example())
    with pipecat_bot(tmp_path / "bot", greeting=True, reply="order", latency_ms=400) as bot:
        run, _call, _caller = asyncio.run(call_bot(bot.url, scenario, tmp_path / "call"))
        truth = bot.truth()
    script = json.loads((tmp_path / "call" / "result.json").read_text())["script"]
    assert [d["kind"] for d in script["decisions"]] == ["fact", "goal", "choose", "until"], script
    assert script["goal"]["reached"] and script["ended_early"] == "the agent said it"
    assert [r["text"] for r in script["lines"] if r["status"] == "spoken"] == [
        "Hi, I would like to know when my order ships.",
        "My order number is four two seven.",
        "No, that is all. Thank you.",
    ], script["lines"]
    replies = [r["text"] for r in truth if r["event"] == "reply" and r["kind"] == "reply"]
    assert replies == [
        "Sure, I can check that. Can I have your order number please?",
        "Thank you. Your order ships tomorrow morning. Is there anything else?",
        "You are welcome. Goodbye.",
    ], replies
    assert run.outcome.passed, (run.outcome.verifier, run.outcome.failures)


LLM_INTERRUPTER = """
name: llm-interrupter
task: {budgets: {max_latency_ms: 2500}}
caller:
  voice: en-us
  timeout_s: 60
  hangup_after_ms: 600
  driver: llm
  persona: Sam, an impatient customer. When the agent is still speaking, you barge in.
  llm: {max_turns: 2, max_tokens: 60, interrupts: true}
goal: {description: get a refund for headphones}
agent: {voice: en-gb, latency_ms: 500, yield_ms: 200}
script:
  - caller: Hi, I would like a refund for my headphones.
  - agent: >-
      Sure, I can help you with that today. Before we start, let me explain our refund policy,
      which gives you thirty days to send the item back for a full refund of the price you paid,
      and the return label is free.
  - agent: Yes, go ahead.
  - agent: Goodbye.
"""


def test_an_llm_caller_barges_in_on_what_it_hears_and_the_replay_cuts_in_at_the_same_point(
    tmp_path: Path,
):
    """``caller.llm.interrupts``: the real local LLM hears the agent's long reply mid-sentence
    (partial transcripts) and answers with a barge-in, which is spoken over the agent at once and
    recorded with how far into the agent's turn the caller had heard (that call a suite's live
    task, run by ``bench --caller-llm``). The replay (``call --caller-from``, no LLM) cuts in at
    the same offset from the agent turn's start, within one 20 ms frame."""
    record_then_replay(tmp_path, LLM_INTERRUPTER, by_bench="record")
    one = json.loads((tmp_path / "first" / "result.json").read_text())
    turns = one["script"]["llm"]["turns"]
    assert one["script"]["llm"]["asked_mid_turn"] >= 1, one["script"]["llm"]
    mid = turns[0]
    assert mid["upto_offset_ms"] >= 2500 and mid["action"]["action"] == "barge_in", turns
    assert mid["messages"][-1]["content"].endswith("..."), mid["messages"][-1]
    line = next(r for r in one["script"]["lines"] if r["kind"] == "llm")
    assert line["spoken_as"] == "barge_in" and line["into_agent_speech"], line
    # The barge-in went out while the agent's long reply was still being heard.
    heard = json.loads((tmp_path / "first" / "transcript.json").read_text())["turns"]
    long_reply = next(t for t in heard if t["speaker"] == "agent")
    assert long_reply["start_ms"] < line["sent"]["start_ms"] < long_reply["end_ms"] + 300, (
        line, long_reply)  # fmt: skip
    page = (tmp_path / "first" / "report.html").read_text()
    assert "The caller&#x27;s LLM" in page or "The caller's LLM" in page
    assert "hearing the agent mid-turn" in page, "the barge-in is not among the report's cues"
    two = json.loads((tmp_path / "second" / "result.json").read_text())["script"]["llm"]
    replayed = two["turns"][0]
    assert replayed["source"] == "replayed" and replayed["action"] == mid["action"], two
    assert replayed["upto_offset_ms"] == mid["upto_offset_ms"], (mid, replayed)
    assert abs(replayed["sent_offset_ms"] - mid["sent_offset_ms"]) <= 20, (mid, replayed)


# Alone, after the rest (scripts/test.sh): a one-thread LLM answering two live calls at once is
# CPU-bound; beside other workers' live calls both sides ran late (in a CI run one caller's LLM
# missed its deadline, and a reacting caller in another test heard a turn as no words).
@pytest.mark.solo
def test_load_places_llm_driven_callers_and_keeps_the_key_out(tmp_path: Path, monkeypatch):
    """`load --caller-llm`: two LLM-driven callers at once against the reference agent, each
    asking the real local LLM (SmolLM2-135M behind llama.cpp's server) with a key named by its
    variable: both calls run their LLM turns, the caller's LLM answer times are a row of their
    own (not the agent's latency) in the terminal, load.json and load.html, and the key is in
    no file written."""
    import subprocess

    from tests.conftest import reference_agent, turnscope_exe
    from tests.interop.llm_server import llm_server

    key = "sk-load-test-4f1c9e"
    monkeypatch.setenv("TURNSCOPE_TEST_LLM_KEY", key)
    scenario = tmp_path / "llm.yaml"
    scenario.write_text(LLM_CALLER)
    out = tmp_path / "load"
    with reference_agent(scenario) as url, llm_server(tmp_path / "llm") as server:
        cmd = [*turnscope_exe(), "load", url, "--scenario", str(scenario), "--loopback-only",
               "--calls", "2", "--rate", "2", "-o", str(out), "--caller-llm", server.url,
               "--caller-llm-model", server.model,
               "--caller-llm-key-env", "TURNSCOPE_TEST_LLM_KEY"]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stdout + done.stderr
    r = json.loads((out / "load.json").read_text())
    assert r["completed"] == 2 and r["calls_caller_llm_failed"] == 0 and not r["degraded"], r
    asked = 0
    for c in r["calls"]:
        script = json.loads((Path(c["bundle"]) / "result.json").read_text())["script"]
        turns = script["llm"]["turns"]
        assert turns and all(t["source"] == "llm" for t in turns), script["llm"]
        assert c["caller_llm_ms"] == [t["latency_ms"] for t in turns if t.get("latency_ms")]
        asked += len(c["caller_llm_ms"])
    assert r["caller_llm_ms"]["n"] == asked >= 2, r["caller_llm_ms"]
    assert "caller's LLM answer" in done.stdout, done.stdout
    page = html.unescape((out / "load.html").read_text())
    assert "the caller's LLM answer (not the agent's)" in page
    written = [p for p in out.rglob("*") if p.is_file()]
    assert not [p for p in written if key.encode() in p.read_bytes()], "the key was written"
    assert key not in done.stdout + done.stderr


def test_load_with_a_caller_llm_that_fails_is_the_callers_failure(tmp_path: Path):
    """`load --caller-llm` at a port where nothing answers: every call's caller stops at its
    first LLM turn, each record says its caller's LLM failed, and the run is degraded for the
    caller's failure (exit 4), never counted as the agent's."""
    import socket
    import subprocess

    from tests.conftest import reference_agent, turnscope_exe

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    scenario = tmp_path / "llm.yaml"
    scenario.write_text(LLM_CALLER)
    out = tmp_path / "load"
    with reference_agent(scenario) as url:
        cmd = [*turnscope_exe(), "load", url, "--scenario", str(scenario), "--loopback-only",
               "--calls", "2", "--rate", "2", "-o", str(out), "-q",
               "--caller-llm", dead]  # fmt: skip
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert done.returncode == 4 and "Traceback" not in done.stderr, done.stdout + done.stderr
    r = json.loads((out / "load.json").read_text())
    assert r["calls_caller_llm_failed"] == 2 and all(c["caller_llm_failed"] for c in r["calls"])
    assert any("the caller's LLM failed" in d and "not the agent's" in d for d in r["degraded"])
    assert "the caller's LLM failed" in done.stderr, done.stderr
