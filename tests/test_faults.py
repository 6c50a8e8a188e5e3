"""Faults and bad input: nothing captured is lost, nothing secret is written, nothing bad passes.

Each test feeds one kind of fault or bad input to the real command (or a real process) and
checks the outcome the README documents: one line naming the file or flag and the fix, the
documented exit code, and whatever was captured kept as a readable bundle marked degraded.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import soxr
from aiohttp import web

from tests.conftest import ROOT, serve_offer, turnscope_exe
from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.caller.lines import line_audio
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.actors.caller.synth import render
from turnscope.scoring.evidence.validate import validate_bundle

REFUND = ROOT / "configs" / "scenarios" / "refund-call.yaml"

SHORT = """
name: short
caller: {voice: en-us, timeout_s: 20, hangup_after_ms: 500, reply_timeout_ms: 3000}
script:
  - caller: I would like a refund please.
    at_ms: 300
  - agent: Sure, I can help with that refund today.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def _start_agent(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen(
        [*turnscope_exe(), "agent", "--port", "0", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    assert "reference agent on" in line, line
    base = line.split("reference agent on ", 1)[1].split(":", 2)
    return proc, f"{base[0]}:{base[1]}:{base[2].split(':')[0]}/api/offer"


# --- the two known bugs ---------------------------------------------------------------------


def test_agent_silent_after_s_reaches_the_agent(tmp_path, cli):
    """`turnscope agent --silent-after-s` was declared and documented but never reached the
    agent's knobs: its truth log said "silent_after_s": null and the call went on."""
    scenario = tmp_path / "short.yaml"
    scenario.write_text(SHORT)
    truth = tmp_path / "truth.jsonl"
    proc, url = _start_agent(
        "--scenario", str(scenario), "--no-greet", "--silent-after-s", "1.5",
        "--truth-log", str(truth),
    )  # fmt: skip
    try:
        code, _, err = cli(
            "call", url, "--scenario", str(scenario), "--loopback-only", "-q",
            "--media-timeout", "2", "-o", str(tmp_path / "out"),
        )  # fmt: skip
        deadline = time.monotonic() + 10  # the agent logs the call once it has closed
        while not truth.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        proc.terminate()
        proc.wait(10)
    assert code == 4 and "no audio from the agent" in err, err
    logged = json.loads(truth.read_text().splitlines()[0])
    assert logged["behaviour"]["silent_after_s"] == 1.5


def test_relative_audio_path_in_a_scenario_given_by_a_relative_path(tmp_path, monkeypatch):
    """A scenario's `audio:` is relative to the scenario file; given as
    configs/scenarios/x.yaml it was joined with that folder twice
    (configs/scenarios/configs/scenarios/clip.wav) by the caller and the reference agent."""
    folder = tmp_path / "configs" / "scenarios"
    folder.mkdir(parents=True)
    t = np.arange(16000) / 16000
    sf.write(folder / "clip.wav", (0.3 * np.sin(2 * np.pi * 220 * t)).astype(np.float32), 16000)
    (folder / "x.yaml").write_text(
        "name: x\nscript:\n"
        "  - caller: hello there\n    audio: clip.wav\n    at_ms: 100\n"
        "  - agent: hello to you\n    audio: clip.wav\n"
    )
    monkeypatch.chdir(tmp_path)
    sc = load_scenario("configs/scenarios/x.yaml")
    assert len(line_audio(sc, sc.script[0])) > 8000  # the caller's clip
    agent_line = AgentBehaviour.from_scenario(sc).lines[0]
    assert agent_line.audio is not None and agent_line.audio.is_file(), agent_line.audio
    assert render(sc).duration_ms > 1000  # and synth


# --- signals: a real process, a real signal ---------------------------------------------------

SAMPLE = ROOT / "recordings" / "refund-call.wav"


def _result(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text())


# A library the CLI's own import maps (the entry point imports only sys before its guard):
# once it is in the process, the process is past Python's start-up and inside the CLI.
CLI_LOADING = "_json.cpython"


def _signal_after(
    cmd: list[str], seconds: float | str, sig: signal.Signals
) -> subprocess.CompletedProcess:
    """Run ``cmd`` and send it ``sig`` ``seconds`` in, or (``seconds`` = CLI_LOADING) the
    moment the CLI's import has begun (a fixed 0.05 s could land in Python's own start-up on a
    busy machine, where no program's code runs yet)."""
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    if isinstance(seconds, str):
        maps = Path(f"/proc/{proc.pid}/maps")
        began = time.monotonic()
        while seconds not in maps.read_text() and time.monotonic() - began < 30:
            time.sleep(0.001)
    else:
        time.sleep(seconds)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def test_sigint_during_a_replay_keeps_a_scored_degraded_bundle(tmp_path):
    out = tmp_path / "out"
    done = _signal_after(
        [*turnscope_exe(), "replay", str(SAMPLE), "--realtime", "-q", "-o", str(out)],
        9,
        signal.SIGINT,
    )
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    result = _result(out)
    assert any(
        "interrupted by the user" in d and "replay stopped at" in d for d in result["degraded"]
    )
    assert result["counts"]["turns"] >= 1  # what was replayed is scored
    assert validate_bundle(out) == []


@pytest.mark.parametrize("after_s", [CLI_LOADING, 0.6])
def test_ctrl_c_while_the_cli_loads_or_before_a_run_is_one_line_exit_130(tmp_path, after_s):
    """Ctrl-C while the command line is still importing (a Python traceback, exit -2) or in a
    command's own work before any run (typer's silent exit 130: a bare ^C on the terminal):
    one line, exit 130."""
    done = _signal_after(
        [*turnscope_exe(), "synth", "barge-ins", "--snr-db", "10", "-o", str(tmp_path / "s")],
        after_s,
        signal.SIGINT,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == "turnscope: error: interrupted (Ctrl-C)\n", done.stderr


def test_ctrl_c_during_a_bench_starts_no_new_task_and_says_so(tmp_path):
    """A bench of three replays, one at a time, interrupted once the first has begun: the
    first is kept (scored, or void for the replay it cut short: never a pass or fail on part
    of the call), the two it never began are void, "not run", none is started after it; the
    scorecard is written, one error line says so, exit 4 (it ran every task to the end and
    exited 0, the Ctrl-C unheeded)."""
    import os

    tasks = [
        {"id": f"t{i}", "budgets": {"max_latency_ms": 1500},
         "fixture": {"source": "recorded", "audio": os.path.relpath(SAMPLE, tmp_path),
                     "wer": False, "tags": ["acoustic"]}}
        for i in range(3)
    ]  # fmt: skip
    suite = tmp_path / "suite.json"
    suite.write_text(json.dumps({"kind": "agent-learning.bench-suite.v1", "control": "voice",
                                 "name": "ctrl-c", "version": "1", "tasks": tasks}))  # fmt: skip
    runs = tmp_path / "runs"
    cmd = [*turnscope_exe(), "bench", str(suite), "-j", "1", "-q", "--runs", str(runs),
           "-o", str(tmp_path / "out" / "bench.json")]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)  # fmt: skip
    began = time.monotonic()
    while not (runs / "t0" / "caller.wav").exists() and time.monotonic() - began < 120:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 4, (out, err)
    assert "Traceback" not in err
    errors = [x for x in err.splitlines() if x.startswith("turnscope: error:")]
    assert len(errors) == 1, err
    assert "interrupted by the user (Ctrl-C):" in errors[0] and "task(s) void" in errors[0]
    rows = {r["task_id"]: r for r in json.loads((tmp_path / "out" / "bench.json").read_text())
            ["per_task"]}  # fmt: skip
    for tid in ("t1", "t2"):
        assert rows[tid]["verdict"] == "void", rows[tid]
        assert "not run: interrupted by the user (Ctrl-C)" in rows[tid]["error"], rows[tid]
        assert not (runs / tid).exists()  # never started
    first = rows["t0"]
    assert first["verdict"] == "void" or "degraded" not in str(first), first
    if first["verdict"] == "void":
        assert "degraded replay: interrupted by the user (Ctrl-C)" in first["error"], first
    assert (tmp_path / "out" / "bench.scorecard.json").is_file()
    assert validate_bundle(runs / "t0") == []


def test_sigterm_mid_call_keeps_everything_marked_degraded(tmp_path):
    proc, url = _start_agent("--no-greet")
    try:
        done = _signal_after(
            [*turnscope_exe(), "call", url, "--scenario", str(REFUND), "--loopback-only", "-q",
             "-o", str(tmp_path / "out")],
            10,
            signal.SIGTERM,
        )  # fmt: skip
    finally:
        proc.terminate()
        proc.wait(10)
    assert done.returncode == 4, done.stderr
    result = _result(tmp_path / "out")
    assert any("terminated by SIGTERM" in d for d in result["degraded"]), result["degraded"]
    assert (tmp_path / "out" / "caller.wav").stat().st_size > 100_000
    assert validate_bundle(tmp_path / "out") == []


def _silent_http_server() -> tuple[socket.socket, str]:
    """Accepts connections and never answers: an agent whose offer endpoint hangs."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    return srv, f"http://127.0.0.1:{srv.getsockname()[1]}/api/offer"


def test_sigint_during_signalling_leaves_a_bundle_that_says_so(tmp_path):
    srv, url = _silent_http_server()
    try:
        done = _signal_after(
            [*turnscope_exe(), "call", url, "--scenario", str(REFUND), "--loopback-only", "-q",
             "--connect-timeout", "60", "-o", str(tmp_path / "out")],
            6,
            signal.SIGINT,
        )  # fmt: skip
    finally:
        srv.close()
    assert done.returncode == 4, done.stderr
    errors = [x for x in done.stderr.splitlines() if x.startswith("turnscope: error:")]
    assert len(errors) == 1 and "while the call was being set up" in errors[0], done.stderr
    result = _result(tmp_path / "out")
    assert result["verdict"] == "error" and result["degraded"]
    assert validate_bundle(tmp_path / "out") == []


# --- a full disk (a small tmpfs in a private mount namespace) ----------------------------------

FULL_DISK = """
import json, os, subprocess, sys
disk, size, cmd = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", disk], check=True)
done = subprocess.run(cmd, capture_output=True, text=True)
out = os.path.join(disk, "out")
names = os.listdir(out) if os.path.isdir(out) else []
files = {n: os.path.getsize(os.path.join(out, n)) for n in names}
result = json.load(open(os.path.join(out, "result.json"))) if "result.json" in files else None
valid = subprocess.run(cmd[:1] + ["validate", out], capture_output=True, text=True)
print(json.dumps({"rc": done.returncode, "err": done.stderr, "files": files, "result": result,
                  "valid_rc": valid.returncode}))
"""


def _on_full_disk(tmp_path: Path, size: str, *args: str) -> dict:
    disk = tmp_path / "disk"
    disk.mkdir()
    cmd = [*turnscope_exe(), *args, "-o", str(disk / "out")]
    proc = subprocess.run(
        ["unshare", "--mount", "--map-root-user", sys.executable, "-c", FULL_DISK, str(disk),
         size, json.dumps(cmd)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_disk_that_fills_during_a_replay_keeps_the_audio_and_says_what_is_missing(tmp_path):
    got = _on_full_disk(tmp_path, "1m", "replay", str(SAMPLE), "-q")
    assert got["rc"] == 4, got["err"]
    lines = [x for x in got["err"].splitlines() if x.startswith("turnscope: error:")]
    assert len(lines) == 1 and "incomplete" in lines[0] and "recording stopped at" in lines[0]
    assert "disk is full" in lines[0] and str(tmp_path) in lines[0]
    assert got["files"]["caller.wav"] > 100_000 and got["files"]["agent.wav"] > 100_000
    assert not [n for n in got["files"] if n.endswith(".tmp")]  # no half-written file


def test_a_disk_that_fills_while_the_bundle_is_written_keeps_what_fits_in_order(tmp_path):
    got = _on_full_disk(tmp_path, "3200k", "replay", str(SAMPLE), "-q")
    assert got["rc"] == 4, got["err"]
    assert "could not write" in got["err"] and "Traceback" not in got["err"]
    files = got["files"]
    for name in ("caller.wav", "agent.wav", "transcript.json", "result.json"):
        assert name in files, files  # the most valuable first
    assert got["result"]["verdict"] in ("pass", "fail")
    assert got["valid_rc"] == 0 or "voice_artifact_manifest.json" not in files
    assert not [n for n in files if n.endswith(".tmp")]


# --- bad numbers and options: exit 2, one line naming the flag or file ---------------------------


def _bad_input(cli, *args: str) -> str:
    code, out, err = cli(*args)
    assert code == 2, (code, out, err)
    assert "Traceback" not in err and "internal error" not in err, err
    return err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--connect-timeout", "0"], "--connect-timeout"),
        (["--connect-timeout", "-1"], "--connect-timeout"),
        (["--media-timeout", "0"], "--media-timeout"),
        (["--connect-timeout", "nan"], "--connect-timeout"),
        (["--ice-server", "notaurl"], "--ice-server"),
        (["--header", "X-Token: abc\rdef"], "line break"),
    ],
)
def test_bad_call_options_are_bad_input(cli, args, needle):
    err = _bad_input(cli, "call", "http://127.0.0.1:9/api/offer", "--scenario", str(REFUND), *args)
    assert needle in err


def test_a_url_that_is_not_a_url_is_bad_input(cli):
    err = _bad_input(cli, "call", "notaurl", "--scenario", str(REFUND), "-q")
    assert "not an agent URL" in err


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--agent-offset-ms", "nan"], "--agent-offset-ms"),
        (["--agent-offset-ms", "1e12"], "--agent-offset-ms"),
        (["--max-latency-ms", "-100"], "--max-latency-ms"),
        (["--frame-ms", "15"], "--frame-ms"),
    ],
)
def test_bad_replay_numbers_name_the_flag(cli, tmp_path, args, needle):
    err = _bad_input(cli, "replay", str(SAMPLE), "-q", "-o", str(tmp_path / "o"), *args)
    assert needle in err and "default.yaml" not in err


def test_agent_port_out_of_range(cli):
    assert "--port" in _bad_input(cli, "agent", "--port", "99999")
    # Two flags of which one would be dropped without a word: said.
    err = _bad_input(cli, "agent", "--port", "0", "--ignore-barge-ins", "--yield-ms", "300")
    assert "--ignore-barge-ins and --yield-ms" in err, err
    err = _bad_input(cli, "agent", "--port", "0", "--scenario", "refund-call", "--line", "Hi.")
    assert "--scenario and --line are two ways" in err, err
    # Knobs that shape a call's packets, where there are none to shape.
    err = _bad_input(cli, "agent", "--port", "0", "--dtx", "--transport", "twilio")
    assert "--dtx leaves a WebRTC sender's pauses unsent" in err, err
    err = _bad_input(cli, "agent", "--dtx", "--device", "--in", "a", "--out", "b")
    assert "--drop-every, --swap-every and --dtx shape packets" in err, err
    err = _bad_input(cli, "agent", "--port", "0", "--swap-every", "9", "--transport", "exotel")
    assert "--swap-every reorders a WebRTC sender's packets" in err, err
    assert "--swap-every" in _bad_input(cli, "agent", "--port", "0", "--swap-every", "1")
    err = _bad_input(cli, "agent", "--port", "0", "--drop-in-pauses")
    assert "--drop-in-pauses loses --drop-every's packets" in err and "give --drop-every N" in err


@pytest.mark.parametrize(
    ("voice", "needle"),
    [("xx-nope", "unknown espeak-ng voice"), ("piper:nope", "unknown Piper voice"),
     ("piper:missing.onnx", "no such Piper voice file")],
)  # fmt: skip
def test_an_agent_voice_that_cannot_speak_is_one_line_naming_the_flag(cli, voice, needle):
    err = _bad_input(cli, "agent", "--port", "0", "--voice", voice)
    assert err.count("\n") == 1 and f"--voice: {needle}" in err, err


def test_a_scenarios_agent_voice_is_checked_as_it_loads(cli, tmp_path):
    scenario = tmp_path / "v.yaml"
    scenario.write_text("name: v\nagent: {voice: piper:nope}\nscript:\n  - agent: hello\n")
    err = _bad_input(cli, "agent", "--port", "0", "--scenario", str(scenario))
    assert "v.yaml" in err and "agent.voice" in err and "unknown Piper voice" in err, err


def test_scenario_time_out_of_range_is_bad_input(cli, tmp_path):
    scenario = tmp_path / "far.yaml"
    scenario.write_text("name: far\nscript:\n  - caller: hello\n    at_ms: 1000000000\n")
    err = _bad_input(cli, "synth", str(scenario), "-o", str(tmp_path / "o"))
    assert "far.yaml" in err and "at_ms" in err


def test_suite_with_a_negative_budget_is_bad_input(cli, tmp_path):
    suite = json.loads((ROOT / "configs" / "suites" / "voice_starter.json").read_text())
    suite["tasks"][0]["budgets"] = {"max_latency_ms": -5}
    path = tmp_path / "s.json"
    path.write_text(json.dumps(suite))
    assert "max_latency_ms" in _bad_input(cli, "bench", str(path), "--use-reference")


@pytest.mark.parametrize(
    "floor", ["nosuchdim=0.5", "wer=-1", "latency=2", "latency=nan", "latency"]
)
def test_bad_gate_floors_and_tolerance(cli, floor):
    card = ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json"
    assert "--floor" in _bad_input(cli, "gate", str(card), "--floor", floor)
    assert "--tolerance" in _bad_input(cli, "gate", str(card), "--tolerance", "-1")
    # A tolerance with nothing to be tolerant against is said, not ignored.
    err = _bad_input(cli, "gate", str(card), "--tolerance", "0.1")
    assert "--tolerance needs --baseline FILE" in err, err


# --- output paths -------------------------------------------------------------------------------


def test_output_paths_are_checked_before_anything_runs(cli, tmp_path):
    afile = tmp_path / "afile"
    afile.write_text("x")
    assert "is a file" in _bad_input(cli, "replay", str(SAMPLE), "-q", "-o", str(afile))
    # a new folder named like a file (it was made, the bundle inside it)
    named = tmp_path / "result.json"
    err = _bad_input(cli, "replay", str(SAMPLE), "-q", "-o", str(named))
    assert f"give -o a folder, e.g. {tmp_path / 'result'}" in err and not named.exists(), err
    err = _bad_input(cli, "scenario", "from-recording", str(SAMPLE), "-o", str(tmp_path / "s.yaml"))
    assert "not a .yaml file" in err and not (tmp_path / "s.yaml").exists(), err
    err = _bad_input(cli, "replay", str(SAMPLE), "-q", "-o", str(tmp_path / "call.mp3"))
    assert "not a .mp3 file" in err and not (tmp_path / "call.mp3").exists(), err
    proc = Path("/proc/turnscope-cannot-write-here")
    err = _bad_input(cli, "replay", str(SAMPLE), "-q", "-o", str(proc))
    assert str(proc) in err
    card = ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json"
    code, _, err = cli("gate", str(card), "--junit", "/proc/turnscope/junit.xml")
    assert code == 2 and "/proc/turnscope/junit.xml" in err and "Traceback" not in err


def test_an_existing_bundle_is_not_overwritten_without_force(cli, sample_bundle, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(sample_bundle, copy)
    before = (copy / "result.json").read_text()
    err = _bad_input(cli, "replay", str(SAMPLE), "-q", "-o", str(copy))
    assert "already holds a run" in err and "--force" in err
    assert (copy / "result.json").read_text() == before
    code, _, _ = cli("replay", str(SAMPLE), "-q", "-o", str(copy), "--force")
    assert code in (0, 1) and validate_bundle(copy) == []


# --- secrets --------------------------------------------------------------------------------------

TOKEN = "sk-test-7f3a9c2b41d8e6"


def test_a_token_the_agent_echoes_back_is_written_nowhere(tmp_path, monkeypatch):
    async def echo(request: web.Request) -> web.Response:
        return web.Response(status=500, text=f"bad auth header: {request.headers['Authorization']}")

    loop = asyncio.new_event_loop()
    _runner, url = loop.run_until_complete(serve_offer(echo))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        env = {**os.environ, "AGENT_TOKEN": TOKEN}
        out = tmp_path / "out"
        done = subprocess.run(
            [*turnscope_exe(), "call", url, "--scenario", str(REFUND), "--loopback-only", "-q",
             "--bearer-env", "AGENT_TOKEN", "--header", f"X-Api-Key: {TOKEN}-key", "-o", str(out)],
            capture_output=True, text=True, env=env, timeout=120, cwd=ROOT,
        )  # fmt: skip
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
    assert done.returncode == 4 and "HTTP 500" in done.stderr, done.stderr
    assert TOKEN not in done.stderr + done.stdout
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written and not [p for p in written if TOKEN.encode() in p.read_bytes()]
    assert "[redacted]" in (out / "result.json").read_text()


def test_a_malformed_header_never_echoes_its_value(cli):
    err = _bad_input(
        cli, "call", "http://127.0.0.1:9/api/offer", "--scenario", str(REFUND),
        "--header", f"Authorization Bearer {TOKEN}",
    )  # fmt: skip
    assert TOKEN not in err and "--header #1" in err


# --- the gate -------------------------------------------------------------------------------------


def _card(tmp_path: Path, name: str, **changes) -> Path:
    card = json.loads(
        (ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json").read_text()
    )
    for key, value in changes.items():
        card[key] = value
    path = tmp_path / f"{name}.scorecard.json"
    path.write_text(json.dumps(card))
    return path


def test_gate_fails_a_nan_cell_and_never_pins_one(cli, tmp_path):
    base = ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json"
    card = json.loads(base.read_text())
    card["tags"]["acoustic"]["latency"] = float("nan")
    path = tmp_path / "nan.scorecard.json"
    path.write_text(json.dumps(card))  # written as NaN, as Python's json does
    code, out, _ = cli("gate", str(path), "--baseline", str(base))
    assert code == 1 and "latency on acoustic" in out and "no value" in out
    pinned = tmp_path / "pinned.json"
    err = _bad_input(cli, "gate", str(path), "--baseline", str(pinned), "--update-baseline")
    assert "latency on acoustic" in err and not pinned.exists()


def test_gate_refuses_a_baseline_of_another_suite(cli, tmp_path):
    other = _card(tmp_path, "other", suite={"name": "someone_else", "version": "7"})
    err = _bad_input(cli, "gate", str(_card(tmp_path, "run")), "--baseline", str(other))
    assert "someone_else v7" in err and "voice_regression_transcripts" in err


def test_gate_says_when_every_task_is_void(cli, tmp_path):
    void = _card(
        tmp_path,
        "void",
        tags={"all": {}},
        counts={"all": {"tasks": 3, "scored": 0, "void": 3, "passed": 0}},
        exercise={},
    )
    code, out, _ = cli("gate", str(void))
    assert code == 1 and "every task is void" in out and "of 0 checks" not in out


# --- replays that must not pass ---------------------------------------------------------------


def _stereo(tmp_path: Path, name: str, caller: np.ndarray, agent: np.ndarray, rate: int) -> Path:
    n = max(len(caller), len(agent))
    data = np.zeros((n, 2), dtype=np.float32)
    data[: len(caller), 0], data[: len(agent), 1] = caller, agent
    path = tmp_path / name
    sf.write(path, data, rate, subtype="FLOAT")
    return path


@pytest.fixture(scope="module")
def excerpt():
    audio, rate = sf.read(SAMPLE, dtype="float32")
    return audio[: int(19.0 * rate)], rate  # greeting, request, policy, barge-in, answer


def _replay(cli, path: Path, out: Path, *extra: str) -> tuple[int, str, dict]:
    code, _, err = cli("replay", str(path), "-q", "-o", str(out), *extra)
    return code, err, json.loads((out / "result.json").read_text())


def test_a_silent_agent_channel_is_a_failed_degraded_call(cli, tmp_path, excerpt):
    audio, rate = excerpt
    path = _stereo(tmp_path, "silent.wav", audio[:, 0], np.zeros(len(audio)), rate)
    code, err, result = _replay(cli, path, tmp_path / "o")
    assert code == 4 and result["verdict"] == "fail", err
    assert any("agent never spoke" in f for f in result["failures"])
    assert any("no speech found on the agent channel" in d for d in result["degraded"])


def test_a_much_shorter_channel_is_degraded(cli, tmp_path, excerpt):
    audio, rate = excerpt
    path = _stereo(tmp_path, "short.wav", audio[:, 0], audio[: 2 * rate, 1], rate)
    code, _, result = _replay(cli, path, tmp_path / "o")
    assert code == 4 and any("shorter than the caller channel" in d for d in result["degraded"])


def test_an_offset_beyond_the_call_is_bad_input(cli, tmp_path, excerpt):
    audio, rate = excerpt
    sf.write(tmp_path / "c.wav", audio[:, 0], rate)
    sf.write(tmp_path / "a.wav", audio[:, 1], rate)
    err = _bad_input(
        cli, "replay", "--caller", str(tmp_path / "c.wav"), "--agent", str(tmp_path / "a.wav"),
        "--agent-offset-ms", "60000", "-q", "-o", str(tmp_path / "o"),
    )  # fmt: skip
    assert "never overlap" in err


def _ffmpeg_write(path: Path, audio: np.ndarray, rate: int, fmt: str, codec: str) -> None:
    """Stereo float ``audio`` encoded by FFmpeg (what soundfile cannot write: WebM, AAC)."""
    import av

    with av.open(str(path), "w", format=fmt) as out:
        stream = out.add_stream(codec, rate=rate, layout="stereo")
        frame = av.AudioFrame.from_ndarray(
            np.ascontiguousarray(audio.T, dtype=np.float32), format="fltp", layout="stereo"
        )
        frame.sample_rate, frame.pts = rate, 0
        size = stream.codec_context.frame_size or 1024
        resampler = av.AudioResampler(format=stream.codec_context.format.name, layout="stereo",
                                      rate=rate, frame_size=size)  # fmt: skip
        for chunk in [*resampler.resample(frame), *resampler.resample(None)]:
            out.mux(stream.encode(chunk))
        out.mux(stream.encode(None))


@pytest.mark.parametrize(
    ("suffix", "kind"),
    [
        ("wav", {"subtype": "PCM_16"}),  # its header declares the length
        ("ogg", {"format": "OGG", "subtype": "OPUS"}),  # no length: the end-of-stream page
        ("mp3", {"format": "MP3"}),  # FFmpeg's duration (the Xing frame count)
        ("webm", {"fmt": "webm", "codec": "libopus"}),  # the segment's header
    ],
)
def test_a_recording_cut_off_short_is_degraded(cli, tmp_path, excerpt, suffix, kind):
    audio, rate = excerpt
    if "codec" in kind:  # Opus runs at 48 kHz
        _ffmpeg_write(tmp_path / f"full.{suffix}", soxr.resample(audio, rate, 48000), 48000, **kind)
    else:
        sf.write(tmp_path / f"full.{suffix}", audio, rate, **kind)
    whole, err, result = _replay(cli, tmp_path / f"full.{suffix}", tmp_path / "whole")
    assert whole == 0 and not result["degraded"], err  # the whole file is no fault
    assert "Xing" not in err  # libsndfile's mpg123 never gets the file to print its notes
    data = (tmp_path / f"full.{suffix}").read_bytes()
    (tmp_path / f"cut.{suffix}").write_bytes(data[: len(data) // 2])
    code, err, result = _replay(cli, tmp_path / f"cut.{suffix}", tmp_path / "o")
    assert code == 4 and any("cut off" in d for d in result["degraded"]), err
    assert "Xing" not in err


def test_a_length_ffmpeg_only_estimates_is_no_cut(cli, tmp_path, excerpt):
    """A raw AAC stream (ADTS) states no length: FFmpeg estimates one from the bitrate, 7% over
    the whole file's. It is no sign of a cut (it once degraded every such replay)."""
    audio, rate = excerpt
    _ffmpeg_write(tmp_path / "call.aac", audio, rate, "adts", "aac")
    code, err, result = _replay(cli, tmp_path / "call.aac", tmp_path / "o")
    assert code == 0 and not result["degraded"], err


def test_a_dc_offset_is_removed_before_the_vad(cli, tmp_path, excerpt):
    audio, rate = excerpt
    _, _, clean = _replay(
        cli, _stereo(tmp_path, "c.wav", audio[:, 0], audio[:, 1], rate), tmp_path / "c"
    )
    for dc in (0.05, 0.2):
        shifted = np.clip(audio + dc, -1, 1)
        path = _stereo(tmp_path, f"dc{dc}.wav", shifted[:, 0], shifted[:, 1], rate)
        _, _, result = _replay(cli, path, tmp_path / f"o{dc}")
        assert any("DC offset" in w for w in result["warnings"]), result["warnings"]
        assert result["counts"]["turns"] == clean["counts"]["turns"], (dc, result["counts"])


def test_all_nan_is_bad_input_and_odd_rates_and_hum_warn(cli, tmp_path, excerpt, monkeypatch):
    audio, rate = excerpt
    nan = np.full(rate, np.nan, dtype=np.float32)
    monkeypatch.chdir(tmp_path)  # no -o: runs/nan-TIME, made and removed
    err = _bad_input(cli, "replay", str(_stereo(tmp_path, "nan.wav", nan, nan, rate)), "-q")
    assert "NaN" in err
    assert not (tmp_path / "runs").exists()  # nor the runs/ above it, left empty
    low = audio[::16][: 1000 * 10]  # 1 kHz
    path = _stereo(tmp_path, "low.wav", low[:, 0], low[:, 1], 1000)
    _, _, result = _replay(cli, path, tmp_path / "low")
    assert any("1000 Hz" in w and "telephone band" in w for w in result["warnings"])
    t = np.arange(len(audio)) / rate
    hum = (0.02 * np.sin(2 * np.pi * 50 * t)).astype(np.float32)
    path = _stereo(tmp_path, "hum.wav", audio[:, 0] + hum, audio[:, 1], rate)
    _, _, result = _replay(cli, path, tmp_path / "hum")
    assert any("50 Hz mains hum" in w and "caller" in w for w in result["warnings"])


# --- transcripts given to score and bench ------------------------------------------------------


@pytest.mark.parametrize(
    ("turn", "needle"),
    [
        ({"speaker": "robot"}, "speaker 'robot'"),
        ({"start_ms": 900, "end_ms": 100}, "ends (100) before it starts (900)"),
        ({"start_ms": -50}, "start_ms is -50"),
        ({"text": 5}, "text is 5"),
        ({"interrupt": "yes"}, "interrupt is 'yes'"),
        ({"interrupt": "false"}, "interrupt is 'false'"),
    ],
)
def test_bad_transcript_turns_are_named(cli, tmp_path, turn, needle):
    good = {"speaker": "caller", "start_ms": 0, "end_ms": 500, "text": "hi", "interrupt": False}
    path = tmp_path / "t.json"
    path.write_text(json.dumps([good, {**good, "speaker": "agent", **turn}]))
    err = _bad_input(cli, "score", str(path))
    assert "turn [1]" in err and needle in err and str(path) in err


# --- fixtures and integrity ---------------------------------------------------------------------


def test_fixture_add_refuses_paths_and_empty_bundles(cli, tmp_path, sample_bundle):
    suite = tmp_path / "suite.json"
    shutil.copy(ROOT / "configs" / "suites" / "voice_starter.json", suite)
    err = _bad_input(
        cli, "fixture", "add", str(sample_bundle), "--suite", str(suite), "--tags", "acoustic",
        "--id", "../../evil",
    )  # fmt: skip
    assert "plain name" in err and not (tmp_path.parent / "evil.flac").exists()
    code, _, _ = cli(
        "call", "http://127.0.0.1:9/api/offer", "--scenario", str(REFUND), "-q", "-o",
        str(tmp_path / "never"),
    )  # fmt: skip
    assert code == 4
    err = _bad_input(
        cli, "fixture", "add", str(tmp_path / "never"), "--suite", str(suite), "--tags", "acoustic"
    )
    assert "no usable audio" in err


def test_fixture_add_refuses_a_run_whose_evidence_is_degraded_unless_kept(cli, tmp_path):
    """A replay of a file cut off mid-data is degraded: as a fixture it would hold the agent to
    a call that was never whole. Refused in one line naming why and the flag; with
    --keep-degraded it is added (it was added silently)."""
    data = SAMPLE.read_bytes()
    (tmp_path / "cut.wav").write_bytes(data[: len(data) // 3])
    code, _, err = cli("replay", str(tmp_path / "cut.wav"), "-q", "-o", str(tmp_path / "run"))
    assert code == 4 and "the file was cut off" in err, err
    suite = tmp_path / "suite.json"
    shutil.copy(ROOT / "configs" / "suites" / "voice_starter.json", suite)
    before = suite.read_text()
    err = _bad_input(
        cli, "fixture", "add", str(tmp_path / "run"), "--suite", str(suite), "--tags", "acoustic"
    )
    assert "its evidence is degraded" in err and "the file was cut off" in err, err
    assert "--keep-degraded" in err and suite.read_text() == before
    assert not (tmp_path / "fixtures").exists()
    code, out, err = cli("fixture", "add", str(tmp_path / "run"), "--suite", str(suite),
                         "--tags", "acoustic", "--keep-degraded")  # fmt: skip
    assert code == 0 and "added task 'run'" in out, (out, err)


def test_an_edited_verdict_is_caught_by_validate(cli, tmp_path, sample_bundle):
    copy = tmp_path / "b"
    shutil.copytree(sample_bundle, copy)
    assert validate_bundle(copy) == []
    result = json.loads((copy / "result.json").read_text())
    result["verdict"] = "fail" if result["verdict"] == "pass" else "pass"
    (copy / "result.json").write_text(json.dumps(result))
    problems = validate_bundle(copy)
    assert any("result.json" in p and "changed" in p for p in problems), problems
    (copy / "report.html").write_text("<html>nothing to see</html>")
    assert any("report.html" in p for p in validate_bundle(copy))


def test_a_real_bug_is_one_line_and_a_trace_file(cli, tmp_path, monkeypatch):
    import turnscope.cli.score as score_cmd

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a planted bug")

    monkeypatch.setattr(score_cmd, "score_outcome", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the trace file: not /tmp
    monkeypatch.delenv("TURNSCOPE_DEBUG", raising=False)
    path = tmp_path / "t.json"
    path.write_text(json.dumps([{"speaker": "caller", "start_ms": 0, "end_ms": 1, "text": "x"}]))
    code, _, err = cli("score", str(path))
    assert code == 3 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    trace = Path(err.strip().rsplit("the full trace is in ", 1)[1])
    assert "ZeroDivisionError: a planted bug" in trace.read_text()
    assert trace.parent == tmp_path


def test_an_offset_a_recording_brings_into_digital_silence_is_heard_as_the_live_call_heard_it(
    cli, tmp_path, excerpt
):
    """A bot's recorded replies carry their recording's DC offset and the digital silence
    between them has none (the LibriVox prompts: +0.007, through a mu-law line). The whole
    file's mean, subtracted, lifted that silence to -48 dBFS and the replay of a live call's
    bundle found other turns than the call did (a reply's end 313 ms apart): the offset is left
    as recorded there, so the replay's utterances are the live endpointer's, to the sample."""
    from tests.test_endpointer import run
    from turnscope.asr.events import EndOfTurn

    audio, rate = excerpt
    agent = np.zeros(len(audio), dtype=np.float32)
    for a, b in ((2.0, 6.5), (10.0, 14.5)):
        span = slice(int(a * rate), int(b * rate))
        agent[span] = audio[span, 1] + 0.008
    path = tmp_path / "bundle.wav"
    sf.write(path, np.stack([audio[:, 0], agent], axis=1), rate, subtype="PCM_16")
    _, _, result = _replay(cli, path, tmp_path / "o")
    assert any("DC offset" in w and "left as recorded" in w for w in result["warnings"])
    transcript = json.loads((tmp_path / "o" / "transcript.json").read_text())
    replayed = [
        (u["start_ms"], u["end_ms"]) for u in transcript["utterances"] if u["channel"] == "agent"
    ]
    pcm = sf.read(path, dtype="int16")[0][:, 1]  # 16 kHz, as a live call's channel is
    ends = [e.utterance for e in run(pcm) if isinstance(e, EndOfTurn)]
    live = [(u.start_ms, u.end_ms) for u in ends]
    assert replayed and replayed == live, (replayed, live)
