"""Two channels that hold one recording (a mono mix given as both parties, one channel a delayed
copy of the other) are never scored as a call: the run is degraded with a typed code, its
verdict is ``error`` (not scored), and the replay says why in one line naming the file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT
from turnscope.asr.audio_checks import AudioChecks, ChannelsAlike, channels_alike

CALL = ROOT / "recordings" / "refund-call.wav"


@pytest.fixture(scope="module")
def call() -> tuple[np.ndarray, np.ndarray]:
    audio, rate = sf.read(CALL, dtype="float32")
    assert rate == 16000
    return audio[:, 0], audio[:, 1]


def _delayed(x: np.ndarray, ms: float) -> np.ndarray:
    n = int(ms * 16)
    return np.concatenate([np.zeros(n, dtype=x.dtype), x[: len(x) - n]])


def _alike(caller: np.ndarray, agent: np.ndarray):
    checks = []
    for name, x in (("caller", caller), ("agent", agent)):
        c = AudioChecks(name)
        pcm = np.clip(x * 32767, -32768, 32767).astype(np.int16)
        for k in range(0, len(pcm), 320):
            c.add(k, pcm[k : k + 320])
        checks.append(c)
    return channels_alike(*checks)


def test_two_parties_are_apart_and_every_copy_is_caught(call):
    caller, agent = call
    mix = 0.5 * (caller + agent)
    assert _alike(caller, agent) is None
    # the agent's channel with the caller's echo in it (-10 dB, 40 ms late) is still a call
    assert _alike(caller, agent + 0.316 * _delayed(caller, 40)) is None
    same = _alike(mix, mix)
    assert same is not None and same.code is ChannelsAlike.SAME_AUDIO
    for ms in (10, 40, 100):
        copy = _alike(mix, _delayed(mix, ms))
        assert copy is not None and copy.correlation > 0.95
        assert abs(copy.lag_ms - ms) <= 10, copy
        assert copy.code is (ChannelsAlike.SAME_AUDIO if ms <= 10 else ChannelsAlike.DELAYED_COPY)


def test_a_stereo_file_of_one_mix_is_not_scored(call, tmp_path, run_exe):
    caller, agent = call
    mix = 0.5 * (caller + agent)
    wav = tmp_path / "mono-export.wav"
    sf.write(wav, np.stack([mix, mix], axis=1), 16000, subtype="PCM_16")
    out = tmp_path / "run"
    proc = run_exe("replay", str(wav), "-q", "-o", str(out))
    said = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 4, said
    assert "not scored" in said and str(wav) in said and "own channel" in said
    assert "0.000" not in said  # no score card of a call that was not one
    result = json.loads((out / "result.json").read_text())
    assert result["verdict"] == "error" and "not scored" in result["error"]
    assert result["source"]["details"]["channels_alike"]["code"] == ChannelsAlike.SAME_AUDIO.value
    assert result["degraded"] and result["verifier"] == {}
    assert "ERROR" in (out / "report.html").read_text()
    suite = tmp_path / "suite.json"
    suite.write_text((ROOT / "configs" / "suites" / "voice_starter.json").read_text())
    add = run_exe("fixture", "add", str(out), "--suite", str(suite), "--tags", "acoustic")
    assert add.returncode == 2 and "not scored" in add.stderr  # no fixture of a non-call
    assert not (tmp_path / "fixtures").exists()


@pytest.mark.parametrize("delay_ms", [0, 40])
def test_one_file_twice_or_a_delayed_copy_is_not_scored(call, tmp_path, delay_ms):
    import turnscope

    caller, agent = call
    mix = 0.5 * (caller + agent)
    first = tmp_path / "first.wav"
    sf.write(first, mix, 16000, subtype="PCM_16")
    second = first
    if delay_ms:
        second = tmp_path / "second.wav"
        sf.write(second, _delayed(mix, delay_ms), 16000, subtype="PCM_16")
    run = turnscope.replay(caller=first, agent=second, outdir=tmp_path / "run")
    alike = run.result.channels_alike
    assert alike is not None and not run.outcome.passed
    want = ChannelsAlike.DELAYED_COPY if delay_ms else ChannelsAlike.SAME_AUDIO
    assert alike.code is want and abs(alike.lag_ms - delay_ms) <= 10
    assert any("not scored" in d for d in run.result.degraded)
    assert json.loads(Path(run.files["result"]).read_text())["verdict"] == "error"


def test_a_two_channel_call_is_scored_as_before(sample_bundle):
    result = json.loads((sample_bundle / "result.json").read_text())
    assert result["verdict"] == "pass" and "channels_alike" not in result["source"]["details"]
    assert not any("not scored" in d for d in result["degraded"])
