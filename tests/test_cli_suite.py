"""Scenarios and suites a newcomer can write (issue 30.5): shipped scenarios and suites by name,
every validation problem at once, `turnscope suite init`, and where a first-turn `mid` goes."""

from __future__ import annotations

import json

from tests.conftest import ROOT

RECORDING = ROOT / "recordings" / "refund-call.wav"
REFERENCE = ROOT / "recordings" / "refund-call.reference.json"


def test_suite_kind_matches_the_scoring_stack():
    from turnscope.cli.suite import SUITE_KIND
    from turnscope.scoring.suites.suite import SUITE_KIND as REAL

    assert SUITE_KIND == REAL


def test_shipped_scenario_by_name(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # nothing called refund-call here: the shipped one is meant
    code, _, err = cli("synth", "refund-call", "-o", str(tmp_path / "s"))
    assert code == 0, err
    assert json.loads((tmp_path / "s" / "truth.json").read_text())["scenario"] == "refund-call"
    # call resolves it before it dials (a dead port: the call, not the scenario, fails)
    code, _, err = cli(
        "call", "http://127.0.0.1:9/api/offer", "--scenario", "refund-call", "-o", "c"
    )
    assert code == 4 and "no such scenario" not in err, err


def test_unknown_scenario_names_the_shipped_ones(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, err = cli("synth", "refund-cal", "-o", "s")
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert "refund-cal: no such scenario file" in err and "refund-call, talk-over" in err
    code, _, err = cli("synth", "sub/refund-call.yaml", "-o", "s")  # a path: never a name
    assert code == 2 and "sub/refund-call.yaml: no such scenario file" in err


def test_shipped_suite_by_name(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("bench", "voice_starter", "--use-reference")
    assert code == 0, err
    assert "refund-call" in out
    code, _, err = cli("bench", "voice_startr", "--use-reference")
    assert code == 2 and "voice_startr: no such suite file" in err
    assert "voice_regression, voice_regression_transcripts, voice_starter" in err


def test_an_agent_no_task_calls_is_said_not_to_have_been_called(cli, tmp_path, monkeypatch):
    """``--agent URL`` with a suite whose fixtures are all recordings or transcripts: the run
    goes on (the fixtures are scored) and a warning says the agent was not called, so the
    verdict is not read as the agent's."""
    monkeypatch.chdir(tmp_path)
    url = "http://127.0.0.1:9/api/offer"
    code, _, err = cli("bench", "voice_regression_transcripts", "--agent", url, "-q")
    assert code == 0, err
    assert "--agent: no task of this suite calls an agent live" in err, err
    assert "the verdict is the fixtures', not your agent's" in err, err
    code, _, err = cli("bench", "voice_regression_transcripts", "-q", "--runs", "r2")
    assert code == 0 and "--agent" not in err, err


def test_a_suites_run_in_json_is_the_result_alone_on_stdout(cli, tmp_path, monkeypatch):
    """``--json`` on a run of the fixtures (not only with --use-reference): the result document
    alone on stdout, parseable; where the scorecard went on stderr (the tables were printed and
    the flag ignored)."""
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("bench", "voice_regression_transcripts", "--json", "-q", "--runs", "r")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["kind"] == "agent-learning.bench-result.v1" and doc["aggregate"]["scored"] == 8
    assert "scorecard: r/scorecard.json" in err, err


def test_every_scenario_problem_at_once(cli, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "description: no name\nscript:\n  - caler: hi\n  - agent: hello\n"
        "  - caller: wait\n    barge_in_ms: soon\n"
    )
    code, _, err = cli("synth", str(bad), "-o", str(tmp_path / "s"))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "more problem" not in err
    assert "3 problems" in err, err
    assert "name: Field required (add it)" in err
    # the key it was likely meant to be, from every key a scenario knows at any depth
    caler = "script[0].caler: Extra inputs are not permitted (remove it, or fix its spelling: "
    assert caler + "'caller'?)" in err, err
    assert "script[2].barge_in_ms: Input should be a valid integer" in err and "'soon'" in err
    bad.write_text("name: x\ncaller: {timout_s: 3}\nscript:\n  - agent: hi\n    wibble: 1\n")
    code, _, err = cli("synth", str(bad), "-o", str(tmp_path / "s"))
    assert code == 2 and "caller.timout_s: " in err and "spelling: 'timeout_s'?)" in err, err
    assert (
        "script[0].wibble: Extra inputs are not permitted (remove it, or fix its spelling)" in err
    )
    # a key in the wrong place: where it goes (it said "fix its spelling: 'timeout_s'?")
    bad.write_text("name: x\ntimeout_s: 30\nscript:\n  - caller: hi\n    voise: en-us\n")
    code, _, err = cli("synth", str(bad), "-o", str(tmp_path / "s"))
    moved = "timeout_s: Extra inputs are not permitted (remove it, or move it under caller)"
    assert code == 2 and moved in err, err
    assert "script[0].voise: " in err and "fix its spelling: 'voice'?)" in err, err
    # a suite's fixture: the same
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"kind": "agent-learning.bench-suite.v1", "control": "voice",
                                 "name": "s", "version": "1", "tasks": [{"id": "t", "fixture": {
                                     "source": "recorded", "audo": "x.wav"}}],
                                 "max_latency_ms": 900}))  # fmt: skip
    code, _, err = cli("bench", str(suite), "-o", str(tmp_path / "b.json"))
    assert code == 2 and "audo" in err and "spelling: 'audio'?)" in err, err
    moved = "max_latency_ms: Extra inputs are not permitted (remove it, or move it under "
    assert moved + "tasks[N].budgets)" in err, err


