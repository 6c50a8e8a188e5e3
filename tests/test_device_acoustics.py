"""A sound-device call's caller carries its scenario's ``caller.acoustics`` (issue 31.2: "applied
to what the caller sends on a live call"): the same ``Bed`` a WebRTC or phone-line caller's
queue mixes, here mixed by the device player per block at the device's rate, from the call's
start. On the project's virtual devices (a headless PulseAudio, as tests/test_devices.py) against
the device-mode reference agent: the background is in the caller channel at the SNR asked, lost
packets are counted, and the caller's turn is still where it was sent."""

from __future__ import annotations

import asyncio
import json

import numpy as np
import soundfile as sf

from tests.test_devices import start_agent, stop_agent, virtual_devices  # noqa: F401
from turnscope.actors.caller.scenario_contract import scenario_contract
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.asr.settings import load_settings
from turnscope.capture.device.call import DeviceCallOptions
from turnscope.live_call import place_call

SNR_DB = 12.0
SCENARIO = f"""
name: device-acoustics
caller:
  voice: en-us
  timeout_s: 30
  hangup_after_ms: 1500
  acoustics: {{noise: office, snr_db: {SNR_DB:g}, loss: 0.05, seed: 3}}
agent: {{voice: en-gb, latency_ms: 800}}
script:
  - caller: I would like a refund for my order please.
    at_ms: 1200
  - agent: Sure, I can help with your refund.
"""


def test_a_device_callers_line_carries_its_bed(virtual_devices, tmp_path):  # noqa: F811
    path = tmp_path / "acoustics.yaml"
    path.write_text(SCENARIO)
    truth_log = tmp_path / "truth.jsonl"
    agent = start_agent(path, truth_log)
    sc = load_scenario(path)
    try:
        run, call, caller = asyncio.run(
            place_call(
                DeviceCallOptions("caller_out", agent_in="agent_in"),
                sc,
                load_settings(),
                scenario_contract(sc),
                tmp_path / "run",
                console=None,
            )
        )
    finally:
        stop_agent(agent)
    assert caller.finished_reason == "scenario finished", caller.warnings
    assert caller.bed is not None and call.caller_track.bed is caller.bed
    result = json.loads((tmp_path / "run" / "result.json").read_text())
    packets = result["script"]["acoustics"]["packets"]
    assert packets["sent"] > 100 and 0 < packets["lost"] < 0.15 * packets["sent"], packets
    # The caller's line, the bed around it. (Its turn's start is not checked: a bed from the
    # first packet opens the turn early, the open noise-floor bug tests/test_noisy_line.py names.)
    [sent] = list(call.caller_track.log)
    assert sent.end is not None
    turns = [t for t in run.result.assembly.turns if t.speaker == "caller"]
    assert len(turns) == 1 and abs(turns[0].end_ms - sent.end_ms) < 120, (turns, sent)
    wav, rate = sf.read(tmp_path / "run" / "caller.wav", dtype="float64")
    ms = rate // 1000
    start, end = round(sent.start_ms) * ms, round(sent.end_ms or 0) * ms
    before = wav[200 * ms : start - 50 * ms]  # after the call's start, before the line
    after = wav[end + 300 * ms : end + 1300 * ms]
    assert before.size > 500 * ms and after.size == 1000 * ms
    bed_power = float(np.mean(np.concatenate([before, after]) ** 2))
    speech_power = float(np.mean(wav[start:end] ** 2)) - bed_power
    assert bed_power > 1e-6  # heard: a plain device caller sends digital silence here
    snr = 10 * np.log10(speech_power / bed_power)
    print(f"device caller channel: SNR {snr:.2f} dB (asked {SNR_DB:g}), packets {packets}")
    assert abs(snr - SNR_DB) < 1.5, snr  # the packets lost take a little of the speech
