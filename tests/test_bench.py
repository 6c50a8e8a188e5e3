"""run_bench: rows, voids, aggregate, honesty and the contract's error messages."""

from __future__ import annotations

import copy
import json

import pytest

from tests.conftest import ROOT, STARTER
from turnscope.errors import InputError
from turnscope.scoring import BenchError, run_bench
from turnscope.scoring.contract import Contract
from turnscope.scoring.wer import channel_texts

SUITE = json.loads(STARTER.read_text())
REF = SUITE["tasks"][0]["reference_dialogue"]


def two_task_suite():
    suite = copy.deepcopy(SUITE)
    second = copy.deepcopy(suite["tasks"][0])
    second["id"] = "slow-call"
    second["budgets"] = {"max_latency_ms": 100}
    suite["tasks"].append(second)
    return suite


def test_reference_run_passes():
    result = run_bench(STARTER, control_mode="artifact_in", submission={"refund-call": REF})
    assert result["kind"] == "agent-learning.bench-result.v1"
    assert result["control_mode"] == "artifact_in"
    assert (result["dataset_name"], result["dataset_version"]) == ("voice_starter", "1")
    assert result["modalities"] == ["voice"]
    row = result["per_task"][0]
    assert list(row) == [
        "task_id",
        "modality",
        "world_kind",
        "control_mode",
        "result",
        "verdict",
        "execution_class",
        "evidence_class",
        "overclaim",
        "raw",
    ]
    assert row["verdict"] == "pass" and row["world_kind"] == "voice_telephony"
    assert row["raw"] == {
        "modality": "voice",
        "turns": 4,
        "max_latency_ms": 1200,
        "floors_met": True,
    }
    assert result["aggregate"] == {
        "count": 1,
        "passed": 1,
        "void": 0,
        "scored": 1,
        "pass_rate": 1.0,
        "mean_score": 1.0,
        "by_world_kind": {"voice_telephony": {"count": 1, "passed": 1}},
        "by_execution_class": {"executable": {"count": 1, "passed": 1}},
        "by_modality": {"voice": {"count": 1, "passed": 1}},
        "honesty": {
            "evidence_class": "captured_fixture",
            "fixture_only": True,
            "any_live": False,
            "any_overclaim": False,
        },
    }


def test_void_rows_never_count_as_failures():
    result = run_bench(two_task_suite(), submission={"refund-call": REF})
    void = result["per_task"][1]
    assert void == {
        "task_id": "slow-call",
        "modality": "voice",
        "world_kind": "voice_telephony",
        "control_mode": "artifact_in",
        "result": {
            "scalar": None,
            "components": {},
            "pass_fail": {},
            "explanation": "no transcript submitted",
        },
        "verdict": "void",
        "execution_class": "executable",
        "evidence_class": "captured_fixture",
        "overclaim": False,
        "error": "no transcript submitted",
    }
    agg = result["aggregate"]
    assert (agg["count"], agg["scored"], agg["void"], agg["passed"]) == (2, 1, 1, 1)
    assert agg["pass_rate"] == 1.0 and agg["mean_score"] == 1.0
    assert agg["by_modality"] == {"voice": {"count": 2, "passed": 1}}


def test_all_void_is_zero_not_failure():
    agg = run_bench(two_task_suite(), submission={})["aggregate"]
    assert (agg["scored"], agg["pass_rate"], agg["mean_score"]) == (0, 0.0, 0.0)


def test_empty_dialogue_is_scored_and_fails():
    row = run_bench(STARTER, submission={"refund-call": []})["per_task"][0]
    assert row["verdict"] == "fail" and row["result"]["explanation"] == "empty transcript"


def test_budget_comes_from_the_task():
    result = run_bench(two_task_suite(), submission={"refund-call": REF, "slow-call": REF})
    assert [r["verdict"] for r in result["per_task"]] == ["pass", "fail"]
    assert result["aggregate"]["pass_rate"] == 0.5
    # slow-call: both agent turns miss a 100 ms budget -> latency 0, scalar 0.75.
    assert result["per_task"][1]["result"]["scalar"] == 0.75
    assert result["aggregate"]["mean_score"] == 0.875


def test_live_lane_honesty():
    result = run_bench(STARTER, submission={"refund-call": REF}, evidence_class="live_lane")
    assert result["aggregate"]["honesty"] == {
        "evidence_class": "live_lane",
        "fixture_only": False,
        "any_live": True,
        "any_overclaim": False,
    }


def test_error_messages():
    with pytest.raises(BenchError) as exc:
        run_bench(STARTER, control_mode="push", submission={})
    assert str(exc.value) == "voice bench suites run under control_mode='artifact_in', not 'push'"
    with pytest.raises(BenchError) as exc:
        run_bench(STARTER)
    assert str(exc.value) == "voice artifact_in requires submission={task_id: dialogue}"
    with pytest.raises(BenchError, match="unknown evidence_class 'gold'"):
        run_bench(STARTER, submission={}, evidence_class="gold")


def test_suite_of_another_kind_is_input_error():
    suite = dict(SUITE, control="coding")
    with pytest.raises(InputError, match="control is 'coding'"):
        run_bench(suite, submission={})


# --- suites as typed models: every problem at once, one Budgets model, the same JSON ----------


