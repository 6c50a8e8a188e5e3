"""Turn-taking conditions provoked on purpose (issue 32, items 1, 2 and 5): a caller line with
pauses, rendered with exact truth and spoken on a real call; the metrics use the pauses the
caller made (none planned: not exercised); the scorecard and the gate name the metric; bad
scenarios are one line naming the key."""

from __future__ import annotations

import asyncio
import io
import json

import numpy as np
import pytest
from rich.console import Console

from tests.conftest import ROOT
from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.server import AgentServer
from turnscope.actors.caller.scenario_contract import scenario_contract
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.actors.caller.synth import render, write_call
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import Transcriber
from turnscope.capture.file.source import FileSource
from turnscope.capture.webrtc.call import CallOptions
from turnscope.cli.gate import parse_floors
from turnscope.errors import InputError
from turnscope.live_call import place_call
from turnscope.pipeline import run_pipeline
from turnscope.scoring.suites.gate import gate
from turnscope.scoring.suites.scorecard import TaskScores, scorecard
from turnscope.scoring.suites.turn_taking_gate import task_metrics
from turnscope.scoring.turn_taking import from_dicts, measure, turn_taking_section
from turnscope.scoring.turn_taking_input import truth_pauses

SCENARIOS = ROOT / "configs" / "scenarios"


def _load(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return load_scenario(path)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        (  # a pause at the end of the line is its end of turn
            "  - caller: I would like a refund\n    pauses: [{after_words: 5, ms: 800}]\n",
            r"script\[0\]: pauses\[0\]\.after_words: 5 is the end of the line",
        ),
        (  # longer than the caller itself waits for the agent
            "  - caller: I would like a refund\n    pauses: [{after_words: 2, ms: 9000}]\n",
            r"script\[0\]\.pauses\[0\]\.ms: 9000 ms is not shorter than caller\.reply_timeout_ms",
        ),
        (
            "  - caller: hello there\n  - agent: Hi, how can I help?\n    at_pause_ms: 300\n",
            r"script\[1\]\.at_pause_ms: the line before it must be a caller line with pauses",
        ),
        (
            "  - agent: Hello.\n  - caller: wait a moment\n    barge_in_ms: 100\n"
            "    pauses: [{after_words: 1, ms: 500}]\n",
            r"script\[1\]: pauses: are for a caller's own line",
        ),
    ],
)
def test_a_bad_pause_is_one_line_naming_the_key(tmp_path, script, message):
    with pytest.raises(InputError, match=message) as err:
        _load(tmp_path, f"name: bad\nscript:\n{script}")
    assert "\n" not in str(err.value)


def test_a_backchannel_longer_than_the_agent_turn_is_refused(tmp_path):
    """An agent turn too short to hold a backchannel: no "kept talking" to score; the render
    names the backchannel's key instead of making a false yield out of it."""
    sc = _load(
        tmp_path,
        "name: short\nscript:\n  - caller: Hello there.\n  - agent: Yes, hello.\n"
        "  - caller: mm-hmm, right, okay then\n    backchannel_ms: 300\n",
    )
    with pytest.raises(InputError, match=r"script\[2\]\.backchannel_ms: script\[1\] ends") as e:
        render(sc)
    assert "the agent's turn is too short to hold it" in str(e.value)
    sc = _load(  # the agent finishes 200-400 ms after it: within the yield window, refused too
        tmp_path,
        "name: near-end\nscript:\n  - caller: Hello there.\n  - agent: Yes, hello, how are you?\n"
        "  - caller: mm-hmm\n    backchannel_ms: 600\n",
    )
    with pytest.raises(InputError, match=r"after this backchannel ends \(it must go on more than"):
        render(sc)


def test_rendered_pauses_are_exact_and_scored_from_truth():
    """pause-takeover.yaml: each pause in truth.json is digital silence of exactly its planned
    length between the caller's words; the agent that jumps into the first one (5 words)
    takes the floor and talks over the caller's going on (TOR 1/3); "Okay." in the third is too
    short to take it (an agent backchannel)."""
    sc = load_scenario(SCENARIOS / "pause-takeover.yaml")
    call = render(sc)
    truth = call.truth()
    planned = [p.ms for line in sc.script for p in line.pauses or ()]
    got = [p["end_ms"] - p["start_ms"] for p in truth["pauses"]]
    assert got == pytest.approx(planned, abs=0.07)
    for p in truth["pauses"]:  # quiet inside, past the 5 ms decay and onset kept around speech
        s, e = round(p["start_ms"] * 16) + 80, round(p["end_ms"] * 16) - 80
        assert np.abs(call.clean_caller[s:e]).max() == 0.0
    tt = measure(
        from_dicts(truth["turns"], truth["backchannels"], truth_pauses(truth), call.duration_ms)
    )
    ph = tt.conditions["pause_handling"]
    assert (ph.events, ph.takeovers, ph.tor) == (3, 1, 0.3333)
    assert tt.pause_talk_over_count == 1 and 700 < tt.pause_talk_over_ms < 1000
    assert tt.agent_backchannels == 1
    assert tt.conditions["user_interruption"].tor is None  # not exercised


