"""The bench / score / doctor commands: outputs, exit codes and one-line errors."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.conftest import STARTER

POSTCONDITION = (
    "import json; p=json.load(open('artifacts/bench-voice.json')); a=p['aggregate']; "
    "assert a['pass_rate']==1.0, p; assert a['scored']==1, p; "
    "assert p['modalities']==['voice'], p; "
    "c=p['per_task'][0]['result']['components']; "
    "assert set(c)=={'latency','turn_taking','barge_in','content'}, c; "
    "assert all(v>=0.75 for v in c.values()), c; print('ok')"
)


def test_seed_postcondition_verbatim(tmp_path, run_exe):
    shutil.copytree(STARTER.parent.parent, tmp_path / "configs")
    proc = run_exe(
        "bench",
        "configs/suites/voice_starter.json",
        "--use-reference",
        "-o",
        "artifacts/bench-voice.json",
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    import subprocess
    import sys

    check = subprocess.run(
        [sys.executable, "-c", POSTCONDITION], cwd=tmp_path, capture_output=True, text=True
    )
    assert check.stdout.strip() == "ok", check.stderr


def write(path, obj):
    path.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return path


def test_bench_transcripts_dir(tmp_path, cli):
    ref = json.loads(STARTER.read_text())["tasks"][0]["reference_dialogue"]
    d = tmp_path / "t"
    d.mkdir()
    write(d / "refund-call.json", {"turns": ref})
    code, _, _ = cli("bench", str(STARTER), "--transcripts", str(d), "-o", str(tmp_path / "r.json"))
    assert code == 0
    assert json.loads((tmp_path / "r.json").read_text())["aggregate"]["passed"] == 1
    empty = tmp_path / "none"
    empty.mkdir()
    code, _, err = cli("bench", str(STARTER), "--transcripts", str(empty))
    assert code == 1 and "every task is void" in err  # a warning: stdout may be --json's
    # The agent's own transcripts gated as a run of the fixtures is: a scorecard beside the
    # result (the gate said "pass the .scorecard.json that bench wrote", and bench wrote none).
    slow = [
        {"speaker": "caller", "start_ms": 0, "end_ms": 1500, "text": "I want a refund please"},
        {"speaker": "agent", "start_ms": 4500, "end_ms": 6000, "text": "Sure, a 30 day window."},
    ]
    write(d / "refund-call.json", {"turns": slow})
    code, out, _ = cli("bench", str(STARTER), "--transcripts", str(d), "-o",
                       str(tmp_path / "s.json"))  # fmt: skip
    assert code == 1 and "scorecard: " in out, out
    # The task's row says "fail"; under the table, why (the gate's words, below).
    assert "refund-call failed: 1 of 1 replies outside the 1200 ms latency budget" in " ".join(
        out.split()
    ), out
    code, out, err = cli("gate", str(tmp_path / "s.json"))
    assert code == 1, (out, err)
    assert "FAIL task refund-call: verdict fail; latency 0.000" in out, (out, err)
    assert "1 of 1 replies outside the 1200 ms latency budget" in out, out  # the reason
    assert (tmp_path / "s.scorecard.html").exists()
    # --scorecard puts it elsewhere (it was taken and ignored in this mode)
    code, out, _ = cli("bench", str(STARTER), "--transcripts", str(d), "--scorecard",
                       str(tmp_path / "card.json"))  # fmt: skip
    assert code == 1 and (tmp_path / "card.json").exists() and "scorecard: " in out, out


def test_score_table_and_json(tmp_path, cli):
    slow = [
        {"speaker": "caller", "start_ms": 0, "end_ms": 1000, "text": "refund?"},
        {"speaker": "agent", "start_ms": 3000, "end_ms": 4000, "text": "a refund in 30 days"},
    ]
    path = write(tmp_path / "slow.json", slow)
    code, out, _ = cli("score", str(path))
    assert code == 1
    assert "latency" in out and "FAIL" in out and "failed floor: latency" in out
    # The failing row says why, in the words the gate and JUnit use (scoring/suites/why.py).
    flat = " ".join(out.replace("│", " ").split())
    assert "FAILED: 1 of 1 replies outside the 1200 ms latency budget (slowest 2000 ms)" in flat
    code, out, _ = cli("score", str(path), "--max-latency-ms", "2500", "--require", "receipt")
    flat = " ".join(out.replace("│", " ").split())
    assert code == 1 and "content 0.000 FAILED: never said 'receipt'" in flat, out
    code, out, _ = cli(
        "score",
        str(path),
        "--max-latency-ms",
        "2500",
        "--require",
        "refund",
        "--require",
        "30",
        "--json",
    )
    assert code == 0
    assert json.loads(out)["result"]["components"]["latency"] == 1.0


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (None, "no such transcript file"),
        ("{not json", "invalid JSON at line 1"),
        ('{"x": 1}', "expected a JSON list of turns"),
        ('[{"speaker": "agent", "start_ms": "soon", "end_ms": 5}]', "turn [0] start_ms is 'soon'"),
        ('[{"speaker": "agent", "end_ms": 5}]', "turn [0] has no start_ms"),
        ("[1]", "turn [0] is not an object"),
    ],
)
def test_score_bad_input_is_one_line_exit_2(tmp_path, cli, content, needle):
    path = tmp_path / "t.json"
    if content is not None:
        path.write_text(content)
    code, _out, err = cli("score", str(path))
    assert code == 2
    assert needle in err and str(path) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_score_of_a_runs_folder_names_its_transcript(tmp_path, cli):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "transcript.json").write_text('{"turns": []}')
    code, _out, err = cli("score", str(tmp_path / "run"))
    assert code == 2 and f"(give {tmp_path / 'run' / 'transcript.json'})" in err, err
    assert len(err.strip().splitlines()) == 1


def test_bench_bad_suite(tmp_path, cli):
    other = write(
        tmp_path / "s.json",
        {"kind": "agent-learning.bench-suite.v1", "control": "coding", "tasks": []},
    )
    code, _, err = cli("bench", str(other), "--use-reference")
    assert code == 2 and "a suite of another kind" in err and len(err.splitlines()) == 1
    code, _, err = cli("bench", str(STARTER), "--use-reference", "--evidence-class", "gold")
    assert code == 2 and "unknown evidence_class 'gold'" in err
    code, _, err = cli("bench", str(STARTER))
    assert code == 2 and "--use-reference or --transcripts" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["nosuch"], "no such command 'nosuch'"),
        (["call", "--devices"], "no such option: --devices"),
        (["score"], "score needs TRANSCRIPT"),
    ],
)
def test_usage_errors_are_usage_errors(cli, args, needle):
    code, _out, err = cli(*args)
    assert code == 2
    assert needle in err and "internal error" not in err and "Traceback" not in err


def test_bad_input_never_traceback_in_subprocess(tmp_path, run_exe):
    proc = run_exe("score", str(tmp_path / "missing.json"))
    assert proc.returncode == 2
    assert proc.stderr.strip().startswith("turnscope: error:")
    assert "Traceback" not in proc.stderr


def test_doctor_json(cli):
    code, out, _ = cli("doctor", "--json")
    report = json.loads(out)
    names = {c["check"] for c in report["checks"]}
    assert {"Whisper tiny.en model", "espeak-ng", "PortAudio (libportaudio2)", "Chromium"} <= names
    assert code == (0 if report["ok"] else 1)
    assert all(c["fix"] for c in report["checks"])


def test_doctor_flags_missing_default_requirement(monkeypatch, cli):
    from turnscope import doctor

    broken = doctor.Check(
        "espeak-ng",
        "demo",
        True,
        "missing_system_tool",
        "apt-get install -y espeak-ng",
        lambda: "espeak-ng is not on PATH",
    )
    monkeypatch.setattr(doctor, "CHECKS", [broken])
    code, out, _ = cli("doctor")
    assert code == 1
    assert "apt-get install -y espeak-ng" in out and "1 missing for default features" in out


def test_postcondition_is_the_seed_verbatim():
    from tests.conftest import SHARED

    seed = SHARED / "seeds" / "000_7eb139917e73789b.txt"
    if not seed.exists():
        pytest.skip("../shared is not present in this checkout")
    assert f'python -c "{POSTCONDITION}"' in seed.read_text()


def test_importing_the_cli_leaves_the_heavy_stacks_unloaded():
    """`turnscope --help` and `turnscope score` stay quick: importing the CLI (every command
    registered) imports no WebRTC, HTTP or ASR stack; each command imports what it uses."""
    import subprocess
    import sys

    heavy = ("aiortc", "aiohttp", "faster_whisper")
    code = f"import sys, turnscope.cli.main; print([m for m in {heavy!r} if m in sys.modules])"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_cli_reads_defaults_without_the_stacks_behind_them():
    """The CLI builds its options from defaults kept in modules with no imports (so --help
    stays light): one value each, and importing the CLI loads neither scoring nor sound."""
    import subprocess
    import sys

    from turnscope.capture.device import calibration
    from turnscope.cli import calibrate, fixture, gate
    from turnscope.scoring.suites import fixtures
    from turnscope.scoring.suites import gate as suite_gate

    assert calibrate.REPEATS is calibration.REPEATS
    assert fixture.TAGS is fixtures.TAGS
    assert gate.DEFAULT_TOLERANCE is suite_gate.DEFAULT_TOLERANCE
    probe = (
        "import sys, turnscope.cli.main; "
        "print(sorted(m for m in ('turnscope.scoring.suites.gate', 'sounddevice', "
        "'turnscope.scoring.suites.fixtures') if m in sys.modules))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert loaded.stdout.strip() == "[]", loaded.stdout + loaded.stderr
