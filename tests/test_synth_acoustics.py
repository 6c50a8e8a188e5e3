"""`turnscope synth` carries a scenario's ``caller.acoustics`` (issue 31.2 on the synthetic
corpus): the caller's channel is what a live call with that scenario sends (the same bed, at the
SNR asked, its samples those of the live caller's background loop), seeded, and the truth (what
was sent, when) is exactly that of the plain scenario; the agent's channel is untouched."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from turnscope.actors.caller import acoustics
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.actors.caller.synth import render, write_call

PLAIN = """
name: synth-acoustics
caller: {voice: en-us}
agent: {voice: en-gb, latency_ms: 700}
script:
  - agent: Hello, thanks for calling. How can I help?
  - caller: I would like a refund for my order please.
    after_agent_ms: 900
  - agent: Of course. What is the order number?
  - caller: It is four two seven.
    after_agent_ms: 900
"""
SNR_DB = 10.0


def _scenario(tmp_path: Path, acoustics_yaml: str | None, name: str):
    text = PLAIN
    if acoustics_yaml is not None:
        text = text.replace("caller: {voice: en-us}", f"caller: {{voice: en-us, {acoustics_yaml}}}")
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return load_scenario(path)


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("synth-acoustics")
    plain = render(_scenario(tmp, None, "plain"))
    babble = _scenario(tmp, f"acoustics: {{noise: babble, snr_db: {SNR_DB:g}, seed: 4}}", "bed")
    noisy = render(babble)
    paths = write_call(noisy, tmp / "out")
    return plain, babble, noisy, paths


def _caller_mask(call, pad: int = 0) -> np.ndarray:
    mask = np.zeros(call.caller.size, bool)
    for u in call.utterances:
        if u.speaker == "caller":
            mask[max(0, u.start - pad) : u.end + pad] = True
    return mask


def test_the_truth_is_the_plain_scenarios(calls):
    plain, _, noisy, paths = calls
    assert noisy.turns() == plain.turns() and noisy.backchannels() == plain.backchannels()
    assert [(u.start, u.end) for u in noisy.utterances] == [
        (u.start, u.end) for u in plain.utterances
    ]
    assert np.array_equal(noisy.agent, plain.agent)  # the caller's line is the caller's
    truth = json.loads(paths["truth"].read_text())
    assert truth["settings"]["acoustics"]["call"]["noise"] == "babble"
    assert "acoustics" not in plain.settings


def test_the_bed_is_heard_in_caller_wav_at_the_snr_asked(calls):
    _, scenario, noisy, paths = calls
    wav, rate = sf.read(paths["caller"], dtype="int16")
    assert rate == 16000 and wav.size == noisy.caller.size
    speech = _caller_mask(noisy)
    gaps = ~_caller_mask(noisy, pad=160)
    assert gaps.sum() > 16000  # seconds of the caller's silence: only the bed there
    bed_power = float(np.mean(wav[gaps].astype(np.float64) ** 2))
    speech_power = float(np.mean(np.round(noisy.clean_caller[speech] * 32768) ** 2))
    snr = 10 * np.log10(speech_power / bed_power)
    assert abs(snr - SNR_DB) < 1.0, snr
    # Sample for sample the live caller's background: the same loop from the call's start.
    level = round(acoustics.speech_level([noisy.clean_caller[speech]]), 6)
    loop = acoustics.bed_loop(scenario.caller.acoustics, level, 16000)
    assert loop is not None
    where = np.flatnonzero(gaps)
    diff = wav[where].astype(np.int32) - loop[where % loop.size]
    assert np.abs(diff).max() <= 2, np.abs(diff).max()  # its level from the speech as written


def test_seeded_the_same_and_another_seed_another_bed(calls, tmp_path):
    _, scenario, noisy, _ = calls
    assert np.array_equal(render(scenario).caller, noisy.caller)
    other = _scenario(tmp_path, f"acoustics: {{noise: babble, snr_db: {SNR_DB:g}, seed: 5}}", "o")
    again = render(other)
    assert again.turns() == noisy.turns() and not np.array_equal(again.caller, noisy.caller)


def test_a_room_and_a_lossy_line_keep_the_truth(tmp_path):
    plain = render(_scenario(tmp_path, None, "plain"))
    sc = _scenario(
        tmp_path, "acoustics: {reverb: office, telephone: g711, loss: 0.1, seed: 2}", "line"
    )
    call = render(sc)
    assert [(u.start, u.end) for u in call.utterances] == [
        (u.start, u.end) for u in plain.utterances
    ]
    record = call.settings["acoustics"]
    assert record["packets"]["lost"] > 0 and record["packets"]["sent"] >= call.caller.size // 320
    # The room's tail goes out after each line (outside its extent), as on a live call.
    last = max(u.end for u in call.utterances if u.speaker == "caller")
    assert np.abs(call.caller[last : last + 1600]).max() > 0


def test_a_suite_fixtures_cached_rendering_follows_its_noise_file(tmp_path, monkeypatch):
    """A synth fixture is rendered once into the cache, keyed by every file its audio is made of:
    the noise bed the scenario names, edited in place, renders again (not the stale call)."""
    from turnscope import fixture_runner
    from turnscope.actors.caller.scenario_file import files_used
    from turnscope.scoring.suites.fixtures import Fixture

    rng = np.random.default_rng(0)
    sf.write(tmp_path / "hum.wav", 0.05 * rng.standard_normal(32000), 16000, subtype="PCM_16")
    _scenario(tmp_path, "acoustics: {noise: hum.wav, snr_db: 10}", "filed")
    assert files_used(load_scenario(tmp_path / "filed.yaml")) == [(tmp_path / "hum.wav").resolve()]
    monkeypatch.setattr(fixture_runner, "CACHE", tmp_path / "cache")
    fx = Fixture.model_validate(
        {"source": "synthetic", "synth": {"scenario": "filed.yaml"}, "tags": ["acoustic"]}
    )
    suite = tmp_path / "suite.json"
    first = fixture_runner.synthesized(fx, suite)
    assert fixture_runner.synthesized(fx, suite) == first  # cached: not rendered again
    sf.write(tmp_path / "hum.wav", 0.2 * rng.standard_normal(40000), 16000, subtype="PCM_16")
    again = fixture_runner.synthesized(fx, suite)
    assert again != first and again.is_file()
    a, _ = sf.read(first, dtype="float32")
    b, _ = sf.read(again, dtype="float32")
    assert a.shape == b.shape and not np.array_equal(a, b)  # the new bed is what is heard


ROOM_LINE = """
name: room-line
caller: {{voice: en-us{call}}}
script:
  - caller: Hi, I bought a pair of headphones last week.
    acoustics: {{noise: car, snr_db: 5}}
  - agent: Sure.
