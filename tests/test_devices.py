"""Sound-device calls on real virtual devices (a headless PulseAudio with two null sinks): the
device list, calibration, a full device call against the device-mode reference agent checked
against the agent's own log, a device that disappears mid-call, bad device input, and the stream
clock's handling of PortAudio's unreliable times. These run in CI; they never skip."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import ROOT, turnscope_exe
from turnscope.actors.caller.scenario_contract import scenario_contract
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.asr.settings import load_settings
from turnscope.capture.device import io as device_io
from turnscope.capture.device import pulse as device_pulse
from turnscope.capture.device.call import UNCALIBRATED, DeviceCallOptions
from turnscope.capture.device.clock import StreamClock
from turnscope.live_call import place_call
from turnscope.scoring.evidence.validate import validate_bundle

SCENARIO = """
name: device-refund
task:
  budgets: {max_latency_ms: 1500}
  required_content: [refund]
caller: {voice: en-us, timeout_s: 40, hangup_after_ms: 500}
agent: {voice: en-gb, latency_ms: 800, yield_ms: 250}
script:
  - caller: I would like a refund for my order please.
    at_ms: 300
  - agent: Sure. Refunds take thirty days from the day we get the item back.
  - caller: wait
    barge_in_ms: 1200
  - agent: Yes, go ahead.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""

SETUP = "./scripts/setup.sh --dev (installs pulseaudio and libasound2-plugins, starts the devices)"


@pytest.fixture(scope="module")
def virtual_devices():
    """The project's virtual devices: reused if running, else started and stopped afterwards."""
    if not shutil.which("pulseaudio"):
        pytest.fail(f"PulseAudio is not installed; run {SETUP}")
    devices = device_pulse.start()
    before = os.environ.get("ALSA_CONFIG_PATH")
    os.environ["ALSA_CONFIG_PATH"] = devices.env()["ALSA_CONFIG_PATH"]
    device_io.portaudio()  # (re)reads the device list with this configuration
    yield devices
    if before is None:
        os.environ.pop("ALSA_CONFIG_PATH", None)
    else:
        os.environ["ALSA_CONFIG_PATH"] = before
    if devices.started:
        device_pulse.stop(devices.directory)


@pytest.fixture(scope="module")
def scenario(tmp_path_factory):
    path = tmp_path_factory.mktemp("sc") / "device.yaml"
    path.write_text(SCENARIO)
    return path


