"""A suite fixture's caller voice: one live scenario called in each voice a task needs
(``fixture.caller_voice``), every voice of the scenario's caller replaced, the voice's tags
implied, recorded in each bundle and pooled per tag on the scorecard.

- the scenario as the fixture's voice makes it: the caller's voice, no line or branch voice of
  its own, an espeak-ng pitch dropped for a Piper voice, the agent untouched;
- a suite of two tasks on the same scenario file against the reference agent (a real call each,
  127.0.0.1), one in the scenario's own voice and one in `en-gb-scotland`: each bundle names
  the voice it was called in, the second task is tagged `speaker`, and the scorecard's
  `speaker` tag holds that voice alone; a third task with a voice that cannot speak is void for
  bad input, naming `fixture.caller_voice`;
- `turnscope call --caller-voice` does the same for one call; a voice that cannot speak is one
  line naming the flag, exit 2;
- caller_voice on a fixture that is no live scenario: one line saying where it belongs.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import reference_agent
from turnscope.actors.caller.scenario_file import load_scenario, voice_named
from turnscope.actors.caller.tags import fixture_tags
from turnscope.actors.caller.voices.spec import model_files, parse_voice
from turnscope.errors import InputError
from turnscope.fixture_runner import synthesized
from turnscope.scoring.suites.fixtures import parse_fixture

PLAIN = """
name: two-voices
caller: {voice: en-us, timeout_s: 60, hangup_after_ms: 800}
agent: {voice: en-gb}
script:
  - caller: Hi, I would like to check my order please.
  - agent: Sure, what is the order number?
  - caller: It is four two seven.
  - agent: Thank you, it ships tomorrow. Goodbye.
"""
VOICED = """
name: voiced
caller: {voice: en-us, pitch: 40, timeout_s: 60, hangup_after_ms: 800}
agent: {voice: en-gb}
script:
  - caller: Hi, I would like to check my order please.
  - agent: Sure, what is the order number?
  - caller: It is four two seven.
    voice: en-029
  - agent: Thank you, it ships tomorrow.
  - choose:
      - when: {says: [tomorrow]}
        caller: Great, thank you. Goodbye.
        voice: en-gb
      - caller: Sorry, goodbye.
  - agent: Goodbye.
