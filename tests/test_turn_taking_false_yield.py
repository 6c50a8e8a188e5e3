"""False yields with exact truth (issue 32): a synthetic agent line with
``backchannel_yield_ms`` stops at the caller's backchannel as at a barge-in; truth.json's turns
say so exactly, the metrics on truth give the planned false-yield rate and classes, the replay
pipeline finds the same events, and a planned false yield that would not be one is a line
naming the key."""

from __future__ import annotations

import asyncio
import io
import json

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
from turnscope.errors import InputError
from turnscope.live_call import place_call
from turnscope.pipeline import run_pipeline
from turnscope.scoring.turn_taking import YIELD_MS, from_dicts, measure, turn_taking_section
from turnscope.scoring.turn_taking_input import (
    CallTurns,
    Speech,
    said_backchannels,
    stops_at_backchannels,
    truth_backchannels,
)
from turnscope.scoring.turn_taking_model import Behaviour

SCENARIO = ROOT / "configs" / "scenarios" / "backchannel-yield.yaml"
PLANNED = [Behaviour.REPEATED, Behaviour.KEPT_TALKING, Behaviour.WENT_SILENT]


def _backchannels(tt):
    return [e for e in tt.events if e.kind == "backchannel"]


def test_a_planned_false_yield_is_exact_in_truth():
    """The cut agent line ends where it was cut (backchannel start + 250 / 300 ms, to its last
    voiced sample); the metrics on truth: two false yields of three backchannels."""
    call = render(load_scenario(SCENARIO))
    truth = call.truth()
    bcs = truth["backchannels"]
    cut = [u for u in truth["utterances"] if u["truncated"]]
    assert len(cut) == 2
    for u, bc, stop in zip(cut, (bcs[0], bcs[2]), (250, 300), strict=True):
        assert bc["start_ms"] < u["end_ms"] <= bc["start_ms"] + stop + 5
    tt = measure(from_dicts(truth["turns"], bcs, [], truth["duration_ms"]))
    assert [e.behaviour for e in _backchannels(tt)] == PLANNED
    assert tt.backchannel_false_yield_rate == pytest.approx(2 / 3, abs=1e-4)


def test_the_replay_finds_the_false_yields(tmp_path):
    """The replay pipeline on the rendered call, handed the backchannels the caller made (as a
    live caller reports them), tells the same three behaviours."""
    call = render(load_scenario(SCENARIO))
    settings = load_settings()
    paths = write_call(call, tmp_path)
    src = FileSource.stereo(paths["call"], chunk_ms=200)
    result = asyncio.run(
        run_pipeline(src, settings, transcriber=Transcriber(settings.asr, settings.confirm))
    )
    said = truth_backchannels(call.truth())
    tt = turn_taking_section(result.assembly, result.heard, result.audio_ms, [], said)
    truth = call.truth()["backchannels"]
    found = _backchannels(tt)
    assert [round(e.start_ms / 100) for e in found] == [round(b["start_ms"] / 100) for b in truth]
    assert [e.behaviour for e in found] == PLANNED


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (  # the agent line ends before it would stop: nothing to yield
            "    backchannel_yield_ms: 15000\n",
            r"script\[1\]\.backchannel_yield_ms: script\[1\] ends before it would stop",
        ),
        (  # stopping long after the backchannel is talking on, not a yield
            f"    backchannel_yield_ms: {YIELD_MS + 1500}\n",
            r"script\[1\]\.backchannel_yield_ms: the agent stops \d+ ms after .* yield window",
        ),
    ],
)
def test_a_false_yield_that_would_not_be_one_is_refused(tmp_path, line, message):
    path = tmp_path / "s.yaml"
    path.write_text(
        "name: bad\nscript:\n  - caller: Hello there.\n"
        "  - agent: Yes, hello. I can help you with that, let me look up your order first, "
        "and then we will see what we can do about the delivery.\n"
        f"{line}  - caller: mm-hmm\n    backchannel_ms: 1500\n"
    )
    with pytest.raises(InputError, match=message) as err:
        render(load_scenario(path))
    assert "\n" not in str(err.value)


