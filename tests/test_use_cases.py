"""The CLI's use cases as functions of the public API (issue 29): each runs the real parts and
returns a typed result; the CLI only renders them (its output is tested in test_cli_*)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import turnscope
from tests.conftest import ROOT, STARTER
from turnscope.errors import InputError

SUITE = {
    "kind": "agent-learning.bench-suite.v1",
    "control": "voice",
    "modality": "voice",
    "name": "kept-calls",
    "version": "1",
    "tasks": [],
}


def test_a_captured_call_kept_run_and_gated_through_the_api(sample_bundle: Path, tmp_path):
    suite = tmp_path / "kept.json"
    suite.write_text(json.dumps(SUITE))
    added = turnscope.add_fixture(sample_bundle, suite, ["acoustic"], task_id="refund")
    assert isinstance(added, turnscope.AddedFixture) and added.task_id == "refund"
    assert added.audio == tmp_path / "fixtures" / "refund.flac" and added.audio.is_file()
    assert added.reference_source is not None  # the replay's --reference, never the ASR's own
    with pytest.raises(InputError, match="already"):  # the same task, or the same call
        turnscope.add_fixture(sample_bundle, suite, ["acoustic"], task_id="refund")

    seen: list[turnscope.SuiteProgress] = []
    out = tmp_path / "out" / "bench.json"
    run = turnscope.run_suite(suite, runs=tmp_path / "runs", output=out, jobs=1,
                              progress=seen.append)  # fmt: skip
    assert isinstance(run, turnscope.SuiteRun) and run.passed, run.result["per_task"]
    assert [(p.done, p.total) for p in seen] == [(0, 1), (1, 1)]
    assert json.loads(out.read_text()) == run.result
    assert run.scorecard_path == out.with_suffix(".scorecard.json")
    assert run.scorecard_path.with_suffix(".html").is_file() and run.void() == []
    assert (tmp_path / "runs" / "refund" / "result.json").is_file()
    with pytest.raises(InputError, match="earlier run"):  # the runs-folder policy
        turnscope.run_suite(suite, runs=tmp_path / "runs")

    gated = turnscope.check_gate(run.scorecard_path, junit=tmp_path / "junit.xml")
    assert isinstance(gated, turnscope.GateRun) and gated.verdict.passed
    assert "<testsuite" in (tmp_path / "junit.xml").read_text()
    baseline = tmp_path / "baseline.scorecard.json"
    assert turnscope.pin_baseline(run.scorecard_path, baseline).moved() == []
    again = turnscope.check_gate(out, baseline=baseline)  # the bench result finds its scorecard
    assert again.verdict.passed and again.page_problem is None and again.verdict.moved() == []


def test_a_suite_scored_on_its_references_runs_nothing(tmp_path):
    scored = turnscope.score_suite(STARTER, output=tmp_path / "bench.json")
    assert isinstance(scored, turnscope.SuiteScore) and scored.passed
    assert set(scored.exercise) == {r["task_id"] for r in scored.result["per_task"]}
    with pytest.raises(InputError, match="no such transcripts directory"):
        turnscope.score_suite(STARTER, transcripts=tmp_path / "none")


def _first_lines(name: str, lines: int, folder: Path) -> Path:
    """A shipped scenario cut after its first ``lines`` script lines: the part a test needs, in
    a call a fraction as long."""
    import yaml

    doc = yaml.safe_load((ROOT / "configs" / "scenarios" / f"{name}.yaml").read_text())
    doc["script"] = doc["script"][:lines]
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False))
    return path


def test_the_demo_and_its_summary(tmp_path):
    heard: list[str] = []
    call = turnscope.demo(
        outdir=tmp_path / "demo",
        # quick-exchange up to "When will it arrive?" and its answer (the whole is a 56 s call)
        scenario=_first_lines("quick-exchange", 7, tmp_path),
        on_listening=heard.append,
    )
    assert isinstance(call, turnscope.CallRun) and heard[0].startswith("http://127.0.0.1:")
    assert (tmp_path / "demo" / "agent_truth.json").is_file() and call.script is not None
    summary = turnscope.call_summary(call.run, call.script)
    assert isinstance(summary, turnscope.CallSummary)
    assert summary.turns == len(call.run.result.assembly.turns) >= 2 and summary.seconds > 1
    planned = {e.kind: e for e in summary.exercised}
    assert all(e.planned >= 1 for e in planned.values())
    # quick-exchange's agent says "One moment please." and, 1.5 s on, its answer: the caller
    # waits for both (it spoke into the pause, and every later reply answered the line before)
    result = json.loads((tmp_path / "demo" / "result.json").read_text())
    assert result["degraded_codes"] == [], result["degraded"]
    line = next(r for r in result["script"]["lines"] if r["line"] == 5)
    truth = json.loads((tmp_path / "demo" / "agent_truth.json").read_text())["utterances"]
    answer = next(u for u in truth if u["text"] == "Okay, it shipped yesterday.")
    # (its times on the agent's own clock, which starts with the media as the caller's does)
    assert line["sent"]["start_ms"] > answer["end_ms"], (line, answer)


def test_an_option_a_transport_does_not_take_is_named_as_it_was_given(cli):
    """The registry's one line names the CLI's flags when the CLI calls it, the option names
    when a script does."""
    import sys

    from turnscope import transports

    plugins = str(ROOT / "tests" / "data" / "plugins")
    sys.path.insert(0, plugins)
    try:
        import relay_transport
    finally:
        sys.path.remove(plugins)
    for spec in relay_transport.TRANSPORTS:
        transports.register(spec)
    url = "http://127.0.0.1:9/api/offer"
    code, _, err = cli("call", url, "--transport", "relay", "--ice-server", "stun:127.0.0.1:3478",
                       "--scenario", "quick-exchange")  # fmt: skip
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "--ice-server: not an option of the relay transport" in err, err
    assert "it takes --connect-timeout, --header" in err, err
    with pytest.raises(InputError, match=r"it takes connect_timeout_s, headers"):
        transports.options("relay", url, ice_servers=["stun:127.0.0.1:3478"])