def test_a_suite_is_typed_and_reads_back_as_the_json_on_disk():
    from turnscope.actors.caller.scenario import Budgets as ScenarioBudgets
    from turnscope.scoring.budgets import Budgets
    from turnscope.scoring.suites.suite import Suite, SuiteTask, load_suite

    suite = load_suite(STARTER)
    assert isinstance(suite, Suite) and isinstance(suite.tasks[0], SuiteTask)
    assert ScenarioBudgets is Budgets  # one model: the suite task's and the scenario's
    assert suite.tasks[0].budgets == Budgets(max_latency_ms=1200)
    assert suite.title == "voice_starter v1"

    def without_notes(value):  # keys starting with _ are notes for people, not read
        if isinstance(value, dict):
            return {k: without_notes(v) for k, v in value.items() if not k.startswith("_")}
        return [without_notes(v) for v in value] if isinstance(value, list) else value

    for path in (ROOT / "configs" / "suites").glob("*.json"):
        on_disk = without_notes(json.loads(path.read_text()))
        assert load_suite(path).model_dump(mode="json", exclude_unset=True) == on_disk, path
    # readers that still take the dict on disk read the same values by key
    task = suite["tasks"][0]
    assert task["id"] == "refund-call" and task.get("budgets") == {"max_latency_ms": 1200}
    assert task.get("fixture") is None and task["guards"]["no_gold_in_prompt"] is True


def test_every_suite_problem_is_listed_at_once(tmp_path):
    from turnscope.scoring.suites.suite import load_suite

    bad = copy.deepcopy(SUITE)
    del bad["version"]
    bad["tasks"].append(dict(bad["tasks"][0]))  # the same id twice
    bad["tasks"][0]["budgets"] = {"max_latency_ms": -5}
    bad["tasks"][0]["budget"] = {"max_latency_ms": 900}  # a misspelt key
    bad["tasks"][1]["fixture"] = {"source": "recorded", "audio": "a.wav", "tags": ["loud"]}
    bad["_comment"] = "keys starting with _ are notes"
    path = tmp_path / "s.json"
    path.write_text(json.dumps(bad))
    with pytest.raises(InputError) as exc:
        load_suite(path)
    said = str(exc.value)
    assert said.startswith(f"{path}: 5 problems: ") and "\n" not in said, said
    assert 'no "version": add one, e.g. "version": "1"' in said
    assert "tasks[0].budgets.max_latency_ms: Input should be greater than 0" in said
    assert "tasks[0].budget: Extra inputs are not permitted (remove it" in said
    assert "tasks[1].fixture.tags[0]" in said and "'loud'" in said
    assert "task id 'refund-call' appears 2 times" in said


def test_a_suite_without_a_version_is_one_line_naming_the_file_and_the_fix(tmp_path, cli):
    suite = {k: v for k, v in SUITE.items() if k != "version"}
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(suite))
    code, _, err = cli("bench", str(path), "--use-reference")
    line = " ".join(err.split())
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert line.startswith(f'turnscope: error: {path}: no "version": add one'), err


def test_fixture_files_missing_in_several_tasks_are_listed_together(tmp_path):
    from turnscope.scoring.suites.fixtures import check_fixtures
    from turnscope.scoring.suites.suite import load_suite

    suite = copy.deepcopy(SUITE)
    second = copy.deepcopy(suite["tasks"][0])
    second["id"] = "other"
    suite["tasks"].append(second)
    for i, t in enumerate(suite["tasks"]):
        t["fixture"] = {"source": "recorded", "audio": f"gone-{i}.wav", "tags": ["acoustic"]}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(suite))
    with pytest.raises(InputError) as exc:
        check_fixtures(load_suite(path), path)
    said = str(exc.value)
    assert "2 problems" in said and "gone-0.wav" in said and "gone-1.wav" in said


def test_a_recording_with_its_channels_swapped_fails_saying_so(sample_bundle):
    """The sample call as heard, and with its parties the wrong way round: the reference's
    words tell the two apart (without a reference nothing can, docs/guide/replay.md)."""
    from turnscope.scoring.channel_swap import channels_swapped
    from turnscope.scoring.contract import load_reference
    from turnscope.scoring.outcome import score_outcome

    reference = load_reference(ROOT / "recordings" / "refund-call.reference.json")
    turns = json.loads((sample_bundle / "transcript.json").read_text())["turns"]
    other = {"caller": "agent", "agent": "caller"}
    swapped = [{**t, "speaker": other[t["speaker"]]} for t in turns]
    assert channels_swapped(reference.texts, channel_texts(turns)) is None
    found = channels_swapped(reference.texts, channel_texts(swapped))
    assert found is not None and found.wer_swapped < 0.5 < 0.8 < found.wer_as_given
    outcome = score_outcome(
        swapped, Contract(reference=reference), evidence_class="captured_fixture"
    )
    assert not outcome.passed and outcome.swapped == found
    assert outcome.failures == [found.message()]
    assert "the channels look swapped" in found.message() and "--caller-channel" in found.message()
    # only the caller's words known (a scenario's lines): still told apart
    caller_only = {"caller": reference.texts["caller"]}
    assert channels_swapped(caller_only, channel_texts(swapped)) is not None
    assert channels_swapped(caller_only, channel_texts(turns)) is None


def test_the_table_fits_an_80_column_terminal_and_names_one_evidence_class_once():
    from rich.console import Console

    from turnscope.cli.bench_table import bench_table

    result = run_bench(STARTER, control_mode="artifact_in", submission={"refund-call": REF})
    console = Console(width=80, record=True, color_system=None)
    console.print(bench_table(result))
    text = console.export_text()
    # before: an evidence column wrapped 'refund-cal' / 'l' and 'captured_f' / 'ixture'
    assert "│ refund-call " in text and "evidence" not in text.splitlines()[2]
    assert (
        text.count("captured_fixture") == 1 and "\nevidence: captured_fixture (every task)" in text
    )
    mixed = copy.deepcopy(result)
    mixed["per_task"].append({**mixed["per_task"][0], "task_id": "b", "evidence_class": "live"})
    console = Console(width=120, record=True, color_system=None)
    console.print(bench_table(mixed))
    assert "evidence" in console.export_text().splitlines()[2]
