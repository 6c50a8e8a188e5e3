"""A recorded call's real caller re-driven (issue 31.4): a call against the reference agent is
recorded, its caller becomes a scenario (its own clips, its gaps, its barge-in), and a new call
with that scenario against the same agent reproduces the recorded call; its report sets the two
side by side. A recording that holds no call is refused in one line."""

from __future__ import annotations

import asyncio
import json
import statistics
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import yaml

from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.server import AgentServer
from turnscope.actors.caller.scenario_contract import scenario_contract
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.asr.settings import load_settings
from turnscope.capture.webrtc.call import CallOptions
from turnscope.errors import InputError
from turnscope.live_call import place_call
from turnscope.redrive import scenario_from_recording
from turnscope.scoring.redrive import compare

SCENARIO = """
name: redrive-source
caller: {voice: en-us, timeout_s: 40, hangup_after_ms: 700}
agent: {voice: en-gb, latency_ms: 400, yield_ms: 200}
script:
  - agent: Hello, how can I help?
  - caller: I would like to check on my order please.
    after_agent_ms: 150
  - agent: >-
      Sure. Your order left our warehouse this morning, and it should arrive by Friday
      afternoon at the latest.
  - caller: wait
    barge_in_ms: 1400
  - agent: Yes?
  - caller: Can I change the address?
    after_agent_ms: 300
"""
SHORT_GAP_MS = 250  # shorter than the end-of-turn silence: only reply_gap_ms can keep it
TOLERANCE_MS = 250


def _call(sc, behaviour: AgentBehaviour, outdir: Path):
    async def go():
        server = AgentServer(behaviour)
        base = await server.start()
        options = CallOptions(base + "/api/offer", loopback_only=True, media_timeout_s=3)
        try:
            run, _, caller = await place_call(
                options, sc, load_settings(), scenario_contract(sc), outdir, console=None
            )
        finally:
            await server.stop()
        return run, caller

    return asyncio.run(go())


def _turns(bundle: Path) -> list[dict]:
    return json.loads((bundle / "transcript.json").read_text())["turns"]


@pytest.fixture(scope="module")
def redriven(tmp_path_factory):
    root = tmp_path_factory.mktemp("redrive")
    (root / "source.yaml").write_text(SCENARIO)
    source = load_scenario(root / "source.yaml")
    agent = AgentBehaviour.from_scenario(source)
    _call(source, agent, root / "recorded-call")
    made = scenario_from_recording(root / "recorded-call", outdir=root / "sc")
    # One reply made quicker than any end-of-turn decision allows: reply_gap_ms counts from the
    # agent's voice stopping.
    doc = yaml.safe_load(made.built.scenario.read_text())
    last = next(ln for ln in reversed(doc["script"]) if "reply_gap_ms" in ln)
    last["reply_gap_ms"] = SHORT_GAP_MS
    made.built.scenario.write_text(yaml.safe_dump(doc, sort_keys=False))
    run, caller = _call(load_scenario(made.built.scenario), agent, root / "new-call")
    return root, made, doc, run, caller


def test_the_scenario_is_the_recorded_callers_turns(redriven):
    root, made, doc, _, _ = redriven
    callers = [ln for ln in doc["script"] if "caller" in ln]
    assert len(callers) == made.caller_turns == 3
    assert [next(k for k in ln if k.endswith("_ms")) for ln in callers] == [
        "reply_gap_ms",
        "barge_in_ms",
        "reply_gap_ms",
    ]
    assert all((made.folder / ln["audio"]).is_file() for ln in callers)
    assert doc["recorded"]["bundle"] == "recorded"
    assert doc["recorded"]["words"] == "asr"  # no --reference: the recorded call's transcript
    assert (root / "sc" / "recorded" / "transcript.json").is_file()


def test_the_new_call_reproduces_the_recorded_one(redriven):
    root, made, _, _, caller = redriven
    assert caller.finished_reason == "scenario finished", caller.warnings
    c = compare(_turns(made.bundle), _turns(root / "new-call"))
    assert c.counts["caller turns"] == (3, 3) and c.counts["barge-ins"] == (1, 1)
    # Loose bounds: they catch a caller placed by the wrong rule (an end-of-turn decision is
    # 600 ms late), not the live path's jitter on a loaded machine; benchmarks/redrive.py
    # measures how close the re-drive comes (about 30 ms median).
    off = [(p.recorded, p.new) for p in c.latencies]
    assert (
        c.latency_median_abs_diff_ms is not None and c.latency_median_abs_diff_ms <= TOLERANCE_MS
    ), off
    gaps = [p for p in c.caller_gaps if p.diff is not None]
    assert len(gaps) == 2
    assert abs(gaps[0].diff) <= TOLERANCE_MS, gaps  # the recorded gap, kept
    assert abs(gaps[1].new - SHORT_GAP_MS) <= TOLERANCE_MS, gaps  # from the voice's stop
    yields = [abs(p.diff) for p in c.barge_in_yields if p.diff is not None]
    assert statistics.median(yields) <= TOLERANCE_MS


