"""Bad input a new user met (issue nu31): each is one line naming the file or key and the fix,
exit 2, never a traceback and never an empty output folder left behind."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import soundfile as sf

NOWHERE = "http://127.0.0.1:9/api/offer"  # never reached: every task fails before its call

CALLER_LINES = """\
name: bad
script:
  - agent: Hello, how can I help?
  - caller: I would like a refund for my order.
"""


def _scenario(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def _bench_suite(folder: Path, fixtures: list[dict]) -> Path:
    tasks = [{"id": f"t{i}", "fixture": {**fx, "tags": ["conversational"]}}
             for i, fx in enumerate(fixtures)]  # fmt: skip
    doc = {"kind": "agent-learning.bench-suite.v1", "control": "voice", "name": "bad",
           "version": "1", "tasks": tasks}  # fmt: skip
    path = folder / "suite.json"
    path.write_text(json.dumps(doc))
    return path


def _bad_fixtures(folder: Path) -> list[dict]:
    """A live scenario with an unknown voice, a mono recording to re-drive, a synth recipe
    whose scenario's SNR is out of range: each the task's own bad input."""
    voice = CALLER_LINES.replace("script:", "caller:\n  voice: piper:nope\nscript:")
    snr = CALLER_LINES.replace(
        "script:", "caller:\n  acoustics: {noise: street, snr_db: -50}\nscript:"
    )
    sf.write(folder / "mono.wav", np.zeros(16000, np.float32), 16000)
    return [
        {"source": "synthetic", "audio": str(_scenario(folder, "voice.yaml", voice))},
        {"source": "recorded", "redrive": "mono.wav"},
        {"source": "synthetic", "synth": {"scenario": str(_scenario(folder, "snr.yaml", snr))}},
    ]


def test_a_suite_void_only_for_bad_input_is_bad_input(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    suite = _bench_suite(tmp_path, _bad_fixtures(tmp_path))
    code, _, err = cli("bench", str(suite), "--agent", NOWHERE, "-q", "--no-fail")
    assert code == 2, err
    warned = [x for x in err.splitlines() if x.startswith("turnscope: warning: task")]
    assert len(warned) == 3, err
    assert "caller.voice" in warned[0] and "mono.wav" in warned[1] and "snr_db" in warned[2]
    assert err.strip().splitlines()[-1].startswith("turnscope: error: every task is void for bad")


def test_a_suite_void_for_other_causes_too_still_exits_1(cli, tmp_path, monkeypatch):
    """One task void for a call that could not be set up (no agent at --agent: not its own bad
    input): the suite's verdict, 1. (No --agent at all is bad input: the flag is missing.)"""
    monkeypatch.chdir(tmp_path)
    live = _scenario(tmp_path, "fine.yaml", CALLER_LINES)
    snr = _bad_fixtures(tmp_path)[2]
    suite = _bench_suite(tmp_path, [{"source": "synthetic", "audio": str(live)}, snr])
    code, out, err = cli("bench", str(suite), "--agent", NOWHERE, "-q")
    assert code == 1, err
    assert "every task is void: nothing was scored" in out + err


def _tone(path: Path, rate: int = 16000, channels: int = 1, level: float = 0.3) -> Path:
    t = np.arange(rate) / rate
    x = (level * np.sin(2 * np.pi * 220 * t)).astype(np.float32)
    sf.write(path, np.stack([x] * channels, axis=1) if channels > 1 else x, rate)
    return path


def test_a_recording_under_8_khz_is_refused_for_re_driving(cli, tmp_path):
    """As a noise file under 8 kHz is (one rule: capture/file/health.rate_problem)."""
    call = _tone(tmp_path / "call-4k.wav", rate=4000, channels=2)
    code, _, err = cli("scenario", "from-recording", str(call), "-o", str(tmp_path / "x"))
    assert code == 2, err
    assert err.strip() == (
        f"turnscope: error: {call}: the recording is at 4000 Hz: give one at 8000 Hz or more"
    )
    assert not (tmp_path / "x").exists()


def _clip_scenario(folder: Path, clip: Path) -> Path:
    text = CALLER_LINES + f"    audio: {clip.name}\n"
    return _scenario(folder, "clip.yaml", text)