def test_replay_with_the_callers_pauses_finds_the_truths_events(tmp_path):
    """The replay pipeline on the rendered call, given the pauses the caller made (as a live
    caller reports them), gives the pause events of the truth; without them (no caller said),
    the 900-1200 ms pauses split the caller's lines and are not guessed as pauses."""
    call = render(load_scenario(SCENARIOS / "pause-takeover.yaml"))
    paths = write_call(call, tmp_path)
    settings = load_settings()
    src = FileSource.stereo(paths["call"], chunk_ms=200)
    result = asyncio.run(
        run_pipeline(src, settings, transcriber=Transcriber(settings.asr, settings.confirm))
    )
    planned = truth_pauses(call.truth())
    tt = turn_taking_section(result.assembly, result.heard, result.audio_ms, planned)
    found = [(round(e.start_ms), e.takeover) for e in tt.events if e.kind == "pause_handling"]
    assert found == [
        (round(a), took) for (a, _), took in zip(planned, (True, False, False), strict=True)
    ]
    assert tt.pause_talk_over_count == 1
    none = turn_taking_section(result.assembly, result.heard, result.audio_ms, [])
    assert none.conditions["pause_handling"].events == 0  # a script without pauses
    assert none.conditions["pause_handling"].tor is None and none.pause_talk_over_ms is None


def _card(pause_tor: float, t_stop: float | None = 300.0):
    tt = {
        "conditions": {
            "pause_handling": {"events": 2, "tor": pause_tor},
            "smooth_turn_taking": {"events": 3, "tor": 1.0, "latency_ms": 500.0},
            "backchannel": {"events": 0, "tor": None},
        },
        "t_stop_ms": t_stop,
        "backchannel_false_yield_rate": None,
    }
    dims = {"latency": 1.0, "turn_taking": 1.0, "barge_in": 1.0, "content": 1.0}
    task = TaskScores("t1", ["conversational"], "pass", dims, turn_taking=task_metrics(tt))
    return scorecard([task])


def test_scorecard_and_gate_name_the_turn_taking_metric():
    card = _card(0.5)
    assert card["turn_taking"]["conversational"] == {
        "pause_tor": 0.5,
        "smooth_tor": 1.0,
        "takeover_latency_ms": 500.0,
        "t_stop_ms": 300.0,
    }  # fmt: skip  (backchannel not exercised: no value, never 0)
    assert gate(card, None).passed
    floors = parse_floors(["pause_tor@conversational=0.2"])
    failed = [c for c in gate(card, None, floors=floors).cells if not c.passed]
    assert [(c.tag, c.dim) for c in failed] == [("conversational", "pause_tor")]
    assert "pause_tor 0.500 is above its ceiling 0.200" in failed[0].failures[0]
    assert gate(card, None, floors=parse_floors(["pause_tor@all=0.6"])).passed
    worse = gate(_card(0.5, t_stop=900.0), _card(0.0))  # regressions against the baseline
    named = {c.dim for c in worse.cells if not c.passed}
    assert named == {"pause_tor", "t_stop_ms"}
    gone = gate(_card(0.0, t_stop=None), _card(0.0))
    assert any("t_stop_ms not exercised in this run" in f for c in gone.cells for f in c.failures)
    for bad in ("pause_tor=1.5", "t_stop_ms=-1", "pause_tor@=0.1"):
        with pytest.raises(InputError, match="--floor"):
            parse_floors([bad])


PAUSED = """
name: paused
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 600}
agent: {voice: en-gb, latency_ms: 300}
script:
  - caller: I would like to change the delivery address please.
    at_ms: 400
    pauses: [{after_words: 5, ms: 1500}]
  - agent: Sure, which order is it about? Tell me the number.
    at_pause_ms: 400
  - caller: Thank you, bye.
  - agent: Goodbye.
"""


def test_a_live_caller_makes_its_pause_and_the_agent_that_takes_it_is_told(tmp_path):
    """A real aiortc call: the reference agent takes the floor 400 ms into the caller's 1.5 s
    pause (``at_pause_ms``; without it, it waits: test_agent_pauses). The caller reports the
    pause as it sent it (exactly 1500 ms, in source.details); result.json's pause handling is
    that one event, a takeover; the live view says so as it happens."""
    sc = _load(tmp_path, PAUSED)
    out = io.StringIO()

    async def call():
        server = AgentServer(AgentBehaviour.from_scenario(sc, end_of_turn_ms=400))
        base = await server.start()
        options = CallOptions(base + "/api/offer", loopback_only=True, media_timeout_s=3)
        try:
            return await place_call(
                options, sc, load_settings(), scenario_contract(sc), tmp_path / "run",
                console=Console(file=out, width=200),
            )  # fmt: skip
        finally:
            await server.stop()

    asyncio.run(call())
    doc = json.loads((tmp_path / "run" / "result.json").read_text())
    (pause,) = doc["script"]["pauses"]
    assert pause[1] - pause[0] == pytest.approx(1500, abs=0.2)
    tt = doc["turn_taking"]
    (event,) = [e for e in tt["events"] if e["kind"] == "pause_handling"]
    assert event["start_ms"] == pause[0] and event["takeover"] is True
    assert tt["conditions"]["pause_handling"]["tor"] == 1.0
    assert "took the floor at the caller's pause" in out.getvalue()
