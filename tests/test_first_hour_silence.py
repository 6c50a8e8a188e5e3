"""The digital-silence warning only where exact zeros are not an idle party: a gap inside a turn,
a channel of zeros for the whole call, zeros in a recording from outside turnscope; never the
zeros a live agent sends between its turns, nor those of turnscope's own recordings."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT, turnscope_exe
from turnscope.asr.audio_checks import AudioChecks

TRUTH = json.loads((ROOT / "recordings" / "refund-call.truth.json").read_text())

# The reference agent on a phone line sends media only while it talks: the agent channel holds
# exact zeros between its replies (2.5 s of thinking before each), as a pipecat bot's does.
PHONE = """
name: idle-agent
task:
  budgets: {max_latency_ms: 4000}
caller: {voice: en-us, timeout_s: 40, hangup_after_ms: 600}
agent: {voice: en-gb, latency_ms: 2500}
script:
  - caller: I would like a refund for my order please.
    at_ms: 400
  - agent: >-
      Sure. Our refund policy gives you thirty days to send the item back for a full refund
      of the price.
  - caller: Thank you. And how long does the refund take to arrive?
  - agent: About five days.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def _silence(warnings: list[str]) -> list[str]:
    return [w for w in warnings if "digital silence" in w]


def _checks(pcm: np.ndarray) -> AudioChecks:
    c = AudioChecks("agent")
    for k in range(0, len(pcm), 320):
        c.add(k, pcm[k : k + 320])
    return c


def test_zeros_count_inside_a_turn_or_for_the_whole_call_when_the_party_idles():
    audio, _ = sf.read(ROOT / "recordings" / "refund-call.wav", dtype="int16")
    agent = audio[:, 1].copy()
    turns = [(t["start_ms"], t["end_ms"]) for t in TRUTH["turns"] if t["speaker"] == "agent"]
    idle = np.ones(len(agent), dtype=bool)
    for s, e in turns:
        idle[int(s * 16) : int(e * 16)] = False
    agent[idle] = 0  # an idle agent: exact zeros between its turns, several seconds of them
    [said] = _silence(_checks(agent).problems())  # from outside turnscope: odd
    assert "AudioBufferProcessor" in said  # the benign cause named beside lost audio
    assert _silence(_checks(agent).problems(turns=turns)) == []  # a live agent listening
    s, e = max(turns, key=lambda t: t[1] - t[0])
    gap = agent.copy()
    mid = int((s + e) / 2 * 16)
    gap[mid : mid + 16 * 700] = 0  # 0.7 s of lost audio inside its longest reply
    said = _silence(_checks(gap).problems(turns=turns))
    assert len(said) == 1 and "inside its own turn" in said[0], said
    dead = np.zeros_like(agent)
    said = _silence(_checks(dead).problems(turns=[]))
    assert len(said) == 1 and "whole call" in said[0], said


@pytest.fixture(scope="module")
def phone_bundle(tmp_path_factory) -> Path:
    """A live phone call to the reference agent, its bundle."""
    root = tmp_path_factory.mktemp("phone")
    scenario = root / "idle.yaml"
    scenario.write_text(PHONE)
    agent = subprocess.Popen(
        [*turnscope_exe(), "agent", "--transport", "twilio", "--port", "0", "--scenario",
         str(scenario)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        line = agent.stdout.readline() if agent.stdout else ""
        url = line.split("reference agent on ", 1)[1].split()[0]
        out = root / "call"
        proc = subprocess.run(
            [*turnscope_exe(), "call", url, "--transport", "twilio", "--scenario", str(scenario),
             "-q", "-o", str(out)],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
        )  # fmt: skip
    finally:
        agent.terminate()
        agent.wait(10)
    # 4: degraded (a loaded machine sends the caller late); the warnings are still there to read
    assert proc.returncode in (0, 1, 4) and (out / "result.json").exists(), (
        proc.stdout + proc.stderr
    )
    assert "digital silence" not in proc.stdout + proc.stderr
    return out


def _longest_zeros_between_sounds(path: Path) -> float:
    x, _ = sf.read(path, dtype="int16")
    nz = np.flatnonzero(x)
    inner = x[nz[0] : nz[-1]] == 0
    d = np.diff(np.r_[0, inner.astype(np.int8), 0])
    return float(((np.flatnonzero(d == -1) - np.flatnonzero(d == 1)).max()) / 16000)


def test_a_live_agent_idling_between_its_turns_is_not_warned(phone_bundle):
    assert _longest_zeros_between_sounds(phone_bundle / "agent.wav") >= 2.0  # it did idle
    result = json.loads((phone_bundle / "result.json").read_text())
    assert _silence(result["warnings"]) == [], result["warnings"]


def test_replaying_turnscopes_own_recording_is_not_warned_but_an_outside_one_is(
    phone_bundle, tmp_path
):
    import turnscope

    own = turnscope.replay(
        caller=phone_bundle / "caller.wav", agent=phone_bundle / "agent.wav", outdir=tmp_path / "a"
    )
    assert _silence(own.result.warnings) == [], own.result.warnings
    outside = tmp_path / "outside"
    outside.mkdir()
    for ch in ("caller", "agent"):
        shutil.copy(phone_bundle / f"{ch}.wav", outside / f"{ch}.wav")
    run = turnscope.replay(
        caller=outside / "caller.wav", agent=outside / "agent.wav", outdir=tmp_path / "b"
    )
    assert _silence(run.result.warnings), run.result.warnings


def test_zeros_inside_a_turn_of_an_own_recording_are_warned(phone_bundle, tmp_path):
    import turnscope

    copy = tmp_path / "bundle"
    shutil.copytree(phone_bundle, copy)
    turns = json.loads((copy / "transcript.json").read_text())["turns"]
    longest = max((t for t in turns if t["speaker"] == "agent"),
                  key=lambda t: t["end_ms"] - t["start_ms"])  # fmt: skip
    agent, rate = sf.read(copy / "agent.wav", dtype="int16")
    mid = int((longest["start_ms"] + longest["end_ms"]) / 2 * rate / 1000)
    agent[mid : mid + rate * 7 // 10] = 0  # 0.7 s lost in the middle of its longest reply
    sf.write(copy / "agent.wav", agent, rate, subtype="PCM_16")
    run = turnscope.replay(caller=copy / "caller.wav", agent=copy / "agent.wav",
                           outdir=tmp_path / "run")  # fmt: skip
    said = _silence(run.result.warnings)
    assert len(said) == 1 and "inside its own turn" in said[0], run.result.warnings


def test_a_scripted_calls_fixture_keeps_the_lines_its_caller_spoke(phone_bundle, tmp_path):
    """(`fixture add` of a scripted call: the WER reference is the script's text as spoken.)"""
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({
        "kind": "agent-learning.bench-suite.v1", "control": "voice", "name": "mine",
        "version": "1", "tasks": [],
    }))  # fmt: skip
    proc = subprocess.run(
        [*turnscope_exe(), "fixture", "add", str(phone_bundle), "--suite", str(suite),
         "--tags", "conversational", "--id", "idle"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "WER reference: the caller's lines of scenario idle-agent" in " ".join(
        proc.stdout.split()
    )
    reference = json.loads((tmp_path / "fixtures" / "idle.reference.json").read_text())
    assert reference == {
        "caller": "I would like a refund for my order please. Thank you. And how long does the "
        "refund take to arrive? Thank you, goodbye."
    }
    flac = tmp_path / "fixtures" / "idle.flac"
    from turnscope.asr.audio_checks import own_recording

    assert own_recording(flac)