"""


def _after_speech_db(call) -> np.ndarray:
    """The caller channel after its line's end, per 20 ms, in dB under the line's own level."""
    [u] = [u for u in call.utterances if u.speaker == "caller"]
    x = call.caller.astype(np.float64)
    line = np.sqrt(np.mean(x[u.start : u.end] ** 2))
    after = x[u.end : u.end + 16000].reshape(-1, 320)
    return 20 * np.log10(np.sqrt(np.mean(after**2, axis=1)) / line + 1e-12)


def test_a_lines_own_noise_in_a_room_stops_with_its_speech(tmp_path):
    """A line's noise in a room decays with the room after the speech (as the speech does); it
    does not go on at its level for the room's length, past the caller's end of turn."""
    out = {}
    for name, call in (("dry", ""), ("room", ", acoustics: {reverb: office}")):
        (tmp_path / f"{name}.yaml").write_text(ROOM_LINE.format(call=call))
        out[name] = render(load_scenario(tmp_path / f"{name}.yaml"))
    dry, room = _after_speech_db(out["dry"]), _after_speech_db(out["room"])
    assert dry.max() < -100  # no room: nothing after the line (the noise under it only)
    # In the office (RT60 0.6 s: -60 dB) the decay of speech and noise, about 10 dB per 100 ms,
    # nothing once the room's 0.72 s response is over (was: the noise at -5 dB for the whole
    # 0.72 s, the caller's turn ending 0.7 s late).
    assert room[10:].max() < -25 and room[20:].max() < -45 and room[37:].max() < -100, room
    assert [(u.start, u.end) for u in out["room"].utterances] == [
        (u.start, u.end) for u in out["dry"].utterances
    ]
