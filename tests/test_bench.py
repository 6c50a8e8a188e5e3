"""run_bench: rows, voids, aggregate, honesty and the contract's error messages."""

from __future__ import annotations

import copy
import json

import pytest

from tests.conftest import STARTER
from turnscope.errors import InputError
from turnscope.scoring import BenchError, run_bench

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
