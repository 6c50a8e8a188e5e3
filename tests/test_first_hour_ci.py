"""A newcomer's path from captured runs to a CI gate, through the real CLI: `fixture add` keeps
the run's true WER reference (or says WER is not measured, never scoring the ASR against its own
transcript), and the README's CI steps (bench, then gate) fail naming the failing task, with
junit.xml written, with or without a baseline."""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT

CALL = ROOT / "recordings" / "refund-call.wav"
REFERENCE = ROOT / "recordings" / "refund-call.reference.json"

# The README's CI workflow steps (its `run:` lines), the suite and baseline made local. The
# recipe the README should carry (the lead places it): bench records failing tasks without
# failing the step (--no-fail), the gate fails the job naming them and writes junit.xml.
CI_STEPS = (
    "turnscope bench {suite} -o out/bench.json --no-fail",
    "turnscope gate out/bench.scorecard.json --baseline {baseline} --junit out/junit.xml",
)
PIN = "turnscope gate out/bench.scorecard.json --baseline {baseline} --update-baseline"

SUITE = {
    "kind": "agent-learning.bench-suite.v1",
    "control": "voice",
    "modality": "voice",
    "name": "my_agent",
    "version": "1",
    "description": "captured calls of my agent",
    "tasks": [],
}


def _steps(run_exe, cwd: Path, steps, **names) -> list:
    cwd.mkdir(parents=True, exist_ok=True)
    done = []
    for step in steps:
        args = shlex.split(step.format(**{k: str(v) for k, v in names.items()}))
        assert args[0] == "turnscope"
        done.append(run_exe(*args[1:], cwd=cwd, timeout=600))
    return done


@pytest.fixture(scope="module")
def suite(tmp_path_factory, sample_bundle, run_exe_module) -> dict:
    """A suite of two fixtures added with `turnscope fixture add`: the sample call replayed
    with its reference (``known``), and replayed without one (``unknown``)."""
    root = tmp_path_factory.mktemp("newcomer")
    bare = root / "runs" / "bare"
    proc = run_exe_module("replay", str(CALL), "-q", "-o", str(bare))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    path = root / "suite.json"
    path.write_text(json.dumps(SUITE))
    said = {}
    for tid, bundle, tags in (("known", sample_bundle, "acoustic"), ("unknown", bare, "speaker")):
        proc = run_exe_module(
            "fixture", "add", str(bundle), "--suite", str(path), "--tags", tags, "--id", tid
        )
        assert proc.returncode == 0, proc.stdout + proc.stderr
        said[tid] = " ".join(proc.stdout.split())
    return {"path": path, "said": said, "root": root}


@pytest.fixture(scope="module")
def run_exe_module():
    import subprocess

    from tests.conftest import turnscope_exe

    def run(*args: str, cwd: Path | None = None, timeout: float = 300):
        return subprocess.run(
            [*turnscope_exe(), *args], cwd=cwd or ROOT, capture_output=True, text=True,
            timeout=timeout,
        )  # fmt: skip

    return run


def test_fixture_add_keeps_the_true_reference_or_says_wer_is_not_measured(suite, sample_bundle):
    data = json.loads(suite["path"].read_text())
    tasks = {t["id"]: t for t in data["tasks"]}
    known, unknown = tasks["known"]["fixture"], tasks["unknown"]["fixture"]
    ref = json.loads((suite["path"].parent / known["references"]).read_text())
    assert ref == json.loads(REFERENCE.read_text())  # the --reference the call was replayed with
    assert "WER reference" in suite["said"]["known"]
    assert "references" not in unknown and unknown["wer"] is False
    said = suite["said"]["unknown"]
    assert "no WER reference" in said and "not measured" in said and "--reference" in said


@pytest.fixture(scope="module")
def pinned(suite, run_exe_module) -> dict:
    """The README's steps on the suite as captured (every task passes), the baseline pinned."""
    cwd = suite["root"] / "ci-1"
    baseline = suite["root"] / "baseline.scorecard.json"
    bench, gate = _steps(
        run_exe_module, cwd, (*CI_STEPS[:1], PIN), suite=suite["path"], baseline=baseline
    )
    assert bench.returncode == 0, bench.stdout + bench.stderr
    assert gate.returncode == 0 and baseline.exists(), gate.stdout + gate.stderr
    card = json.loads((cwd / "out" / "bench.scorecard.json").read_text())
    html = (cwd / "out" / "bench.scorecard.html").read_text()
    return {"card": card, "bench": bench, "baseline": baseline, "html": html}


def test_the_scorecard_reads_wer_not_measured_for_the_fixture_without_a_reference(
    pinned, sample_bundle
):
    tasks = {t["task_id"]: t for t in pinned["card"]["tasks"]}
    assert {t["verdict"] for t in tasks.values()} == {"pass"}
    scored = json.loads((sample_bundle / "result.json").read_text())["wer"]["overall"]["wer"]
    assert tasks["known"]["dims"]["wer"] == pytest.approx(scored, abs=0.05)
    assert "wer" not in tasks["unknown"]["dims"]  # not 0.0
    assert "wer" not in pinned["card"]["tags"]["speaker"]
    assert "not measured" in pinned["html"]


def test_the_readme_ci_steps_fail_naming_the_task_that_fails(suite, pinned, run_exe_module):
    data = json.loads(suite["path"].read_text())
    for t in data["tasks"]:
        if t["id"] == "unknown":
            t["budgets"] = {"max_latency_ms": 100}  # the agent is now too slow for its budget
    suite["path"].write_text(json.dumps(data))
    cwd = suite["root"] / "ci-2"
    bench, gate = _steps(
        run_exe_module, cwd, CI_STEPS, suite=suite["path"], baseline=pinned["baseline"]
    )
    assert bench.returncode == 0, bench.stdout + bench.stderr  # recorded, the step passes
    said = " ".join(gate.stdout.split())
    assert gate.returncode == 1, said
    assert "FAIL task unknown" in said and "failed task(s): unknown" in said
    assert "task known" not in said
    junit = ET.parse(cwd / "out" / "junit.xml").getroot()
    cases = {(c.get("classname"), c.get("name")): c for c in junit.iter("testcase")}
    assert cases[("turnscope.task", "unknown")].find("failure") is not None
    assert cases[("turnscope.task", "known")].find("failure") is None
    # without a baseline the task fails the gate too, named
    alone = run_exe_module("gate", "out/bench.scorecard.json", cwd=cwd)
    assert alone.returncode == 1 and "FAIL task unknown" in " ".join(alone.stdout.split())
    # and bench alone, without --no-fail, still says the suite failed (exit 1)
    again = run_exe_module(
        "bench", str(suite["path"]), "-o", "out/b.json", "--runs", "again", "-q", cwd=cwd
    )
    assert again.returncode == 1, again.stdout + again.stderr
