"""Fixture suites, per-tag scorecards and the CI gate."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET

import pytest
import yaml

from tests.conftest import ROOT
from turnscope.scoring.suites.gate import gate, junit_xml
from turnscope.scoring.suites.scorecard import TaskScores, outcome_dimensions, scorecard

TRANSCRIPT_SUITE = ROOT / "configs" / "suites" / "voice_regression_transcripts.json"
TRANSCRIPT_BASELINE = ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json"
AUDIO_SUITE = ROOT / "configs" / "suites" / "voice_regression.json"
AUDIO_BASELINE = ROOT / "configs" / "baselines" / "voice_regression.scorecard.json"


def card(rows):
    return scorecard([TaskScores(tid, tags, verdict, dims) for tid, tags, verdict, dims in rows])


GOOD = {"latency": 1.0, "turn_taking": 1.0, "barge_in": 1.0, "content": 1.0, "wer": 0.2}


def test_scorecard_slices_per_tag_and_keeps_voids_apart():
    c = card(
        [
            ("a", ["acoustic"], "pass", GOOD),
            ("b", ["acoustic", "speaker"], "fail", {**GOOD, "latency": 0.5}),
            ("c", ["speaker"], "void", {}),
        ]
    )
    assert c["tags"]["acoustic"]["latency"] == 0.75
    assert c["tags"]["speaker"]["latency"] == 0.5  # the void task pulls nothing down
    assert c["counts"]["speaker"] == {"tasks": 2, "scored": 1, "void": 1, "passed": 0}
    assert c["counts"]["all"]["scored"] == 2


def test_gate_names_the_dimension_and_tag_that_moved_both_ways():
    base = card(
        [("a", ["acoustic"], "pass", GOOD), ("b", ["speaker"], "pass", {**GOOD, "content": 0.8})]
    )
    cand = card(
        [
            ("a", ["acoustic"], "pass", {**GOOD, "content": 0.6}),
            ("b", ["speaker"], "pass", {**GOOD, "content": 1.0}),
        ]
    )
    result = gate(cand, base, tolerance=0.05)
    moved = {(c.tag, c.dim): round(c.delta, 3) for c in result.moved()}
    assert moved[("acoustic", "content")] == -0.4 and moved[("speaker", "content")] == 0.2
    failed = {(c.tag, c.dim) for c in result.cells if not c.passed}
    assert ("acoustic", "content") in failed and ("speaker", "content") not in failed
    assert not result.passed
    # a drop within the tolerance passes, but is said as a drop (the terminal: yellow, not green)
    slight = gate(card([("a", ["acoustic"], "pass", {**GOOD, "wer": 0.23})]),
                  card([("a", ["acoustic"], "pass", GOOD)]))  # fmt: skip
    cell = next(c for c in slight.cells if (c.tag, c.dim) == ("acoustic", "wer"))
    assert cell.passed and cell.worse
    assert cell.change() == "wer on acoustic: 0.200 -> 0.230 (+0.030) worse, within the tolerance"
    better = next(c for c in result.cells if (c.tag, c.dim) == ("speaker", "content"))
    assert not better.worse and better.change() == "content on speaker: 0.800 -> 1.000 (+0.200)"


def test_tolerance_floor_and_wer_direction():
    base = card([("a", ["acoustic"], "pass", GOOD)])
    slightly = card([("a", ["acoustic"], "pass", {**GOOD, "latency": 0.97, "wer": 0.23})])
    assert gate(slightly, base, tolerance=0.05).passed
    worse_wer = card([("a", ["acoustic"], "pass", {**GOOD, "wer": 0.4})])
    r = gate(worse_wer, base, tolerance=0.05)
    assert {(c.tag, c.dim) for c in r.cells if not c.passed} == {
        ("acoustic", "wer"),
        ("all", "wer"),
    }
    below_floor = card([("a", ["acoustic"], "fail", {**GOOD, "barge_in": 0.5})])
    r = gate(below_floor, None)
    assert any("below its floor 0.750" in f for c in r.cells for f in c.failures)


def test_all_void_says_so_instead_of_passing():
    r = gate(card([("a", ["acoustic"], "void", {}), ("b", ["speaker"], "void", {})]), None)
    assert not r.passed and "every task is void" in r.problems[0]


def test_junit_has_a_case_per_dimension_and_tag():
    base = card([("a", ["acoustic"], "pass", GOOD)])
    cand = card([("a", ["acoustic"], "fail", {**GOOD, "latency": 0.0})])
    xml = ET.fromstring(junit_xml(gate(cand, base)))
    cases = {(c.get("classname"), c.get("name")): c for c in xml.iter("testcase")}
    assert ("turnscope.acoustic", "latency") in cases and ("turnscope.all", "wer") in cases
    assert cases[("turnscope.acoustic", "latency")].find("failure") is not None
    assert cases[("turnscope.acoustic", "content")].find("failure") is None


def test_a_task_that_moved_against_its_baseline_fails_by_name():
    """Ten tasks on one tag; one slips from 1.0 to 0.8 (above its floor, the tag's mean moves
    0.02, inside the tolerance): the gate fails naming that task, from the pinned baseline."""
    from turnscope.scoring.suites.gate import baseline_of

    rows = [(f"t{i}", ["acoustic"], "pass", GOOD) for i in range(10)]
    base = json.loads(json.dumps(baseline_of(card(rows))))  # as pinned on disk
    assert [t["task_id"] for t in base["tasks"]] == [f"t{i}" for i in range(10)]
    assert set(base["tasks"][0]) == {"task_id", "tags", "verdict", "dims"}
    rows[3] = ("t3", ["acoustic"], "pass", {**GOOD, "latency": 0.8})
    result = gate(card(rows), base, tolerance=0.05)
    assert all(c.passed for c in result.cells)  # no mean moved past the tolerance
    assert [t.task_id for t in result.failed_tasks()] == ["t3"]
    (failure,) = result.failed_tasks()[0].failures
    assert failure.startswith("latency 1.000 -> 0.800 (-0.200), worse than its baseline")
    assert [(m.dim, m.baseline, m.value) for m in result.tasks[3].moved] == [("latency", 1.0, 0.8)]
    # a task the baseline scored that is void now (its call degraded): no evidence, no pass
    lost = scorecard(
        [
            TaskScores("t0", ["acoustic"], "void", {}, note="degraded call: audio went out late"),
            *(TaskScores(f"t{i}", ["acoustic"], "pass", GOOD) for i in range(1, 10)),
        ]
    )
    (check,) = gate(lost, base).failed_tasks()
    assert check.task_id == "t0" and check.failures == (
        "void in this run (degraded call: audio went out late), scored in the baseline: nothing "
        "shows it still passes",
    )
    assert gate(lost, None).passed  # without a baseline a void task is counted apart, as ever
    # a task gone from the run is said, not silently dropped
    assert any("task t9: in the baseline but not in this run" in p
               for p in gate(card(rows[:9]), base).problems)  # fmt: skip


def test_junit_has_a_case_per_task_with_its_time_and_failure_reason():
    tasks = [
        TaskScores("quick", ["acoustic"], "pass", GOOD, duration_s=1.25),
        TaskScores("slow", ["acoustic"], "fail", {**GOOD, "latency": 0.0}, duration_s=12.5,
                   reason="2 of 2 replies outside the 1500 ms latency budget (slowest 2610 ms)"),
    ]  # fmt: skip
    xml = ET.fromstring(junit_xml(gate(scorecard(tasks), None)))
    cases = {
        c.get("name"): c for c in xml.iter("testcase") if c.get("classname") == "turnscope.task"
    }
    assert cases["quick"].get("time") == "1.250" and cases["quick"].find("failure") is None
    assert cases["slow"].get("time") == "12.500" and xml.get("time") == "13.750"
    message = cases["slow"].find("failure").get("message")
    assert message == (
        "task slow: verdict fail; latency 0.000 below its floor 0.750 (2 of 2 replies outside "
        "the 1500 ms latency budget (slowest 2610 ms))"
    )


def test_failure_reason_reads_the_verifiers_facts():
    from turnscope.scoring.suites.why import failure_reason
    from turnscope.scoring.verifier import verifier_facts

    dialogue = [
        {"speaker": "caller", "start_ms": 0, "end_ms": 1000, "text": "hi", "interrupt": False},
        {"speaker": "agent", "start_ms": 3600, "end_ms": 4000, "text": "hello", "interrupt": False},
    ]
    facts = verifier_facts(dialogue, budgets={"max_latency_ms": 1500}, required_content=["refund"])
    assert failure_reason(facts) == (
        "1 of 1 replies outside the 1500 ms latency budget (slowest 2600 ms); never said 'refund'"
    )


def test_failure_reason_names_a_reply_that_began_before_the_caller_ended():
    from turnscope.scoring.suites.why import failure_reason
    from turnscope.scoring.verifier import verifier_facts

    def turn(speaker: str, start: int, end: int) -> dict:
        return {"speaker": speaker, "start_ms": start, "end_ms": end, "text": "refund",
                "interrupt": False}  # fmt: skip

    early = [turn("caller", 0, 1000), turn("agent", 680, 1500)]  # 320 ms before its end
    facts = verifier_facts(early, budgets={"max_latency_ms": 1200}, required_content=["refund"])
    assert failure_reason(facts).startswith(  # then the overlap itself, as turn-taking
        "1 of 1 replies outside the 1200 ms latency budget (1 began 320 ms before the caller's "
        "turn ended); "
    )
    both = [*early, turn("caller", 2000, 3000), turn("agent", 5000, 5500)]
    facts = verifier_facts(both, budgets={"max_latency_ms": 1200}, required_content=["refund"])
    assert failure_reason(facts).startswith(
        "2 of 2 replies outside the 1200 ms latency budget (slowest 2000 ms; 1 began 320 ms "
        "before the caller's turn ended); "
    )


def test_outcome_dimensions_follow_seed_002():
    expect = {
        "intent": "order",
        "fields": {"size": "large", "qty": 2},
        "missing": ["address"],
        "clarify_expected": True,
    }
    right = {
        "intent": "order",
        "fields": {"size": "large", "qty": 2},
        "missing": ["address"],
        "did_clarify": True,
        "handed_off": False,
    }
    assert outcome_dimensions(expect, right) == {
        "accuracy": 1.0,
        "clarification": 1.0,
        "containment": 1.0,
        "graceful_failure": 1.0,
    }
    wrong = {
        "intent": "refund",
        "fields": {},
        "missing": [],
        "did_clarify": False,
        "handed_off": True,
        "failed_safely": True,
    }
    assert outcome_dimensions(expect, wrong) == {
        "accuracy": 0.0,
        "clarification": 0.0,
        "containment": 0.0,
        "graceful_failure": 1.0,
    }


def test_shipped_transcript_suite_passes_its_gate(tmp_path, cli):
    """What CI runs on every change: the fast suite against its pinned baseline."""
    code, out, _ = cli(
        "bench",
        str(TRANSCRIPT_SUITE),
        "-o",
        str(tmp_path / "r.json"),
        "--runs",
        str(tmp_path / "runs"),
        "-q",
    )
    assert code == 0, out
    card_ = json.loads((tmp_path / "r.scorecard.json").read_text())
    tags = set(card_["tags"]) - {"all"}
    assert tags == {
        "acoustic",
        "speaker",
        "language",
        "complexity",
        "conversational",
        "adversarial",
    }
    code, out, _ = cli(
        "gate",
        str(tmp_path / "r.scorecard.json"),
        "--baseline",
        str(TRANSCRIPT_BASELINE),
        "--junit",
        str(tmp_path / "j.xml"),
    )
    assert code == 0 and "gate passed" in out
    assert ET.parse(tmp_path / "j.xml").getroot().get("failures") == "0"
    assert (tmp_path / "r.scorecard.html").read_text().count("<tr>") == len(card_["tags"]) + 1
    # a baseline pinned for another suite: one line naming the baseline and the fix
    other = json.loads(TRANSCRIPT_BASELINE.read_text())
    other["suite"] = {"name": "someone_elses_suite", "version": "1"}
    (tmp_path / "other.json").write_text(json.dumps(other))
    code, _, err = cli("gate", str(tmp_path / "r.scorecard.json"), "--baseline",
                       str(tmp_path / "other.json"))  # fmt: skip
    assert code == 2 and "other.json" in err and "someone_elses_suite" in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_shipped_audio_suite_passes_its_gate_as_the_docs_ci_job_runs_it(tmp_path, cli):
    """The gate page's CI job on an unchanged checkout: the audio suite's fixtures rendered and
    replayed with the bundled model, gated against the pinned baseline. Before, it failed: the
    baseline predated the tags a caller's voice implies (speaker: 2 tasks then, 5 now) and the
    phone-band tasks' WER (0.51-0.53 with tiny.en) sat over the default ceiling 0.5. On an AMD
    EPYC machine it failed again: tiny.en heard "the link" as "below" there, and another task's
    WER was 0.1 higher; the baseline now keeps the worse values of both machines (--keep-worst)
    and order-phone is held to a word every kernel there heard ("driver")."""
    code, out, _ = cli("bench", str(AUDIO_SUITE), "-o", str(tmp_path / "r.json"), "--runs",
                       str(tmp_path / "runs"), "-q", "--no-fail")  # fmt: skip
    assert code == 0, out
    code, out, _ = cli("gate", str(tmp_path / "r.scorecard.json"), "--baseline",
                       str(AUDIO_BASELINE))  # fmt: skip
    assert code == 0 and "gate passed" in out and "not compared" not in out, out
    phone = [t for t in json.loads((tmp_path / "r.scorecard.json").read_text())["tasks"]
             if t.get("floors")]  # fmt: skip
    assert {t["task_id"] for t in phone} == {"order-phone", "correction-phone"}
    # 0.46-0.53 by the CPU tiny.en's kernels run on: over the default ceiling 0.5 on some
    assert all(t["dims"]["wer"] <= t["floors"]["wer"] for t in phone), phone
    page = (tmp_path / "r.scorecard.html").read_text()  # redrawn against the baseline
    assert "order-phone wer ceiling 0.6; correction-phone wer ceiling 0.6" in page
    row = page[page.index("data-task='order-phone'") :].split("</tr>")[0]
    assert "class='fail'" not in row, row  # its WER under its own ceiling: not red


def test_a_baseline_pinned_from_two_machines_keeps_the_worse_of_each_value(tmp_path, cli):
    """Two machines' runs of one suite (Whisper's CPU kernels differ: the shipped audio suite's
    backchannel-voices WER 0.148 on one, 0.244 on another): pinned one after the other with
    --keep-worst, the baseline holds both, and a real drop on either still fails."""
    tt = {"smooth_tor": 1.0, "takeover_latency_ms": 400.0}

    def write(name, wer_a, content_b, takeover, verdict_b="pass"):
        rows = [
            TaskScores("a", ["speaker"], "pass", {**GOOD, "wer": wer_a}, turn_taking=tt),
            TaskScores("b", ["speaker"], verdict_b, {**GOOD, "content": content_b},
                       turn_taking={**tt, "takeover_latency_ms": takeover}),
        ]  # fmt: skip
        (tmp_path / name).write_text(json.dumps(scorecard(rows)))
        return str(tmp_path / name)

    one, two = write("one.json", 0.15, 1.0, 380.0), write("two.json", 0.24, 0.9, 360.0)
    base = str(tmp_path / "base.json")
    code, _, err = cli("gate", one, "--baseline", base, "--update-baseline", "--keep-worst")
    assert code == 2 and "base.json" in err and "without --keep-worst" in err, err
    assert cli("gate", one, "--baseline", base, "--update-baseline")[0] == 0
    code, out, _ = cli("gate", two, "--baseline", base)
    assert code == 1 and "FAIL task a" in out, out  # pinned on one machine: the other fails
    # A timing metric moves in ms, and a longer one is worse (it printed "1649.000 -> 1659.000
    # (+10.000)", in green, as if better)
    assert "takeover_latency_ms on speaker: 390 ms -> 380 ms (-10 ms)\n" in out, out
    other = str(tmp_path / "other.json")
    assert cli("gate", two, "--baseline", other, "--update-baseline")[0] == 0
    code, out, _ = cli("gate", one, "--baseline", other)
    assert "takeover_latency_ms on speaker: 380 ms -> 390 ms (+10 ms) worse, within" in out, out
    code, out, _ = cli("gate", two, "--baseline", base, "--update-baseline", "--keep-worst")
    assert code == 0 and "the worse of each value kept" in out, out
    pinned = json.loads((tmp_path / "base.json").read_text())
    tasks = {t["task_id"]: t["dims"] for t in pinned["tasks"]}
    assert tasks["a"]["wer"] == 0.24 and tasks["b"]["content"] == 0.9  # the worse, each way
    assert pinned["tags"]["speaker"]["wer"] == pytest.approx((0.24 + 0.2) / 2)
    assert pinned["turn_taking"]["speaker"]["takeover_latency_ms"] == pytest.approx(390.0)
    for run in (one, two):
        assert cli("gate", run, "--baseline", base)[0] == 0
    worse = write("three.json", 0.35, 1.0, 380.0)
    code, out, _ = cli("gate", worse, "--baseline", base)
    assert code == 1 and "FAIL task a" in out and "0.240 -> 0.350" in out, out
    code, _, err = cli("gate", one, "--keep-worst")
    assert code == 2 and "--keep-worst needs --update-baseline" in err, err


def test_a_fixtures_own_floor_holds_its_task_over_the_defaults():
    phone = {"wer": 0.6}
    rows = [
        TaskScores("clean", ["acoustic"], "pass", GOOD),
        TaskScores("phone", ["acoustic"], "pass", {**GOOD, "wer": 0.55}, floors=phone),
        TaskScores("phone2", ["acoustic"], "pass", {**GOOD, "wer": 0.65}, floors=phone),
    ]
    result = gate(scorecard(rows), None)
    assert [t.task_id for t in result.failed_tasks()] == ["phone2"]
    assert "wer 0.650 above its ceiling 0.600" in result.failed_tasks()[0].detail()
    # --floor sets the rest; a task's own floor stays its own
    assert not gate(scorecard(rows[:2]), None, floors={"wer": 0.3}).failed_tasks()
    assert gate(scorecard(rows[:2]), None, floors={"wer": 0.1}).failed_tasks()[0].task_id == "clean"


def test_a_tag_that_holds_other_tasks_than_in_the_baseline_is_not_compared_by_its_mean():
    def run(b_tags, b_wer=0.2):
        b = TaskScores("b", b_tags, "pass", {**GOOD, "wer": b_wer})
        return scorecard([TaskScores("a", ["speaker"], "pass", GOOD), b])

    base = run(["acoustic"])
    assert not gate(run(["acoustic"], 0.4), base).passed  # the same tasks: held to the baseline
    # b's caller voice now implies speaker too: another set of tasks, its mean no comparison
    result = gate(run(["acoustic", "speaker"]), base)
    assert result.passed and set(result.not_compared) == {"speaker"}
    assert "added b" in result.not_compared["speaker"]
    assert "still held to its own pinned values" in result.not_compared["speaker"]
    assert all(c.baseline is None for c in result.cells if c.tag == "speaker")
    result = gate(run(["acoustic", "speaker"], 0.4), base)
    assert [t.task_id for t in result.failed_tasks()] == ["b"]  # its own WER rose: named
    # a baseline from before baselines kept their tasks: compared by how many
    old = {k: v for k, v in base.items() if k != "tasks"}
    why = gate(run(["acoustic", "speaker"]), old).not_compared["speaker"]
    assert "2 task(s) now, 1 in the baseline" in why and "re-pin it" in why


SCENARIO = """
name: {name}
task: {{budgets: {{max_latency_ms: 1200}}, required_content: [refund]}}
caller: {{voice: en-us}}
agent: {{voice: en-gb, latency_ms: {latency}}}
script:
  - caller: Hello, I would like a refund please.
    at_ms: 300
  - agent: Sure, your refund is on its way today.
  - caller: Thank you very much.
  - agent: You are welcome, goodbye.