def test_suite_init_then_fixture_add_then_bench(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = cli("suite", "init", "my-suite")
    assert code == 0, err
    suite = tmp_path / "my-suite.json"
    data = json.loads(suite.read_text())
    assert (data["kind"], data["control"], data["name"], data["version"]) == (
        "agent-learning.bench-suite.v1",
        "voice",
        "my-suite",
        "1",
    )
    assert data["tasks"] == [] and data["_example_task"]["fixture"]["tags"]
    assert "turnscope fixture add" in out and "turnscope bench my-suite.json" in out
    code, _, err = cli("suite", "init", "my-suite")
    assert code == 2 and "already exists" in err and "--force" in err
    code, _, err = cli("suite", "init", "../x/")
    assert code == 2 and "not a plain suite name" in err
    # Benched before any task is added: said so, in either mode (it was an empty table and
    # "every task is void" with --use-reference).
    for extra in ((), ("--use-reference",)):
        code, out, err = cli("bench", "my-suite.json", *extra)
        assert code == 2 and "my-suite.json: the suite has no tasks yet" in err, (out, err)
        assert "turnscope fixture add RUN --suite my-suite.json" in err and not out, out
    # Its example task, copied into tasks as its comment says, names a scenario that is found
    # (the shipped refund-call, by name: no scenarios/ folder beside the suite), so bench only
    # asks for the agent (it said 'audio file 'scenarios/refund-call.yaml' does not exist').
    example = tmp_path / "example.json"
    example.write_text(json.dumps({**data, "tasks": [data["_example_task"]]}))
    code, out, err = cli("bench", "example.json")
    assert code == 2 and "every task calls an agent live (refund-call)" in err, (out, err)
    (tmp_path / "refund-call.yaml").write_text("not: [a scenario")  # a file there is the one
    code, out, err = cli("bench", "example.json", "--agent", "http://127.0.0.1:9/api/offer")
    assert code == 2 and "refund-call.yaml: invalid YAML" in err, (out, err)
    (tmp_path / "refund-call.yaml").unlink()

    code, _, err = cli(
        "replay", str(RECORDING), "--reference", str(REFERENCE), "-o", "runs/r", "-q"
    )
    assert code == 0, err
    code, out, err = cli(
        "fixture", "add", "runs/r", "--suite", "my-suite.json", "--tags", "acoustic"
    )
    assert code == 0, err
    code, out, err = cli("bench", "my-suite.json", "-o", "out/bench.json", "-q")
    assert code == 0, out + err
    result = json.loads((tmp_path / "out" / "bench.json").read_text())
    assert result["aggregate"]["passed"] == 1
    assert "my-suite" in out