def test_backchannel_yield_ms_is_for_agent_lines(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text("name: bad\nscript:\n  - caller: Hello.\n    backchannel_yield_ms: 200\n")
    with pytest.raises(InputError, match="backchannel_yield_ms") as err:
        load_scenario(path)
    assert "\n" not in str(err.value)


def _t(speaker, start, end, text, interrupt=False):
    return {"speaker": speaker, "start_ms": start, "end_ms": end, "text": text,
            "interrupt": interrupt}  # fmt: skip


def test_a_misheard_backchannel_the_caller_made_is_a_backchannel_by_hand():
    """tiny.en writes a hummed "mm-hmm" as "An anthem?": the assembly, reading words, makes it
    a barge-in and splits the agent's turn at its next breath (16.4 s). Told the caller made a
    backchannel at 16.07-16.61 s, the metrics read a backchannel the agent talked through (no
    barge-in, no false yield); without it, a barge-in the agent kept talking over."""
    call = from_dicts(
        [
            _t("caller", 13205, 15025, "Will the delivery date stay the same?"),
            _t("agent", 15470, 16400, "Yes, I have"),
            _t("caller", 16070, 16611, "An anthem?", interrupt=True),
            _t("agent", 16640, 21418, "changed the delivery address ..."),
            _t("caller", 21900, 23000, "Thank you."),
        ],
        duration_ms=25000,
    )
    asr_only = measure(call)
    assert [e.kind for e in asr_only.events if e.kind == "user_interruption"] == [
        "user_interruption"
    ]
    told = measure(said_backchannels(call, [(16072, 16608)]))
    assert told.conditions["user_interruption"].events == 0  # not exercised
    (bc,) = _backchannels(told)
    assert bc.behaviour is Behaviour.KEPT_TALKING and told.backchannel_false_yield_rate == 0.0
    agent = [t for t in said_backchannels(call, [(16072, 16608)]).turns if t.speaker == "agent"]
    assert [(a.start_ms, a.end_ms) for a in agent] == [(15470, 21418)]
    # A caller turn mostly outside every planned backchannel is left as the assembly read it.
    assert said_backchannels(call, [(16500, 17500)]) == call


HUMMED = """
name: hummed
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 600}
agent: {voice: en-gb, latency_ms: 300}
script:
  - caller: How do I reset my password?
    at_ms: 400
  - agent: >-
      Open the sign in page and choose the link that says forgot password, then enter the
      email address on your account and we will send you a reset link.
    backchannel_yield_ms: 250
  - caller: mm-hmm
    backchannel_ms: 2000
  - agent: Sorry, please go on.
  - caller: Thank you, bye.
    after_agent_ms: 1000
  - agent: Goodbye.
"""


@pytest.mark.parametrize("false_yield", [True, False], ids=["yields", "talks-on"])
def test_a_live_caller_reports_its_backchannel_and_the_metrics_read_it(tmp_path, false_yield):
    """A real aiortc call against the reference agent, its line declaring the false yield
    (``backchannel_yield_ms``: it stops at the backchannel, as livekit/livekit#4270 reports of
    real agents) or not (it talks on, as the synthetic call does): the caller's "mm-hmm" goes
    out while the agent talks and is reported with its send times (script.lines); result.json's
    turn-taking reads one backchannel there, whatever the ASR made of the hum, no barge-in, and
    the agent's stop as a false yield, or its talking on as kept talking."""
    path = tmp_path / "s.yaml"
    declared = "    backchannel_yield_ms: 250\n"
    path.write_text(HUMMED if false_yield else HUMMED.replace(declared, ""))
    sc = load_scenario(path)
    seen = io.StringIO()

    async def call():
        server = AgentServer(AgentBehaviour.from_scenario(sc))
        base = await server.start()
        options = CallOptions(base + "/api/offer", loopback_only=True, media_timeout_s=3)
        try:
            return await place_call(
                options, sc, load_settings(), scenario_contract(sc), tmp_path / "run",
                console=Console(file=seen, width=200),
            )  # fmt: skip
        finally:
            await server.stop()

    asyncio.run(call())
    doc = json.loads((tmp_path / "run" / "result.json").read_text())
    (line,) = [x for x in doc["script"]["lines"] if x.get("spoken_as") == "backchannel"]
    tt = doc["turn_taking"]
    (bc,) = [e for e in tt["events"] if e["kind"] == "backchannel"]
    assert bc["start_ms"] == pytest.approx(line["sent"]["start_ms"], abs=150)
    assert tt["conditions"]["user_interruption"]["events"] == 0
    if not false_yield:  # before, the reference agent yielded to any sound over its line
        assert bc["behaviour"] == "kept_talking" and tt["backchannel_false_yield_rate"] == 0.0
        return
    assert bc["behaviour"] != "kept_talking" and tt["backchannel_false_yield_rate"] == 1.0
    # The live view read the caller's own report too: the false yield told as it settled.
    told = [x for x in seen.getvalue().splitlines() if "turn-taking: false yield" in x]
    assert len(told) == 1, seen.getvalue()


def test_an_agent_that_stops_at_a_backchannel_and_starts_over_within_a_second_by_hand():
    """The stock pipecat bot (interruptions on) stops 390 ms into the caller's "mm-hmm", is
    silent 930 ms and starts its reply over: within the assembly's 1 s merge gap, so one agent
    turn. Its voice stopped for longer than the end-of-turn silence (600 ms) within the yield
    window: a false yield, repeating itself. A 395 ms breath at the same place is talking on."""
    reply = "Let me explain how it works. First, I look up your order."
    spans = ((5117.0, 6742.0), (7137.0, 8876.0), (9271.0, 9749.0), (10677.0, 12302.0))
    agent = Speech("agent", 5117, 12302, f"{reply} {reply}", spans=spans)
    caller = Speech("caller", 398, 4382, "Hi, I am locked out.")
    hum = Speech("caller", 9358, 9959, "Mm-hmm.")
    tt = measure(stops_at_backchannels(CallTurns((caller, agent), (hum,), (), 20000)))
    (bc,) = _backchannels(tt)
    assert bc.behaviour is Behaviour.REPEATED and bc.t_stop_ms == pytest.approx(391)
    assert tt.backchannel_false_yield_rate == 1.0
    breath = ((5117.0, 6742.0), (7137.0, 8876.0), (9271.0, 9749.0), (10144.0, 12302.0))
    on = Speech("agent", 5117, 12302, f"{reply} {reply}", spans=breath)
    tt = measure(stops_at_backchannels(CallTurns((caller, on), (hum,), (), 20000)))
    assert [e.behaviour for e in _backchannels(tt)] == [Behaviour.KEPT_TALKING]