def test_a_bad_audio_clip_names_the_scenario_the_key_and_the_fix(cli, tmp_path):
    """Silent, unreadable, under 8 kHz: refused as the scenario loads, before any folder."""
    silent = tmp_path / "silent.wav"
    sf.write(silent, np.zeros(16000, np.float32), 16000)
    garbage = tmp_path / "garbage.wav"
    garbage.write_bytes(b"not audio at all" * 64)
    slow = _tone(tmp_path / "slow.wav", rate=4000)
    for clip, said in (
        (silent, "the recording file is silent: give a recording of the line spoken"),
        (garbage, "cannot read the recording file (Format not recognised): give a WAV or FLAC"),
        (slow, "the recording is at 4000 Hz: give one at 8000 Hz or more"),
    ):
        scenario = _clip_scenario(tmp_path, clip)
        for args in (("call", NOWHERE, "--scenario"), ("synth",)):
            out = tmp_path / f"out-{args[0]}"
            code, _, err = cli(*args, str(scenario), "-o", str(out))
            assert code == 2, err
            assert f"{scenario}: script[1].audio: {clip}: {said}" in err, err
            assert "b'" not in err and len(err.strip().splitlines()) == 1, err
            assert not out.exists(), args


def test_an_unknown_noise_bed_or_room_is_unknown_not_a_missing_file(tmp_path):
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.errors import InputError

    for key, value, said in (
        ("noise", "restaurant", "unknown noise bed 'restaurant': give one of street, office, "
         "car, babble or a path to a WAV/FLAC file"),
        ("reverb", "cathedral", "unknown room 'cathedral': give one of small, office, hall or "
         "a path to a WAV/FLAC file"),
        ("noise", "cafe.wav", "no such noise file"),  # meant as a file: missing
        ("reverb", "rooms/big", "no such impulse response file"),
    ):  # fmt: skip
        text = CALLER_LINES.replace("script:", f"caller:\n  acoustics: {{{key}: {value}}}\nscript:")
        path = _scenario(tmp_path, "a.yaml", text)
        try:
            load_scenario(path)
        except InputError as exc:
            assert f"caller.acoustics.{key}: {said}" in str(exc), str(exc)
        else:
            raise AssertionError(f"{key}: {value} was accepted")


def test_rate_wpm_and_pitch_out_of_range_name_the_range_and_an_example(cli, tmp_path):
    text = CALLER_LINES.replace("script:", "caller:\n  rate_wpm: 0\n  pitch: 120\nscript:")
    path = _scenario(tmp_path, "rate.yaml", text)
    code, _, err = cli("synth", str(path), "-o", str(tmp_path / "out"))
    assert code == 2, err
    assert "caller.rate_wpm: rate_wpm is 0: give 80 to 450, e.g. 140" in err, err
    assert "caller.pitch: pitch is 120: give 0 to 99, e.g. 35" in err, err


def test_validate_given_a_scenario_says_how_a_scenario_is_checked(cli, tmp_path):
    path = _scenario(tmp_path, "my.yaml", CALLER_LINES)
    code, _, err = cli("validate", str(path))
    assert code == 2
    [line] = err.strip().splitlines()
    assert "is YAML (a scenario?): validate checks a run's bundle" in line, line
    assert f"turnscope synth {path} -o" in line and "JSON" not in line, line


def test_the_default_voice_is_not_announced_when_no_line_speaks_in_it(tmp_path):
    """A re-driven scenario's lines are all recordings: nothing speaks in the default voice."""
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.actors.caller.voices.default import default_note

    _tone(tmp_path / "line.wav")
    recorded = load_scenario(_clip_scenario(tmp_path, tmp_path / "line.wav"))
    assert default_note(recorded) is None
    assert default_note(recorded, llm=True) is not None  # an LLM caller's lines speak in it
    spoken = load_scenario(_scenario(tmp_path, "spoken.yaml", CALLER_LINES))
    assert "caller voice:" in (default_note(spoken) or "")
    # A voice given for one call that nothing speaks in: said, not silently taken.
    said = default_note(recorded, flag="--caller-voice") or ""
    assert said.startswith("--caller-voice: changes nothing: every caller line"), said
    assert default_note(spoken, flag="--caller-voice") == default_note(spoken)


def test_a_piper_voice_knows_its_espeak_ng_version_without_an_espeak_line():
    import pytest

    from turnscope.actors.caller.voices import espeak, piper
    from turnscope.actors.caller.voices.default import NEURAL, neural_installed
    from turnscope.actors.caller.voices.spec import parse_voice

    if not neural_installed():
        pytest.skip("the packaged Piper voice is not installed")
    ref = parse_voice(NEURAL)
    piper._loaded.pop(ref, None)
    espeak.version.cache_clear()  # as in a process that spoke no espeak-ng line
    phonemes = piper.load(ref).describe(None)["settings"]["phonemes"]
    assert phonemes == f"espeak-ng {espeak.version()} -v en-us" and "None" not in phonemes