"""


def _suite(folder, latencies):
    tasks = []
    for tag, latency in latencies.items():
        (folder / f"{tag}.yaml").write_text(SCENARIO.format(name=tag, latency=latency))
        tasks.append(
            {
                "id": f"call-{tag}",
                "budgets": {"max_latency_ms": 1200},
                "required_content": ["refund"],
                "fixture": {
                    "source": "synthetic",
                    "tags": [tag],
                    "synth": {"scenario": f"{tag}.yaml"},
                },
            }
        )
    suite = {
        "kind": "agent-learning.bench-suite.v1",
        "control": "voice",
        "modality": "voice",
        "name": "mini",
        "version": "1",
        "tasks": tasks,
    }
    (folder / "suite.json").write_text(json.dumps(suite))
    return folder / "suite.json"


def test_agent_800ms_slower_on_one_tag_fails_the_gate_for_that_tag_alone(tmp_path, cli):
    base_dir, cand_dir = tmp_path / "base", tmp_path / "cand"
    base_dir.mkdir()
    cand_dir.mkdir()
    base_suite = _suite(base_dir, {"acoustic": 500, "speaker": 500})
    cand_suite = _suite(cand_dir, {"acoustic": 500 + 800, "speaker": 500})
    for suite, out in ((base_suite, "b"), (cand_suite, "c")):
        _, _, err = cli(
            "bench",
            str(suite),
            "-o",
            str(tmp_path / f"{out}.json"),
            "--runs",
            str(tmp_path / f"runs-{out}"),
            "-q",
        )
        assert "void" not in err, err
    code, _, _ = cli(
        "gate",
        str(tmp_path / "b.scorecard.json"),
        "--baseline",
        str(tmp_path / "baseline.json"),
        "--update-baseline",
    )
    assert code == 0
    code, out, _ = cli(
        "gate", str(tmp_path / "c.scorecard.json"), "--baseline", str(tmp_path / "baseline.json")
    )
    assert code == 1
    failing = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert any(line.startswith("FAIL latency on acoustic") for line in failing), out
    assert not any("on speaker" in line for line in failing), out
    assert "latency on acoustic: 1.000 -> 0.000" in out


def test_fixture_add_turns_a_captured_call_into_a_fixture(tmp_path, cli):
    run = tmp_path / "run"
    code, _, _ = cli("replay", str(ROOT / "recordings" / "refund-call.wav"), "-q", "-o", str(run))
    suite = tmp_path / "suite.json"
    shutil.copy(ROOT / "configs" / "suites" / "voice_starter.json", suite)
    code, out, _ = cli(
        "fixture",
        "add",
        str(run),
        "--suite",
        str(suite),
        "--tags",
        "acoustic,conversational",
        "--id",
        "missed-call",
    )
    assert code == 0, out
    task = json.loads(suite.read_text())["tasks"][-1]
    assert task["id"] == "missed-call" and task["fixture"]["tags"] == ["acoustic", "conversational"]
    assert (tmp_path / "fixtures" / "missed-call.flac").exists()
    code, out, _ = cli(
        "bench", str(suite), "-o", str(tmp_path / "r.json"), "--runs", str(tmp_path / "runs"), "-q"
    )
    rows = json.loads((tmp_path / "r.json").read_text())["per_task"]
    assert [r["verdict"] for r in rows] == ["void", "pass"]  # the starter task has no fixture
    code, _, err = cli("fixture", "add", str(run), "--suite", str(suite), "--tags", "loud")
    assert code == 2 and "unknown tag" in err
    # the same call added twice (under another id): one line naming the suite, the task and fix
    code, _, err = cli(
        "fixture", "add", str(run), "--suite", str(suite), "--tags", "acoustic", "--id", "again"
    )
    said = " ".join(err.split())
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"{suite}: already holds this call, as task 'missed-call'" in said, said
    assert "remove it from the suite" in said
    assert [t["id"] for t in json.loads(suite.read_text())["tasks"]][-1] == "missed-call"


@pytest.mark.parametrize(
    "bad",
    [
        {"source": "recorded", "tags": ["acoustic"]},
        {"source": "recorded", "audio": "x.wav", "tags": []},
        {"source": "recorded", "audio": "nope.wav", "tags": ["acoustic"]},
        {"source": "live", "audio": "x.wav", "tags": ["acoustic"]},
    ],
)
def test_bad_fixtures_are_bad_input(tmp_path, cli, bad):
    (tmp_path / "x.wav").write_bytes(b"")
    suite = {
        "kind": "agent-learning.bench-suite.v1",
        "control": "voice",
        "name": "s",
        "tasks": [{"id": "t", "fixture": bad}],
    }
    (tmp_path / "s.json").write_text(json.dumps(suite))
    code, _, err = cli("bench", str(tmp_path / "s.json"), "-q")
    assert code == 2 and "fixture" in err and len(err.strip().splitlines()) == 1
    assert yaml  # (yaml is used by the scenario files the suites reference)
