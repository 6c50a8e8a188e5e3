"""A suite fixture that names a recording to re-drive (issue 31.4, "a suite fixture can be such a
recording"): ``redrive: recordings/call`` runs as a live call whose caller is the recorded one
(`scenario from-recording`'s scenario, made once into the fixture cache), against the bundled
reference agent on 127.0.0.1; its bundle sets the new call beside the recorded one. A recording
that is missing, has a silent channel or the same audio on both: one line naming the task's
fixture key and the file."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.test_redrive import SCENARIO, _call
from turnscope import fixture_runner
from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.server import AgentServer
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.asr.settings import load_settings
from turnscope.errors import InputError
from turnscope.fixture_runner import run_suite_fixtures
from turnscope.scoring.suites.fixtures import check_fixtures
from turnscope.scoring.suites.suite import load_suite


def _task(task_id: str, recording: str) -> dict:
    return {
        "id": task_id,
        "budgets": {"max_latency_ms": 3000},
        "fixture": {"source": "recorded", "redrive": recording, "tags": ["conversational"]},
    }


def _suite(folder: Path, tasks: list[dict]) -> Path:
    path = folder / "suite.json"
    doc = {
        "kind": "agent-learning.bench-suite.v1",
        "control": "voice",
        "name": "redrive",
        "version": "1",
        "tasks": tasks,
    }
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory):
    root = tmp_path_factory.mktemp("suite-redrive")
    (root / "source.yaml").write_text(SCENARIO)
    agent = AgentBehaviour.from_scenario(load_scenario(root / "source.yaml"))
    recordings = root / "recordings"
    _call(load_scenario(root / "source.yaml"), agent, recordings / "call")
    voice, _ = sf.read(recordings / "call" / "agent.wav", dtype="float32")
    voice = voice[: 16000 * 5]  # the greeting: enough to tell, quick to replay
    for name, (left, right) in {
        "same.wav": (voice, voice),
        "silent.wav": (np.zeros_like(voice), voice),
    }.items():
        sf.write(recordings / name, np.stack([left, right], axis=1), 16000, subtype="PCM_16")
    path = _suite(
        root,
        [
            _task("recorded-caller", "recordings/call"),
            _task("same", "recordings/same.wav"),
            _task("silent", "recordings/silent.wav"),
        ],
    )

    async def go():
        server = AgentServer(agent)
        base = await server.start()
        try:
            return await run_suite_fixtures(
                load_suite(path),
                path,
                load_settings(),
                root / "runs",
                agent_url=base + "/api/offer",
                loopback_only=True,
            )
        finally:
            await server.stop()

    mp = pytest.MonkeyPatch()
    mp.setattr(fixture_runner, "CACHE", root / "cache")
    try:
        runs = asyncio.run(go())
    finally:
        mp.undo()
    return root, {r.scores.task_id: r for r in runs}


def test_the_recorded_caller_is_re_driven_beside_the_recorded_call(suite_run):
    root, runs = suite_run
    run = runs["recorded-caller"]
    assert run.scores.verdict in ("pass", "fail"), run.row
    assert run.row["evidence_class"] == "live_lane"
    [made] = list((root / "cache").glob("redrive-call-*"))
    assert (made / "scenario.yaml").is_file() and (made / "recorded" / "result.json").is_file()
    bundle = root / "runs" / "recorded-caller"
    result = json.loads((bundle / "result.json").read_text())
    assert Path(result["script"]["recorded"]["bundle"]) == (made / "recorded").resolve()
    turns = json.loads((bundle / "transcript.json").read_text())["turns"]
    assert sum(t["speaker"] == "caller" for t in turns) == 3, turns
    page = (bundle / "report.html").read_text()
    assert 'id="redrive"' in page and "What the agent said" in page


@pytest.mark.parametrize(
    ("task", "said"),
    [("same", "both channels hold the same audio"), ("silent", "no speech on the caller channel")],
)
def test_a_recording_that_holds_no_call_is_one_line_naming_the_fixture(suite_run, task, said):
    _, runs = suite_run
    run = runs[task]
    reason = run.scores.note
    assert run.scores.verdict == "void", run.row
    assert reason.startswith(f"task {task!r} fixture redrive 'recordings/{task}.wav': "), reason
    assert said in reason and "\n" not in reason


def test_a_missing_recording_is_one_line_naming_the_fixture(tmp_path):
    path = _suite(tmp_path, [_task("gone", "recordings/nope.wav")])
    with pytest.raises(InputError) as err:
        check_fixtures(load_suite(path), path)
    msg = str(err.value)
    assert "task 'gone' fixture: redrive recording 'recordings/nope.wav' does not exist" in msg
    assert msg.startswith(str(path)) and "\n" not in msg


def test_a_right_channel_caller_is_re_driven_from_its_channel(suite_run):
    """``caller_channel: right``: the recording's right channel is the caller re-driven, and
    it is a cache entry of its own (the left-channel reading of the same file is another)."""
    from turnscope.redrive import fixture_scenario

    root, _ = suite_run
    caller, _ = sf.read(root / "recordings" / "call" / "caller.wav", dtype="float32")
    agent, _ = sf.read(root / "recordings" / "call" / "agent.wav", dtype="float32")
    n = min(caller.size, agent.size)
    path = root / "recordings" / "swapped.wav"
    sf.write(path, np.stack([agent[:n], caller[:n]], axis=1), 16000, subtype="PCM_16")
    made = fixture_scenario("task 'r' fixture", "swapped.wav", path, load_settings(),
                            root / "cache", "right")  # fmt: skip
    scenario = load_scenario(made)
    assert sum(line.caller is not None for line in scenario.script) == 3
    assert made.parent.name.startswith("redrive-swapped-")
    said = [line.caller for line in scenario.script if line.caller is not None]
    # Read the other way round it is another cache entry, whose "caller" is the agent's words.
    other = fixture_scenario("task 'r' fixture", "swapped.wav", path, load_settings(),
                             root / "cache", "left")  # fmt: skip
    assert other.parent != made.parent
    assert [line.caller for line in load_scenario(other).script if line.caller] != said


def test_a_silent_caller_channel_names_the_fixtures_key_not_the_flag(suite_run):
    _, runs = suite_run
    reason = runs["silent"].scores.note
    assert "the fixture's caller_channel: right" in reason and "--caller-channel" not in reason


def test_caller_channel_belongs_to_a_recording(tmp_path):
    path = _suite(
        tmp_path,
        [{"id": "t", "fixture": {"source": "synthetic", "synth": {"scenario": "s.yaml"},
                                 "caller_channel": "right", "tags": ["acoustic"]}}],
    )  # fmt: skip
    (tmp_path / "s.yaml").write_text(SCENARIO)
    with pytest.raises(InputError) as err:
        check_fixtures(load_suite(path), path)
    msg = str(err.value)
    assert "caller_channel picks a recording's channel" in msg and "\n" not in msg
