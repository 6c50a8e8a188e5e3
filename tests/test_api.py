"""The public API: every name in ``turnscope.__all__`` resolves, and the README's ten-line
script runs as written."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

import turnscope
from tests.conftest import ROOT


def test_every_public_name_resolves():
    for name in turnscope.__all__:
        assert getattr(turnscope, name) is not None, name


def test_import_turnscope_stays_light():
    code = (
        "import sys, turnscope; print(sorted(m for m in sys.modules"
        " if m.split('.')[0] in ('aiortc', 'faster_whisper', 'turnscope')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout.replace("'", '"')) == ["turnscope"]


def test_the_readme_script_runs(tmp_path):
    readme = (ROOT / "README.md").read_text()
    script = re.search(r"```python\n(# replay_and_check\.py.*?)```", readme, re.S)
    assert script, "the README's API example is missing"
    path = tmp_path / "replay_and_check.py"
    path.write_text(script.group(1))
    done = subprocess.run(
        [sys.executable, str(path), str(ROOT / "recordings" / "refund-call.wav"),
         str(tmp_path / "out")],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "verdict: pass" in done.stdout and (tmp_path / "out" / "result.json").exists()
    assert "reply latencies (ms): [" in done.stdout and "barge-in yields (ms): [" in done.stdout


def test_the_python_guide_shows_the_readmes_script_and_a_nightly_that_runs_every_night(tmp_path):
    """The guide's replay script is the README's (tested above); its nightly script runs as
    written on consecutive nights (here on the shipped transcript suite, which takes seconds):
    the first pins the baseline, the second is gated against it."""
    guide = (ROOT / "docs" / "guide" / "python.md").read_text()
    readme = (ROOT / "README.md").read_text()
    replay = r"```python\n# replay_and_check\.py.*?```"
    assert re.search(replay, guide, re.S).group(0) == re.search(replay, readme, re.S).group(0)
    nightly = re.search(r"```python\n(# nightly\.py.*?)```", guide, re.S)
    assert nightly, "the guide's nightly example is missing"
    script = tmp_path / "nightly.py"
    script.write_text(
        nightly.group(1).replace('"voice_regression"', '"voice_regression_transcripts"')
    )
    for night in (1, 2):
        done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                              timeout=300, cwd=tmp_path)  # fmt: skip
        assert done.returncode == 0, (night, done.stderr[-2000:])
        assert done.stdout.startswith("True True []"), (night, done.stdout)
    assert (tmp_path / "baseline.scorecard.json").exists()


def test_a_run_answers_a_tests_questions_as_typed_values(tmp_path):
    """Per-reply latencies, barge-in yields and the verdict as attributes of the run, the same
    numbers the verifier scored; the caller's channel named as the CLI names it."""
    import turnscope

    run = turnscope.replay(ROOT / "recordings" / "refund-call.wav", outdir=tmp_path / "a",
                           caller_channel="left")  # fmt: skip
    facts = turnscope.verifier_facts(
        run.result.assembly.dialogue(), budgets=run.outcome.verifier["raw"]
    )
    assert run.verdict == "pass" and set(run.scores) >= {"latency", "turn_taking", "barge_in"}
    assert [r.latency_ms for r in run.replies] == [g.gap_ms for g in facts.gaps]
    assert all(r.agent_said and r.within_budget for r in run.replies), run.replies
    assert len(run.barge_ins) == 1 and run.barge_ins[0].yield_ms is not None, run.barge_ins
    assert run.latency_split == [] and run.latency_split_median == {}  # no agent events given
    with pytest.raises(turnscope.InputError, match="caller_channel must be 'left' or 'right'"):
        turnscope.replay(ROOT / "recordings" / "refund-call.wav", outdir=tmp_path / "b",
                         caller_channel="middle")  # fmt: skip