"""


def _suite(tmp_path: Path, voices: list[str | None]) -> Path:
    (tmp_path / "two-voices.yaml").write_text(PLAIN)
    tasks = []
    for i, voice in enumerate(voices):
        fixture = {"source": "recorded", "audio": "two-voices.yaml", "tags": ["conversational"]}
        if voice is not None:
            fixture["caller_voice"] = voice
        tasks.append({"id": f"t{i}", "budgets": {"max_latency_ms": 2500}, "fixture": fixture})
    suite = {"kind": "agent-learning.bench-suite.v1", "control": "voice", "name": "voices",
             "version": "1", "tasks": tasks}  # fmt: skip
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite))
    return path


def test_the_fixtures_voice_is_the_callers_only_voice(tmp_path: Path):
    (tmp_path / "s.yaml").write_text(VOICED)
    own = load_scenario(tmp_path / "s.yaml")
    assert own.caller.pitch == 40 and own.script[2].voice == "en-029"
    sc = load_scenario(tmp_path / "s.yaml", caller_voice="piper:joe-us")
    assert sc.caller.voice == "piper:joe-us" and sc.caller.pitch is None
    caller_lines = [x for x in sc.script if x.speaker == "caller"]
    assert [x.voice for x in caller_lines] == [None, None, None]
    assert [b.voice for b in sc.script[4].choose or []] == [None, None]
    assert sc.agent == own.agent and sc.caller.timeout_s == own.caller.timeout_s
    scottish = load_scenario(tmp_path / "s.yaml", caller_voice="en-gb-scotland")
    assert scottish.caller.pitch == 40  # espeak-ng's own pitch stays with an espeak-ng voice
    with pytest.raises(InputError, match=r"^fixture\.caller_voice: unknown Piper voice 'nope'"):
        voice_named("piper:nope", tmp_path, "fixture.caller_voice")
    with pytest.raises(InputError, match=re.escape(str(tmp_path / "v" / "x.onnx"))):
        voice_named("piper:v/x.onnx", tmp_path, "fixture.caller_voice")  # the suite's folder


def test_a_suite_calls_one_scenario_in_each_fixtures_voice(tmp_path: Path, cli):
    suite = _suite(tmp_path, [None, "en-gb-scotland", "piper:nope"])
    fx = parse_fixture(json.loads(suite.read_text())["tasks"][1], suite)
    assert fixture_tags(fx, suite) == ["conversational", "speaker"]
    with reference_agent(tmp_path / "two-voices.yaml") as url:
        _, out, err = cli(
            "bench", str(suite), "--agent", url, "--loopback-only", "-q",
            "-o", str(tmp_path / "r.json"), "--runs", str(tmp_path / "runs"),
        )  # fmt: skip
        code, _, _ = cli("call", url, "--scenario", str(tmp_path / "two-voices.yaml"), "-q",
                         "--caller-voice", "en-gb-scotland", "--loopback-only",
                         "-o", str(tmp_path / "one"))  # fmt: skip
    one = json.loads((tmp_path / "one" / "result.json").read_text())["script"]["voices"]
    assert code == 0 and [(v["engine"], v["name"]) for v in one] == [
        ("espeak-ng", "en-gb-scotland")
    ], one
    named = {}
    for task in ("t0", "t1"):
        result = json.loads((tmp_path / "runs" / task / "result.json").read_text())
        assert result["script"]["not_spoken"] == [], (task, result["script"])
        named[task] = {f"{v['engine']} {v['name']}" for v in result["script"]["voices"]}
    assert named["t0"] == {"espeak-ng en-us"}
    assert named["t1"] == {"espeak-ng en-gb-scotland"}
    card = json.loads((tmp_path / "r.scorecard.json").read_text())
    dims = {t["task_id"]: t["dims"] for t in card["tasks"]}  # WER against the caller's lines
    assert dims["t0"].get("wer") is not None and dims["t1"].get("wer") is not None, dims
    assert [v["voice"] for v in card["voices"]["speaker"]] == ["espeak-ng en-gb-scotland"]
    assert {v["voice"] for v in card["voices"]["conversational"]} == named["t0"] | named["t1"]
    rows = {r["task_id"]: r for r in json.loads((tmp_path / "r.json").read_text())["per_task"]}
    assert rows["t2"]["verdict"] == "void", rows["t2"]
    assert "fixture.caller_voice: unknown Piper voice 'nope'" in rows["t2"]["error"]
    assert "fixture.caller_voice" in out + err


def test_a_call_in_a_voice_that_cannot_speak_is_one_line_naming_the_flag(tmp_path: Path, cli):
    (tmp_path / "s.yaml").write_text(PLAIN)
    code, out, err = cli("call", "http://127.0.0.1:9/api/offer", "--scenario",
                         str(tmp_path / "s.yaml"), "--caller-voice", "piper:nope",
                         "-o", str(tmp_path / "out"))  # fmt: skip
    assert code == 2 and "--caller-voice: unknown Piper voice 'nope'" in err, (out, err)
    assert "Traceback" not in out + err and not (tmp_path / "out").exists()


def test_a_suite_of_live_tasks_without_an_agent_is_bad_input(tmp_path: Path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("bench", str(_suite(tmp_path, [None])), "-o", str(tmp_path / "r.json"))
    # One line before anything runs: no table of void tasks, no runs/bench-voices-TIME.
    assert code == 2 and not out and len(err.strip().splitlines()) == 1, (out, err)
    assert "every task calls an agent live (t0), and no --agent was given" in err, err
    assert "turnscope bench " in err and "--agent http://" in err, err
    assert not (tmp_path / "runs").exists(), list(tmp_path.iterdir())
    (tmp_path / "mine").mkdir()  # a --runs folder the user made is theirs: kept
    code, out, err = cli("bench", str(tmp_path / "suite.json"), "-o", str(tmp_path / "r2.json"),
                         "--runs", str(tmp_path / "mine"))  # fmt: skip
    assert code == 2 and (tmp_path / "mine").is_dir(), (out, err)


def test_a_synth_recipes_voice_file_is_read_from_the_suites_folder(tmp_path: Path, cli):
    (tmp_path / "s.yaml").write_text(PLAIN)
    task = {"id": "syn", "fixture": {"source": "synthetic", "tags": ["speaker"],
            "synth": {"scenario": "s.yaml", "caller_voice": "piper:voices/mine.onnx"}}}  # fmt: skip
    suite = {"kind": "agent-learning.bench-suite.v1", "control": "voice", "name": "v",
             "version": "1", "tasks": [task]}  # fmt: skip
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    code, out, err = cli("bench", str(tmp_path / "suite.json"), "-o", str(tmp_path / "r.json"))
    assert code == 2, (out, err)
    assert f"synth.caller_voice: no such Piper voice file {tmp_path / 'voices' / 'mine.onnx'}" in (
        out + err
    )


def test_a_synth_recipes_voice_file_replaced_in_place_renders_again(tmp_path: Path, monkeypatch):
    """The fixture cache's key holds the recipe's own Piper voice file (its size and change
    time), not only its name: the user's voice replaced under the same name is heard."""
    monkeypatch.chdir(tmp_path)  # the cache is .turnscope/fixture-cache under the working dir
    model, config = model_files(parse_voice("piper:joe-us"))
    (tmp_path / "voices").mkdir()
    mine = tmp_path / "voices" / "mine.onnx"
    mine.symlink_to(model)
    (tmp_path / "voices" / "mine.onnx.json").symlink_to(config)
    (tmp_path / "s.yaml").write_text(
        "name: short\ncaller: {voice: en-us}\nscript:\n  - caller: Hello.\n  - agent: Hi.\n"
    )
    task = {"id": "syn", "fixture": {"source": "synthetic", "tags": ["speaker"],
            "synth": {"scenario": "s.yaml", "caller_voice": "piper:voices/mine.onnx"}}}  # fmt: skip
    fx = parse_fixture(task, tmp_path / "suite.json")
    first = synthesized(fx, tmp_path / "suite.json")
    assert synthesized(fx, tmp_path / "suite.json") == first  # rendered once, then the cache
    mine.unlink()
    shutil.copy(model, mine)  # another file under the same name (here: the same weights)
    second = synthesized(fx, tmp_path / "suite.json")
    assert second != first and second.exists()


