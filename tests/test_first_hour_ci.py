"""A newcomer's path from an empty folder to a CI gate, through the real CLI, as the README
says: its minimal scenario and suite written down, the stock pipecat bot called, the call kept as
a fixture, a bench, a baseline pinned; then the bot made slower and the README's CI steps run:
bench records the failing task (the step passes), the gate fails naming it, with JUnit per task
(its time and why). Also: `fixture add` keeps the run's true WER reference (or says WER is not
measured, never scoring the ASR against its own transcript)."""

from __future__ import annotations

import json
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.conftest import ROOT

CALL = ROOT / "recordings" / "refund-call.wav"
REFERENCE = ROOT / "recordings" / "refund-call.reference.json"

# The CI steps on a suite of recordings (the README's, with this suite and baseline): bench
# records failing tasks without failing the step, then the baseline pinned.
BENCH = "turnscope bench {suite} -o out/bench.json --no-fail"
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
    with its reference (``known``), and its first 20 s replayed without one (``unknown``: the
    same recording twice would be refused as the same call added twice)."""
    import soundfile as sf

    root = tmp_path_factory.mktemp("newcomer")
    audio, rate = sf.read(CALL, dtype="int16")
    sf.write(root / "start.wav", audio[: 20 * rate], rate, subtype="PCM_16")
    bare = root / "runs" / "bare"
    proc = run_exe_module("replay", str(root / "start.wav"), "-q", "-o", str(bare))
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
    bench, gate = _steps(run_exe_module, cwd, (BENCH, PIN), suite=suite["path"], baseline=baseline)
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


def test_bench_fails_its_step_without_no_fail_and_records_with_it(suite, run_exe_module):
    """The same failing suite: bench exits 1 on its own, 0 with --no-fail (the gate judges)."""
    data = json.loads(suite["path"].read_text())
    for t in data["tasks"]:
        t["budgets"] = {"max_latency_ms": 100}  # every reply is now too slow for its budget
    tight = suite["path"].with_name("tight.json")
    tight.write_text(json.dumps(data))
    cwd = suite["root"] / "tight"
    cwd.mkdir()
    alone = run_exe_module("bench", str(tight), "--use-reference", "-o", "a.json", cwd=cwd)
    assert alone.returncode == 1, alone.stdout + alone.stderr
    kept = run_exe_module(
        "bench", str(tight), "--use-reference", "-o", "b.json", "--no-fail", cwd=cwd
    )
    assert kept.returncode == 0 and "recorded (--no-fail)" in kept.stdout, kept.stdout


# --- the newcomer, from the README alone -------------------------------------------------------

SECTION = ("## Your own agent", "## One suite in CI")


def readme_section() -> tuple[str, str, list[str]]:
    """The README's minimal scenario (YAML), suite (JSON) and commands, as written there."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index(SECTION[0]) : text.index(SECTION[1])]
    blocks = dict(re.findall(r"```(yaml|json)\n(.*?)```", section, flags=re.S))
    commands = [
        line.strip() for line in section.splitlines() if line.startswith("    .venv/bin/turnscope ")
    ]
    return blocks["yaml"], blocks["json"], commands


def as_user(command: str, agent: str, cwd: Path, timeout: float = 300):
    """One README command run in ``cwd`` with the agent's URL for $AGENT."""
    import subprocess

    from tests.conftest import turnscope_exe

    args = shlex.split(command.replace("$AGENT", agent))
    assert args[0] == ".venv/bin/turnscope", command
    return subprocess.run(
        [*turnscope_exe(), *args[1:]], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def test_a_newcomer_from_an_empty_folder_to_a_gate_that_names_the_slower_task(tmp_path):
    from tests.interop.pipecat import pipecat_bot

    scenario, suite, commands = readme_section()
    check, call, add, bench, pin, ci_bench, ci_gate = commands
    assert "--no-fail" in ci_bench and "--junit" in ci_gate
    home = tmp_path / "mine"
    home.mkdir()
    (home / "my-call.yaml").write_text(scenario)
    (home / "my_suite.json").write_text(suite)
    done = as_user(check, "", home)  # no agent yet
    shown = " ".join(done.stdout.split())
    assert done.returncode == 0 and "500 ms after the agent's turn ends" in shown, done
    said = {}
    with pipecat_bot(tmp_path / "bot", latency_ms=300) as bot:  # the agent as it ships today
        for command in (call, add, bench, pin):
            done = as_user(command, bot.url, home)
            assert done.returncode == 0, (command, done.stdout, done.stderr, bot.log_tail())
            said[command] = done.stdout
    tasks = [t["id"] for t in json.loads((home / "my_suite.json").read_text())["tasks"]]
    assert tasks == ["my-call", "first"]
    pinned = json.loads((home / "baseline.scorecard.json").read_text())
    verdicts = {t["task_id"]: t["verdict"] for t in pinned["tasks"]}
    assert verdicts == {"my-call": "pass", "first": "pass"}, said[bench]  # void: says why
    # a change makes the agent 2.2 s slower to answer; CI runs the README's last two lines
    with pipecat_bot(tmp_path / "bot-slow", latency_ms=2500) as bot:
        done = as_user(ci_bench, bot.url, home)
    assert done.returncode == 0, (done.stdout, done.stderr)  # recorded, the step passes
    gate = as_user(ci_gate, "", home)
    said = " ".join(gate.stdout.split())
    assert gate.returncode == 1, said
    assert "failed task(s): my-call" in said and "task first" not in said, said
    card = json.loads((home / "out" / "bench.scorecard.json").read_text())
    slow = next(t for t in card["tasks"] if t["task_id"] == "my-call")
    if slow["verdict"] == "void":  # a machine too busy to pace the caller: said, never a pass
        assert "the machine was too busy" in slow["note"], slow["note"]
        why = "void in this run (degraded call"
    else:
        why = "outside the 2000 ms latency budget"
        assert "FAIL task my-call (conversational): verdict fail" in said, said
        assert "worse than its baseline" in said, said
    assert why in said, said
    junit = ET.parse(home / "out" / "junit.xml").getroot()
    cases = {
        c.get("name"): c for c in junit.iter("testcase") if c.get("classname") == "turnscope.task"
    }
    assert set(cases) == {"my-call", "first"}
    failure = cases["my-call"].find("failure")
    assert failure is not None and why in failure.get("message"), failure
    assert cases["first"].find("failure") is None  # the recording replays as it was
    assert float(cases["my-call"].get("time")) > 5.0  # the live call's own duration
    assert 0.0 < float(cases["first"].get("time")) < float(cases["my-call"].get("time"))