def start_agent(
    scenario: Path, truth: Path, hears: str = "caller_in", speaks: str = "agent_out"
) -> subprocess.Popen:
    """`turnscope agent --device` in its own process; returns once it waits for a call."""
    proc = subprocess.Popen(
        [
            *turnscope_exe(),
            *("agent", "--device", "--in", hears, "--out", speaks),
            *("--scenario", str(scenario), "--truth-log", str(truth)),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "waiting for a call" in line:
            return proc
    proc.wait(10)
    raise AssertionError("the device agent did not start:\n" + "".join(lines))


def stop_agent(proc: subprocess.Popen) -> str:
    proc.send_signal(signal.SIGTERM)
    rest, _ = proc.communicate(timeout=20)
    assert proc.returncode == 0, rest
    return rest


@pytest.fixture(scope="module")
def device_call(virtual_devices, scenario, tmp_path_factory):
    """One calibrated device call against the device agent (in its own process)."""
    root = tmp_path_factory.mktemp("devcall")
    truth_log = root / "truth.jsonl"
    agent = start_agent(scenario, truth_log)
    sc = load_scenario(scenario)
    try:
        run, call, caller = asyncio.run(
            place_call(
                DeviceCallOptions("caller_out", agent_in="agent_in"),
                sc,
                load_settings(),
                scenario_contract(sc),
                root / "run",
                console=None,
            )
        )
    finally:
        agent_output = stop_agent(agent)
    truths = [json.loads(line) for line in truth_log.read_text().splitlines()]
    return SimpleNamespace(
        run=run, call=call, caller=caller, truth=truths[-1], out=root / "run", log=agent_output
    )


# --- listing and calibration ----------------------------------------------------------------------


def test_devices_table_and_json(virtual_devices, cli):
    code, out, _ = cli("devices")
    assert code == 0
    for name in ("caller_out", "caller_in", "agent_out", "agent_in"):
        assert name in out
    assert "host API" in out and "default rate" in out
    code, out, _ = cli("devices", "--json")
    listed = {d["name"]: d for d in json.loads(out)}
    assert listed["caller_in"]["max_input_channels"] >= 1
    assert listed["caller_out"]["max_output_channels"] >= 1
    assert listed["caller_out"]["hostapi"] == "ALSA" and listed["caller_out"]["default_rate"] > 0
    assert all(isinstance(d["index"], int) for d in listed.values())


def test_calibrate_measures_the_loopback(virtual_devices, cli):
    code, out, err = cli("calibrate", "--out", "caller_out", "--in", "caller_in", "--json")
    assert code == 0, err
    cal = json.loads(out)
    assert cal["markers_found"] == cal["markers_played"] == 5
    assert abs(cal["correction_ms"]) < 5 and cal["spread_ms"] < 2, cal
    assert 0 < cal["round_trip_ms"] < 1000 and len(cal["round_trips_ms"]) == 5


def test_marker_is_found_to_a_fraction_of_a_sample_and_not_in_noise():
    import numpy as np

    from turnscope.capture.device.calibration import LoopbackTap, locate, marker

    rate = 48000
    mark = marker(rate)
    signal = np.random.default_rng(1).normal(0, 0.01, rate).astype(np.float32)
    at = 20_000  # the marker comes back 20,000 samples into the capture
    signal[at : at + len(mark)] += mark
    tap = LoopbackTap(rate)
    for k in range(0, rate, 960):  # as 20 ms blocks whose first sample is at t = 10 + k / rate
        tap(SimpleNamespace(pcm=signal[k : k + 960, None], t=10.0 + k / rate, arrived=0.0))
    found = locate(tap, 10.0 + at / rate - 0.05)
    assert found is not None and abs(found[0] - (10.0 + at / rate)) < 0.2 / rate
    noise = LoopbackTap(rate)
    noise(SimpleNamespace(pcm=signal[:15_000, None], t=10.0, arrived=0.0))
    assert locate(noise, 10.1) is None
    assert (
        mark.size == round(rate * 0.04) and np.abs(np.fft.rfft(mark))[: 9000 * 40 // 1000].max() < 1
    )


# --- a full device call ---------------------------------------------------------------------------


def _sent(truth: dict, origin: float) -> list[tuple[float, float]]:
    return [
        ((u["start_monotonic"] - origin) * 1000, (u["end_monotonic"] - origin) * 1000)
        for u in truth["utterances"]
    ]


def test_device_call_passes_and_records_desktop_audio(device_call):
    d = device_call
    assert d.run.result.degraded == [], d.run.result.degraded
    assert d.caller.finished_reason == "scenario finished"
    assert d.run.outcome.passed, d.run.outcome.verifier
    speakers = [t.speaker for t in d.run.result.assembly.turns]
    assert speakers.count("caller") == 3 and speakers.count("agent") == 3
    assert sum(t.interrupt for t in d.run.result.assembly.turns) == 1
    result = json.loads((d.out / "result.json").read_text())
    assert result["source"]["transport"] == "desktop_audio"
    details = result["source"]["details"]
    for key in ("devices", "rates", "blocksize", "xruns", "calibration"):
        assert key in details
    assert details["calibration"]["applied"] and result["calibration"]["markers_found"] >= 3
    assert validate_bundle(d.out) == []
    assert d.truth["transport"] == "desktop_audio" and "call ended" in d.log


def xruns(truth: dict, details: dict) -> dict:
    """Over/underflows either process reported (a starved machine: the truth itself may move)."""
    found = {f"agent {k}": v["xruns"] for k, v in truth["devices"].items() if v["xruns"]}
    found.update({f"harness {k}": v for k, v in details["xruns"].items() if v})
    return found


def check_accuracy(errors: list[float], glitches: dict) -> None:
    """The issue's target always; every boundary close unless a device glitch was reported
    (a yield cut mid-word ends ~35 ms early by the endpointer's refinement: not device timing)."""
    assert statistics.median(abs(e) for e in errors) <= 30, (errors, glitches)
    if not glitches:
        assert max(abs(e) for e in errors) <= 60, errors


def test_agent_turns_agree_with_the_agents_dac_log(device_call):
    """No constant is removed: calibrated placement must be right in absolute terms."""
    d = device_call
    sent = _sent(d.truth, d.call.clock.origin)
    measured = [(t.start_ms, t.end_ms) for t in d.run.result.assembly.turns if t.speaker == "agent"]
    assert len(measured) == len(sent) == 3
    errors = [
        m - s for pair in zip(measured, sent, strict=True) for m, s in zip(*pair, strict=True)
    ]
    glitches = xruns(d.truth, d.call.info.details)
    check_accuracy(errors, glitches)
    if any(k.startswith("harness") for k in glitches):  # reported, never silent
        assert any("underflow" in w or "overflow" in w for w in d.run.result.warnings) or any(
            "overflow" in r for r in d.call.info.degraded
        )


def test_caller_turns_agree_with_what_the_agent_heard(device_call):
    """The caller channel (played, at DAC time) against an independent ear: the agent's own
    endpointer on its own input stream, in another process."""
    d = device_call
    agent_origin = d.truth["clock_origin_monotonic"]
    shift = (agent_origin - d.call.clock.origin) * 1000
    heard = [e["at_ms"] + shift for e in d.truth["events"] if e["event"] == "caller_speech_start"]
    starts = [t.start_ms for t in d.run.result.assembly.turns if t.speaker == "caller"]
    assert len(heard) == len(starts) == 3
    glitches = xruns(d.truth, d.call.info.details)
    check_accuracy([h - s for h, s in zip(heard, starts, strict=True)], glitches)
    sent = [u["start_ms"] for u in d.caller.truth()["utterances"]]
    check_accuracy([s - t for s, t in zip(starts, sent, strict=True)], glitches)


STEREO = """
name: device-stereo
caller: {voice: en-us, timeout_s: 30, hangup_after_ms: 400}
agent: {voice: en-gb, latency_ms: 800}
script:
  - caller: I would like a refund please.
    at_ms: 300
  - agent: Sure, I can help with your refund.
"""


def test_stereo_input_records_both_parties(virtual_devices, tmp_path):
    """One 2-channel input (the mixer: caller on the left, agent on the right) carries both
    parties; calibration uses its caller side."""
    path = tmp_path / "stereo.yaml"
    path.write_text(STEREO)
    truth_log = tmp_path / "truth.jsonl"
    agent = start_agent(path, truth_log, hears="mix_left_in", speaks="mix_right_out")
    sc = load_scenario(path)
    try:
        run, call, _ = asyncio.run(
            place_call(
                DeviceCallOptions("mix_left_out", stereo_in="mix_in", caller_side=0),
                sc,
                load_settings(),
                scenario_contract(sc),
                tmp_path / "run",
                console=None,
            )
        )
    finally:
        stop_agent(agent)
    assert run.result.degraded == [], run.result.degraded
    details = call.info.details
    assert details["caller_channel"] == "captured (stereo input)"
    assert details["calibration"]["applied"] and details["calibration"]["input"] == "mix_in"
    truth = json.loads(truth_log.read_text().splitlines()[-1])
    sent = _sent(truth, call.clock.origin)
    turns = run.result.assembly.turns
    assert [t.speaker for t in turns] == ["caller", "agent"], turns
    agent_turn = turns[1]
    errors = [agent_turn.start_ms - sent[0][0], agent_turn.end_ms - sent[0][1]]
    check_accuracy(errors, xruns(truth, details))
    assert "refund" in agent_turn.text.lower() and "refund" in turns[0].text.lower()


# --- failures -------------------------------------------------------------------------------------


def test_device_lost_mid_call_keeps_the_audio_and_marks_degraded(
    virtual_devices, scenario, tmp_path
):
    """A second sound server serves the agent side; it dies 2 s into the call. Uncalibrated
    too (--no-calibrate), which must also mark the evidence degraded."""
    doomed = device_pulse.start(tmp_path / "doomed", sinks=("doomed",), mixer=False)
    config = f"{virtual_devices.env()['ALSA_CONFIG_PATH']}:{doomed.asoundrc}"
    os.environ["ALSA_CONFIG_PATH"] = config
    out = tmp_path / "run"
    sc = load_scenario(scenario)

    async def kill_when_recording() -> None:
        while not (out / "caller.wav").exists() or (out / "caller.wav").stat().st_size < 70_000:
            await asyncio.sleep(0.05)
        os.kill(int((doomed.directory / "pid").read_text()), signal.SIGKILL)

    async def go():
        killer = asyncio.ensure_future(kill_when_recording())
        try:
            return await place_call(
                DeviceCallOptions("caller_out", agent_in="doomed_in", calibrate=False),
                sc,
                load_settings(),
                scenario_contract(sc),
                out,
                console=None,
            )
        finally:
            killer.cancel()

    try:
        _, call, _ = asyncio.run(go())
    finally:
        os.environ["ALSA_CONFIG_PATH"] = virtual_devices.env()["ALSA_CONFIG_PATH"]
        device_pulse.stop(doomed.directory)
    reasons = call.info.degraded
    assert any("--agent-in 'doomed_in' stopped" in r and "unplugged" in r for r in reasons), reasons
    assert any(r.startswith(UNCALIBRATED) and "--no-calibrate" in r for r in reasons), reasons
    result = json.loads((out / "result.json").read_text())
    assert result["source"]["transport"] == "desktop_audio" and len(result["degraded"]) >= 2
    assert result["source"]["details"]["calibration"] == {
        "applied": False,
        "reason": "--no-calibrate",
    }
    assert (out / "caller.wav").stat().st_size > 60_000  # what was captured is kept
    assert (out / "agent.wav").stat().st_size > 60_000
    report = json.loads((out / "live_continuity_report.json").read_text())
    assert report["status"] == "degraded"
    assert any(UNCALIBRATED in c for c in report["caveats"])


@pytest.fixture
def extra_pcms(virtual_devices, tmp_path):
    """A playback-only PCM (no input channels), for the channel check."""
    conf = tmp_path / "asoundrc"
    conf.write_text('pcm.speaker_only { type asym; playback.pcm "caller_out" }\n')
    os.environ["ALSA_CONFIG_PATH"] = f"{virtual_devices.env()['ALSA_CONFIG_PATH']}:{conf}"
    yield
    os.environ["ALSA_CONFIG_PATH"] = virtual_devices.env()["ALSA_CONFIG_PATH"]


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (
            ["--caller-out", "no_such_device", "--agent-in", "agent_in"],
            "'no_such_device': no sound",
        ),
        (["--caller-out", "99", "--agent-in", "agent_in"], "no sound device with index 99"),
        (
            ["--caller-out", "caller_out", "--agent-in", "speaker_only"],
            "0 input channels, 1 needed",
        ),
        (
            ["--caller-out", "caller_out", "--stereo-in", "speaker_only"],
            "0 input channels, 2 needed",
        ),
        (["--caller-out", "caller_out", "--agent-in", "agent_in", "--rate", "3"], "3 Hz is not"),
        (["--caller-out", "caller_out"], "exactly one of --agent-in"),
        (["--agent-in", "agent_in"], "needs --caller-out"),
    ],
)
def test_bad_device_input_is_one_clear_line(
    extra_pcms, scenario, tmp_path, cli, args, needle, monkeypatch
):
    monkeypatch.chdir(tmp_path)  # without -o: a runs/device-... folder would be made here
    new = tmp_path / "new"
    for output in (["-o", str(new / "call")], []):
        code, _, err = cli("call", "--device", *args, "--scenario", str(scenario), "-q", *output)
        assert code == 2, err
        assert needle in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
        # the folders made for a call that never started are gone (-o's, runs/ and its own)
        assert not new.exists() and not (tmp_path / "runs").exists(), output


def test_device_options_need_device_and_no_url(scenario, cli):
    code, _, err = cli("call", "http://127.0.0.1:9/x", "--device", "--scenario", str(scenario))
    assert code == 2 and "takes no URL" in err
    code, _, err = cli(
        "call", "http://127.0.0.1:9/x", "--agent-in", "x", "--scenario", str(scenario)
    )
    assert code == 2 and "need --device" in err
    code, _, err = cli("call", "http://127.0.0.1:9/x", "--caller-side", "right",
                       "--scenario", str(scenario))  # fmt: skip
    assert code == 2 and "--caller-side ... need --device" in err, err  # was ignored
    code, _, err = cli("agent", "--device", "--in", "caller_in")
    assert code == 2 and "--device needs --in DEV and --out DEV" in err


def test_no_portaudio_is_one_clear_line(monkeypatch, cli):
    import importlib

    real = importlib.import_module

    def fake(name, *a, **k):
        if name == "sounddevice":
            raise OSError("PortAudio library not found")
        return real(name, *a, **k)

    monkeypatch.setattr(device_io.importlib, "import_module", fake)
    code, _, err = cli("devices")
    assert code == 2 and "libportaudio2" in err and len(err.strip().splitlines()) == 1


# --- the stream clock (no devices) ----------------------------------------------------------------

RATE = 48000
BLOCK = 960


def feed(clock: StreamClock, blocks: range, *, ahead: float, start: float = 100.0, jump=None):
    """Callbacks every 20 ms whose block plays ``ahead`` after PortAudio's 'now'."""
    out = []
    for k in blocks:
        now = start + k * BLOCK / RATE
        true_time = now + ahead + (jump(k) if jump else 0.0)
        out.append(clock.observe(k * BLOCK, true_time, now, now))
    return out


def test_clock_ignores_impossible_delays_and_priming_bursts():
    clock = StreamClock(RATE)
    clock.set_offset(0.0)
    clock.set_bounds("output", BLOCK / RATE, 0.08)
    # A priming burst: three callbacks at once that agree with each other but not with time.
    for k in range(3):
        clock.observe(k * BLOCK, 50.0 + 0.1 + k * BLOCK / RATE, 50.0, 50.0)
    assert clock.anchor is None
    # PulseAudio's first reports: 0-30 ms ahead on an 80 ms buffer. Impossible: ignored.
    feed(clock, range(3, 40), ahead=0.007)
    assert clock.anchor is None and clock.implausible >= 37
    feed(clock, range(40, 60), ahead=0.120)
    assert clock.anchor is not None
    assert abs(clock.anchor + 40 * BLOCK / RATE - (100.0 + 40 * BLOCK / RATE + 0.120)) < 1e-6


def test_a_clock_that_never_settles_says_why():
    clock = StreamClock(RATE)
    clock.set_offset(0.0)
    feed(clock, range(0, 4), ahead=0.1)
    assert clock.unsettled(100.1) == "4 usable stream times"
    feed(clock, range(4, 40), ahead=0.1, jump=lambda k: 0.005 * (k % 2))  # 5 ms of jitter
    assert clock.anchor is None
    why = clock.unsettled(100.8)
    assert "never anchored: its last 6 times 5.0 ms apart" in why and "1.00x" in why, why
    feed(clock, range(40, 50), ahead=0.1)
    assert clock.unsettled(101.2) == "re-anchored 0 times, the last 0.30 s ago"


def test_a_clock_whose_times_keep_jittering_anchors_within_the_wider_band_and_says_so():
    clock = StreamClock(RATE)
    clock.set_offset(0.0)
    feed(clock, range(0, 90), ahead=0.1, jump=lambda k: 0.008 * (k % 2))  # 8 ms apart, 1.8 s
    assert clock.anchor is None
    feed(clock, range(90, 110), ahead=0.1, jump=lambda k: 0.008 * (k % 2))  # past 2 s
    assert clock.anchor is not None and clock.relaxed
    assert abs(clock.anchor - (100.0 + 0.1 + 0.004)) <= 0.004 + 1e-9
    assert clock.to_dict()["first_anchor_agreed_within_ms"] == 12
    feed(clock, range(110, 160), ahead=0.1, jump=lambda k: 0.020 * (k % 2))  # 20 ms: never
    fresh = StreamClock(RATE)
    fresh.set_offset(0.0)
    feed(fresh, range(0, 150), ahead=0.1, jump=lambda k: 0.020 * (k % 2))
    assert fresh.anchor is None


def test_clock_follows_xruns_fast_and_excursions_never():
    clock = StreamClock(RATE)
    clock.set_offset(0.0)
    feed(clock, range(0, 20), ahead=0.1)
    anchor, run = clock.anchor, clock.run
    # A 30 ms excursion of the reported times for 0.8 s, then back: not followed.
    feed(clock, range(20, 60), ahead=0.13)
    feed(clock, range(60, 200), ahead=0.1)
    assert clock.anchor == anchor and clock.run == run and clock.max_drift_ms >= 29
    # An underflow that really delayed the samples by 40 ms: followed within ten callbacks.
    clock.forget()
    feed(clock, range(200, 212), ahead=0.14)
    assert clock.run == run + 1 and abs(clock.anchor - anchor - 0.04) < 1e-3
    assert clock.reanchors[-1]["after"] == "xrun"
    # An unexplained move that holds for two seconds is followed too.
    feed(clock, range(212, 330), ahead=0.16)
    assert clock.run == run + 2 and clock.reanchors[-1]["after"] == "held"
    # And what was logged meanwhile is re-timed from where each move started.
    assert abs(clock.time_of(205 * BLOCK) - (100.0 + 205 * BLOCK / RATE + 0.14)) < 1e-3
    assert abs(clock.time_of(250 * BLOCK) - (100.0 + 250 * BLOCK / RATE + 0.16)) < 1e-3
    assert abs(clock.time_of(100 * BLOCK) - (100.0 + 100 * BLOCK / RATE + 0.10)) < 1e-3


def test_virtual_devices_start_is_idempotent_and_stop_only_what_it_started(tmp_path):
    first = device_pulse.start(tmp_path / "pa", sinks=("solo",), mixer=False)
    try:
        again = device_pulse.start(tmp_path / "pa", sinks=("solo",))  # adds the mixer
        assert first.started and not again.started
        text = first.asoundrc.read_text()
        assert "pcm.solo_out" in text and "pcm.solo_in" in text and "pcm.mix_in" in text
        (tmp_path / "other").mkdir()
        assert device_pulse.stop(tmp_path / "other") is False  # nothing of ours there
    finally:
        assert device_pulse.stop(tmp_path / "pa") is True
    assert not device_pulse.answering(tmp_path / "pa")
    assert sys.executable and time.monotonic()