def test_a_scenarios_piper_voices_are_keyed_by_both_their_files(tmp_path: Path, monkeypatch):
    """A voice the scenario itself names is in its files as the recipe's is: a file's ``.onnx``
    and its ``.onnx.json`` (a config edited in place renders again), a packaged voice's pair."""
    from turnscope import fixture_runner
    from turnscope.actors.caller.scenario_file import files_used

    model, config = model_files(parse_voice("piper:joe-us"))
    (tmp_path / "voices").mkdir()
    shutil.copy(model, tmp_path / "voices" / "mine.onnx")
    shutil.copy(config, tmp_path / "voices" / "mine.onnx.json")
    (tmp_path / "s.yaml").write_text(
        "name: short\ncaller: {voice: 'piper:voices/mine.onnx'}\nscript:\n"
        "  - caller: Hello.\n  - agent: Hi.\n    voice: 'piper:joe-us'\n"
    )
    mine = [tmp_path / "voices" / "mine.onnx", tmp_path / "voices" / "mine.onnx.json"]
    assert files_used(load_scenario(tmp_path / "s.yaml")) == [
        *(p.resolve() for p in mine),
        model.resolve(),
        config.resolve(),
    ]
    monkeypatch.setattr(fixture_runner, "CACHE", tmp_path / "cache")
    task = {"id": "syn", "fixture": {"source": "synthetic", "tags": ["speaker"],
            "synth": {"scenario": "s.yaml"}}}  # fmt: skip
    fx = parse_fixture(task, tmp_path / "suite.json")
    first = synthesized(fx, tmp_path / "suite.json")
    assert synthesized(fx, tmp_path / "suite.json") == first
    cfg = json.loads(mine[1].read_text())
    cfg.setdefault("inference", {})["length_scale"] = 1.3  # the same weights, spoken slower
    mine[1].write_text(json.dumps(cfg))
    assert synthesized(fx, tmp_path / "suite.json") != first


def test_caller_voice_belongs_to_a_live_scenario(tmp_path: Path):
    task = {"id": "x", "fixture": {"source": "recorded", "audio": "call.wav",
                                   "caller_voice": "en-gb", "tags": ["speaker"]}}  # fmt: skip
    (tmp_path / "call.wav").write_bytes(b"")
    with pytest.raises(InputError, match="caller_voice is the voice of a live scenario's caller"):
        parse_fixture(task, tmp_path / "suite.json")