def test_the_report_sets_the_new_call_beside_the_recorded_one(redriven):
    root, made, _, _, _ = redriven
    result = json.loads((root / "new-call" / "result.json").read_text())
    assert result["script"]["recorded"]["bundle"] == str(made.bundle.resolve())
    # Its caller's words are the recorded ASR's own: no WER is measured against them (it would
    # grade the ASR by itself), neither the caller's nor the recorded clips' voice's.
    wer = result["wer"]
    assert wer["overall"]["wer"] is None and wer["per_channel"] == {}, wer
    (clips,) = [v for v in result["script"]["voices"] if v["engine"] == "recorded"]
    assert clips["words"] == "asr" and "asr" not in clips, clips
    page = (root / "new-call" / "report.html").read_text()
    assert 'id="redrive"' in page and "Reply latency" in page and "What the agent said" in page


def _stereo(path: Path, left: np.ndarray, right: np.ndarray) -> Path:
    sf.write(path, np.stack([left, right], axis=1), 16000, subtype="PCM_16")
    return path


def test_a_recording_that_holds_no_call_is_refused_in_one_line(redriven, tmp_path):
    root, _, _, _, _ = redriven
    agent, _ = sf.read(root / "recorded-call" / "agent.wav", dtype="float32")
    agent = agent[: 16000 * 5]  # the greeting: enough to tell, quick to replay
    cases = {
        "same.wav": (agent, agent, "same audio"),
        "silent.wav": (np.zeros_like(agent), agent, "no speech on the caller channel (left)"),
    }
    for name, (left, right, said) in cases.items():
        path = _stereo(tmp_path / name, left, right)
        with pytest.raises(InputError) as err:
            scenario_from_recording(path, outdir=tmp_path / f"out-{path.stem}")
        msg = str(err.value)
        assert msg.startswith(str(path)) and said in msg and "\n" not in msg, msg
        assert not (tmp_path / f"out-{path.stem}" / "scenario.yaml").exists()
        assert path.is_file()  # the recording is only read
    mono = tmp_path / "mono.wav"
    sf.write(mono, agent, 16000)
    with pytest.raises(InputError, match="1 channel; re-driving needs"):
        scenario_from_recording(mono, outdir=tmp_path / "out-mono")
    # A bundle keeps each party in its own file: a caller channel named for it is said.
    with pytest.raises(InputError, match="--caller-channel picks the caller's side of a two-ch"):
        scenario_from_recording(
            root / "recorded-call", outdir=tmp_path / "b", caller_channel="right"
        )
    assert not (tmp_path / "b").exists()


def test_placement_rules_and_reference_words():
    from turnscope.actors.caller.from_recording import _Item, reference_texts, script_of

    items = [
        _Item("agent", "turn", 0, 3000, "Hello there, how are you today?"),
        _Item("caller", "turn", 1000, 1400, "wait", interrupt=True),
        _Item("caller", "turn", 2000, 2300, "stop", interrupt=True),  # a second one
        _Item("caller", "turn", 3300, 4000, "fine thanks"),  # after the talked-through turn
        _Item("agent", "turn", 4600, 5000, "Good."),
        _Item("caller", "backchannel", 4700, 4800, "mhm"),
        _Item("caller", "turn", 5200, 5600, "bye"),
    ]
    callers = [i for i in items if i.speaker == "caller"]
    ref = [{"speaker": "caller", "start_ms": 3250, "end_ms": 4100, "text": "Fine, thanks."}]
    texts = reference_texts(callers, ref)
    assert texts == ["wait", "stop", "Fine, thanks.", "mhm", "bye"]
    clips = [f"c{k}.wav" for k in range(len(callers))]
    script, notes = script_of(items, [0.0] * len(callers), clips, texts)
    triggers = [{k: v for k, v in ln.items() if k.endswith("_ms")} for ln in script]
    assert triggers == [
        {},
        {"barge_in_ms": 1000},
        {"after_agent_ms": 600},
        {"reply_gap_ms": 300},
        {"latency_ms": 600},
        {"backchannel_ms": 100},
        {"reply_gap_ms": 200},
    ]
    assert len(notes) == 1 and "placed as after the caller's previous line" in notes[0]


def test_a_degraded_runs_bundle_is_re_driven_with_a_warning_naming_why(tmp_path, cli):
    """A bundle whose own result.json says its evidence is degraded (here a replay of a file
    cut off mid-data) makes a scenario of what it captured, and says so (it said nothing)."""
    data = (Path(__file__).parent.parent / "recordings" / "refund-call.wav").read_bytes()
    (tmp_path / "cut.wav").write_bytes(data[: len(data) // 3])
    code, _, err = cli("replay", str(tmp_path / "cut.wav"), "-q", "-o", str(tmp_path / "run"))
    assert code == 4 and "the file was cut off" in err, err
    code, out, err = cli("scenario", "from-recording", str(tmp_path / "run"), "-o",
                         str(tmp_path / "redrive"))  # fmt: skip
    assert code == 0 and (tmp_path / "redrive" / "scenario.yaml").is_file(), (out, err)
    [line] = [x for x in err.splitlines() if "degraded evidence" in x]
    assert "the file was cut off" in line and "re-drives what it captured" in line, line
