"""Faults and bad input: nothing captured is lost, nothing secret is written, nothing bad passes.

Each test feeds one kind of fault or bad input to the real command (or a real process) and
checks the outcome the README documents: one line naming the file or flag and the fix, the
documented exit code, and whatever was captured kept as a readable bundle marked degraded.
"""

from __future__ import annotations

import json
import subprocess
import time

import numpy as np
import soundfile as sf

from tests.conftest import turnscope_exe
from turnscope.capture.reference_agent import AgentBehaviour
from turnscope.capture.scenario import load_scenario
from turnscope.capture.scripted_caller import line_audio
from turnscope.capture.synth import render

SHORT = """
name: short
caller: {voice: en-us, timeout_s: 20, hangup_after_ms: 500, reply_timeout_ms: 3000}
script:
  - caller: I would like a refund please.
    at_ms: 300
  - agent: Sure, I can help with that refund today.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def _start_agent(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [*turnscope_exe(), "agent", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    assert "reference agent on" in line, line
    base = line.split("reference agent on ", 1)[1].split(":", 2)
    return proc, f"{base[0]}:{base[1]}:{base[2].split(':')[0]}/api/offer"


# --- the two known bugs ---------------------------------------------------------------------


def test_agent_silent_after_s_reaches_the_agent(tmp_path, cli):
    """`turnscope agent --silent-after-s` was declared and documented but never reached the
    agent's knobs: its truth log said "silent_after_s": null and the call went on."""
    scenario = tmp_path / "short.yaml"
    scenario.write_text(SHORT)
    truth = tmp_path / "truth.jsonl"
    proc, url = _start_agent(
        "--scenario", str(scenario), "--no-greet", "--silent-after-s", "1.5",
        "--truth-log", str(truth),
    )  # fmt: skip
    try:
        code, _, err = cli(
            "call", url, "--scenario", str(scenario), "--loopback-only", "-q",
            "--media-timeout", "2", "-o", str(tmp_path / "out"),
        )  # fmt: skip
        deadline = time.monotonic() + 10  # the agent logs the call once it has closed
        while not truth.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(10)
    assert code == 4 and "no audio from the agent" in err, err
    logged = json.loads(truth.read_text().splitlines()[0])
    assert logged["behaviour"]["silent_after_s"] == 1.5


def test_relative_audio_path_in_a_scenario_given_by_a_relative_path(tmp_path, monkeypatch):
    """A scenario's `audio:` is relative to the scenario file; given as
    configs/scenarios/x.yaml it was joined with that folder twice
    (configs/scenarios/configs/scenarios/clip.wav) by the caller and the reference agent."""
    folder = tmp_path / "configs" / "scenarios"
    folder.mkdir(parents=True)
    t = np.arange(16000) / 16000
    sf.write(folder / "clip.wav", (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000)
    (folder / "x.yaml").write_text(
        "name: x\nscript:\n"
        "  - caller: hello there\n    audio: clip.wav\n    at_ms: 100\n"
        "  - agent: hello to you\n    audio: clip.wav\n"
    )
    monkeypatch.chdir(tmp_path)
    sc = load_scenario("configs/scenarios/x.yaml")
    assert len(line_audio(sc, sc.script[0])) > 8000  # the caller's clip
    agent_line = AgentBehaviour.from_scenario(sc).lines[0]
    assert agent_line.audio is not None and agent_line.audio.is_file(), agent_line.audio
    assert render(sc).duration_ms > 1000  # and synth