def test_a_voice_line_says_a_wer_and_counts_in_the_singular():
    from turnscope.scoring.voice_wer import VoiceAcross, voice_line

    line = voice_line(VoiceAcross(voice="espeak-ng en-gb", wer=1.6, words=10, calls=1), "task")
    assert line == ("caller voice espeak-ng en-gb: the project's ASR heard it at WER 1.600 "
                    "over its 10 words in 1 task")  # fmt: skip
    assert "% " not in line and "(s)" not in line


def test_replay_given_a_bundle_folder_says_how_to_replay_it(cli, tmp_path):
    for name in ("caller.wav", "agent.wav"):
        _tone(tmp_path / name)
    code, _, err = cli("replay", str(tmp_path))
    assert code == 2 and "is a directory, expected an audio file" in err, err
    assert f"give --caller {tmp_path / 'caller.wav'} --agent {tmp_path / 'agent.wav'}" in err


def test_a_room_that_never_dies_away_is_refused_and_a_measured_one_is_not(cli, tmp_path):
    """A recording of sound given as a room (a steady tone here, 33 s of speech in the new-user
    pass) is no impulse response: one line naming the key and the fix; a decaying one loads."""
    _tone(tmp_path / "tone.wav")
    room = CALLER_LINES.replace("script:", "caller:\n  acoustics: {reverb: tone.wav}\nscript:")
    code, _, err = cli("synth", str(_scenario(tmp_path, "s.yaml", room)), "-o", str(tmp_path / "o"))
    assert code == 2 and "caller.acoustics.reverb" in err and "does not die away" in err, err
    assert "Traceback" not in err and not (tmp_path / "o").exists()
    t = np.arange(8000) / 16000
    decay = np.random.default_rng(3).standard_normal(t.size) * np.exp(-6.9 * t / 0.4)
    sf.write(tmp_path / "room.wav", (0.5 * decay / np.abs(decay).max()).astype(np.float32), 16000)
    ok = CALLER_LINES.replace("script:", "caller:\n  acoustics: {reverb: room.wav}\nscript:")
    code, _, err = cli("synth", str(_scenario(tmp_path, "ok.yaml", ok)), "-o", str(tmp_path / "k"))
    assert code == 0, err


def test_a_synth_seed_without_noise_is_one_line(cli, tmp_path):
    """``--seed`` seeds only the noise ``--snr-db`` adds: alone it would change nothing."""
    code, _, err = cli("synth", "refund-call", "-o", str(tmp_path / "out"), "--seed", "3")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--seed seeds the noise --snr-db adds" in err and not (tmp_path / "out").exists()


def test_validate_given_a_json_that_is_no_manifest_is_one_line(cli, tmp_path):
    """A suite (or any JSON with no manifest keys) given to validate is bad input, exit 2, not
    the schema's five problems and exit 1 as if a bundle were damaged."""
    suite = tmp_path / "my-suite.json"
    suite.write_text('{"kind": "agent-learning.bench-suite.v1", "tasks": []}')
    code, out, err = cli("validate", str(suite))
    assert code == 2 and not out, (out, err)
    [line] = err.strip().splitlines()
    assert "my-suite.json: is not a bundle's manifest" in line, line
    assert "give the output folder of turnscope replay, call or demo" in line, line


def test_a_settings_file_names_every_misspelt_key_and_what_it_likely_meant(cli, tmp_path):
    """Both problems at once (it said the first "and 1 more problem"), each with the key it
    likely meant, before anything runs."""
    settings = tmp_path / "s.yaml"
    settings.write_text("asr:\n  modle: tiny.en\nvad:\n  agressiveness: 2\naggressiveness: 2\n")
    wav = Path(__file__).resolve().parents[1] / "recordings" / "refund-call.wav"
    code, _, err = cli("replay", str(wav), "--settings", str(settings), "-o", str(tmp_path / "o"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "3 problems: " in err and "more problem" not in err, err
    assert "aggressiveness: Extra inputs are not permitted (remove it, or move it under vad)" in err
    assert (
        "asr.modle: Extra inputs are not permitted (remove it, or fix its spelling: 'model'?)"
        in err
    )
    assert "vad.agressiveness: " in err and "spelling: 'aggressiveness'?)" in err
    assert not (tmp_path / "o").exists()


def test_the_reference_agent_given_a_scenario_without_agent_lines_says_so(cli, tmp_path):
    """A script of the caller's lines alone (for one's own agent) given to the reference agent:
    one line naming the file and the fix (it was an internal error, a pydantic trace)."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\nscript:\n  - caller: Hi, what are your opening hours?\n")
    for args in (["demo", "-o", str(tmp_path / "d")], ["agent", "--port", "0"]):
        code, _, err = cli(*args, "--scenario", str(mine))
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{mine}: has no agent line: the reference agent speaks" in err, err
        assert "turnscope call URL --scenario FILE" in err, err
    assert not (tmp_path / "d").exists()
