"""Evidence kept and outputs written safely (issue 34): whatever fails after a call is
captured, its bundle is written; a report that could not be made says so; an output folder
emptied mid-run is a degraded run that validate fails; a load run on a full disk still prints
its summary and names each call's missing files; the report's script runs by its hash alone;
an output never replaces anything but a regular file, and no command follows a link out of a
bundle; bad input leaves nothing behind; and the internal errors of the new surfaces are one
line with their exit code.

Each runs the real command (a replay of the shipped recording, the reference agent over
loopback, headless Chromium); a planted bug or a blocked module only provokes an error path.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT, free_port, turnscope_exe
from tests.test_report import chromium
from turnscope.scoring.evidence.validate import validate_bundle

SAMPLE = ROOT / "recordings" / "refund-call.wav"
REGRESSION = ROOT / "configs" / "suites" / "voice_regression.json"
SCORECARD = ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json"
SHORT = """
name: short
caller: {voice: en-us, timeout_s: 20, hangup_after_ms: 500, reply_timeout_ms: 3000}
script:
  - caller: I would like a refund please.
    at_ms: 300
  - agent: Sure, I can help with that refund today.
"""


def _errors(err: str) -> list[str]:
    return [x for x in err.splitlines() if x.startswith("turnscope: error:")]


def _one_line(err: str) -> str:
    lines = _errors(err)
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def _exe(*args: str, env: dict[str, str] | None = None, timeout: float = 120):
    return subprocess.run(
        [*turnscope_exe(), *args], cwd=ROOT, capture_output=True, text=True, env=env,
        timeout=timeout,
    )  # fmt: skip


def _result(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def excerpt(tmp_path_factory) -> Path:
    """The sample call's first 8 seconds (two turns): a quick replay."""
    audio, rate = sf.read(SAMPLE)
    path = tmp_path_factory.mktemp("excerpt") / "excerpt.wav"
    sf.write(path, audio[: 8 * rate], rate)
    return path


# --- the bundle is written whatever fails after capture ----------------------------------------


def test_a_bug_after_capture_still_writes_the_bundle_and_is_exit_3(cli, tmp_path, monkeypatch):
    import turnscope.runner as runner

    def broken(*args, **kwargs):
        raise OverflowError("int too large to convert to float (a planted bug)")

    monkeypatch.setattr(runner, "score_outcome", broken)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the trace file: not /tmp
    monkeypatch.delenv("TURNSCOPE_DEBUG", raising=False)
    out = tmp_path / "out"
    code, _, err = cli("replay", str(SAMPLE), "-q", "-o", str(out))
    assert code == 3, err
    line = _one_line(err)
    assert "internal error" in line and f"kept in {out}" in line and "full trace" in line
    trace = Path(line.rsplit("the full trace is in ", 1)[1])
    assert "a planted bug" in trace.read_text()
    assert trace.parent == tmp_path
    # the same bundle as ever, most valuable first: audio, transcript, result, manifest, report
    for name in ("caller.wav", "agent.wav", "transcript.json", "result.json", "mixed.wav"):
        assert (out / name).stat().st_size > 0, name
    assert len(json.loads((out / "transcript.json").read_text())["turns"]) >= 5
    result = _result(out)
    assert result["verdict"] == "error" and "OverflowError" in result["error"]
    assert any("a bug in turnscope" in d for d in result["degraded"])
    assert (out / "report.html").is_file() and validate_bundle(out) == []


def test_a_report_that_cannot_be_made_names_itself(cli, tmp_path, monkeypatch):
    import turnscope.scoring.report.html as html

    def broken(bundle):
        raise ValueError("cannot convert float NaN to integer")

    monkeypatch.setattr(html, "build_report", broken)
    out = tmp_path / "out"
    code, _, err = cli("replay", str(SAMPLE), "-q", "-o", str(out))
    assert code == 0, err  # the run passed; its report is a view of it
    warnings = [x for x in err.splitlines() if "report.html could not be made" in x]
    assert len(warnings) == 1 and "NaN" in warnings[0] and "report-error.txt" in warnings[0]
    assert any("report.html could not be made" in w for w in _result(out)["warnings"])
    assert "NaN" in (out / "report-error.txt").read_text()
    assert not (out / "report.html").exists()
    assert validate_bundle(out) == []  # the changed result.json is sealed again


def test_the_output_folder_removed_mid_run_is_degraded_and_fails_validate(tmp_path, excerpt):
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [*turnscope_exe(), "replay", str(excerpt), "--realtime", "-q", "-o", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while not (out / "caller.wav").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.5)
    shutil.rmtree(out)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 4, err
    assert "lost caller.wav and agent.wav" in _one_line(err)
    assert any("lost caller.wav" in d for d in _result(out)["degraded"])
    done = _exe("validate", str(out))
    assert done.returncode == 1
    assert "caller.wav holds only 0 ms of audio" in done.stdout + done.stderr


def test_validate_fails_audio_shorter_than_the_transcript(sample_bundle, tmp_path):
    copy = tmp_path / "b"
    shutil.copytree(sample_bundle, copy)
    audio, rate = sf.read(copy / "agent.wav", dtype="int16")
    sf.write(copy / "agent.wav", audio[: 10 * rate], rate, subtype="PCM_16")
    from turnscope.scoring.evidence.bundle import sha256_file

    manifest = json.loads((copy / "voice_artifact_manifest.json").read_text())
    for a in manifest["artifacts"]:  # the checksums made right: only the length is wrong
        if a["path"] == "agent.wav":
            a["size_bytes"] = (copy / "agent.wav").stat().st_size
            a["checksum_sha256"] = sha256_file(copy / "agent.wav")
    (copy / "voice_artifact_manifest.json").write_text(json.dumps(manifest))
    problems = validate_bundle(copy)
    assert len(problems) == 1 and "agent.wav holds only 10000 ms" in problems[0], problems


# --- a disk that fills during load ---------------------------------------------------------------

LOAD_ON_FULL_DISK = """
import json, os, subprocess, sys
disk, cmd = sys.argv[1], json.loads(sys.argv[2])
subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1700k", "tmpfs", disk], check=True)
done = subprocess.run(cmd, capture_output=True, text=True)
out = os.path.join(disk, "out")
calls = {c: sorted(os.listdir(os.path.join(out, "calls", c)))
         for c in sorted(os.listdir(os.path.join(out, "calls")))}
print(json.dumps({"rc": done.returncode, "out": done.stdout, "err": done.stderr,
                  "top": sorted(os.listdir(out)), "calls": calls}))
"""


def test_a_disk_that_fills_during_load_keeps_the_summary_and_names_each_calls_loss(tmp_path):
    scenario = tmp_path / "short.yaml"
    scenario.write_text(SHORT)
    agent = subprocess.Popen(
        [*turnscope_exe(), "agent", "--port", "0"], stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        line = agent.stdout.readline() if agent.stdout else ""
        assert "reference agent on" in line, line
        url = line.split("SmallWebRTC ", 1)[1].split(",", 1)[0]
        disk = tmp_path / "disk"
        disk.mkdir()
        cmd = [*turnscope_exe(), "load", url, "--scenario", str(scenario), "--calls", "2",
               "--rate", "10", "--loopback-only", "-q", "-o", str(disk / "out")]  # fmt: skip
        proc = subprocess.run(
            ["unshare", "--mount", "--map-root-user", sys.executable, "-c", LOAD_ON_FULL_DISK,
             str(disk), json.dumps(cmd)],
            capture_output=True, text=True, timeout=300, cwd=ROOT,
        )  # fmt: skip
    finally:
        agent.terminate()
        agent.wait(10)
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["rc"] == 4, got["err"]
    line = _one_line(got["err"])
    assert "could not write load.json" in line and "disk is full" in line
    assert "latency (ms; budget 1200)" in got["out"] and "reply" in got["out"]  # the summary
    assert "load.json" not in got["top"]
    for call, files in got["calls"].items():
        assert "caller.wav" in files and "transcript.json" in files, files  # the valuable first
        assert call in line, (call, line)  # each call's missing files named
    assert "mixed.wav" in line


# --- the report's script runs by its hash alone --------------------------------------------------


def test_the_reports_own_script_runs_and_no_other(sample_bundle, tmp_path):
    page = (sample_bundle / "report.html").read_text(encoding="utf-8")
    policy = page.split('Content-Security-Policy" content="', 1)[1].split('"', 1)[0]
    script_src = next(p for p in policy.split(";") if p.strip().startswith("script-src"))
    assert "'unsafe-inline'" not in script_src and "'sha256-" in script_src, policy
    evil = page.replace(
        "</main>",
        '</main><script>document.body.dataset.pwned="script"</script>'
        '<img src="data:," onerror="document.body.dataset.pwned=\'attribute\'">',
        1,
    )
    (tmp_path / "evil.html").write_text(evil, encoding="utf-8")
    for name, page_url in (
        ("ours", sample_bundle / "report.html"),
        ("evil", tmp_path / "evil.html"),
    ):
        dom = chromium(tmp_path, "--dump-dom", page_url.as_uri())
        assert 'data-seek="on"' in dom, name  # the report's own script ran
        assert "data-pwned" not in dom, name  # markup that escaping missed runs nothing


# --- outputs replace only regular files ----------------------------------------------------------


def test_a_device_node_or_fifo_at_an_output_is_never_replaced(cli, tmp_path, sample_bundle):
    dev_full = Path("/dev/full")
    line = _one_line(cli("gate", str(SCORECARD), "--junit", str(dev_full))[2])
    assert "--junit" in line and "character device" in line
    assert stat.S_ISCHR(os.lstat(dev_full).st_mode)
    fifo = tmp_path / "result.json"
    os.mkfifo(fifo)
    code, _, err = cli("bench", str(REGRESSION), "--use-reference", "-o", str(fifo))
    assert code == 2 and "FIFO" in _one_line(err) and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    # a run folder holding a FIFO where a run writes: refused before anything runs, --force too
    for force in ((), ("--force",)):
        code, _, err = cli("replay", str(SAMPLE), "-q", "-o", str(tmp_path), *force)
        assert code == 2 and "FIFO" in _one_line(err), err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and not (tmp_path / "caller.wav").exists()
    # at the moment of writing: the report over a FIFO, a folder where the picture goes
    copy = tmp_path / "bundle"
    shutil.copytree(sample_bundle, copy)
    (copy / "report.html").unlink()
    os.mkfifo(copy / "report.html")
    code, _, err = cli("report", str(copy))
    assert code == 2 and "FIFO" in _one_line(err)
    assert stat.S_ISFIFO(os.lstat(copy / "report.html").st_mode)
    (copy / "report.html").unlink()
    (copy / "timeline.png").unlink()
    (copy / "timeline.png").mkdir()
    code, _, err = cli("report", str(copy))
    assert code == 2 and "is a folder" in _one_line(err) and (copy / "timeline.png").is_dir()


def test_no_command_follows_a_link_out_of_a_bundle(cli, tmp_path, sample_bundle):
    copy = tmp_path / "bundle"
    shutil.copytree(sample_bundle, copy)
    outside = tmp_path / "elsewhere.wav"
    shutil.copy(copy / "caller.wav", outside)
    (copy / "caller.wav").unlink()
    (copy / "caller.wav").symlink_to(outside)
    before = (copy / "report.html").read_bytes()
    code, _, err = cli("report", str(copy))
    assert code == 2 and "caller.wav is a symbolic link" in _one_line(err)
    assert (copy / "report.html").read_bytes() == before
    (copy / "report.html").unlink()
    (copy / "report.html").symlink_to(tmp_path / "elsewhere.html")
    (tmp_path / "elsewhere.html").write_text("<html></html>")
    code, out, err = cli("open", str(copy))
    assert code == 2 and "report.html is a symbolic link" in _one_line(err) and not out
    suite = tmp_path / "suite" / "suite.json"
    suite.parent.mkdir()
    shutil.copy(ROOT / "configs" / "suites" / "voice_starter.json", suite)
    code, _, err = cli("fixture", "add", str(copy), "--suite", str(suite), "--tags", "acoustic")
    assert code == 2 and "outside the bundle" in _one_line(err)
    assert not (suite.parent / "fixtures").exists()
    shutil.move(copy / "result.json", tmp_path / "result.json")
    (copy / "result.json").symlink_to(tmp_path / "result.json")
    problems = validate_bundle(copy)
    assert any("'caller.wav' resolves outside the bundle" in p for p in problems), problems
    assert any("'result.json' resolves outside the bundle" in p for p in problems), problems


# --- bad input leaves nothing behind --------------------------------------------------------------


def test_a_recording_found_unusable_leaves_nothing_in_the_output_folder(cli, tmp_path, excerpt):
    zero = tmp_path / "zero.wav"
    sf.write(zero, np.zeros((0, 2), dtype=np.float32), 16000)
    nan = tmp_path / "nan.wav"
    sf.write(nan, np.full((16000, 2), np.nan, dtype=np.float32), 16000, subtype="FLOAT")
    for bad, needle in ((zero, "no audio samples"), (nan, "NaN")):
        out = tmp_path / f"out-{bad.stem}"
        code, _, err = cli("replay", str(bad), "-q", "-o", str(out))
        assert code == 2 and needle in _one_line(err), err
        assert not out.exists(), list(out.iterdir())
        code, _, err = cli("replay", str(excerpt), "-q", "-o", str(out))  # no --force needed
        assert code == 0, err


def test_a_call_refused_before_it_starts_leaves_no_folder(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # without -o the call's folder would be runs/call-...
    scenario = str(ROOT / "configs" / "scenarios" / "refund-call.yaml")
    for output in (["-o", str(tmp_path / "new" / "call")], []):
        code, _, err = cli("call", "http://127.0.0.1:9/api/offer", "--scenario", scenario,
                           "--agent-trace", str(tmp_path / "nowhere" / "agent.jsonl"),
                           *output)  # fmt: skip
        assert code == 2 and "no such folder for the agent trace" in _one_line(err), err
        assert sorted(p.name for p in tmp_path.iterdir()) == [], output


def test_a_missing_input_with_stderr_closed_is_still_exit_2(tmp_path):
    exe = " ".join(turnscope_exe())
    for args in (f"replay {tmp_path}/missing.wav", f"score {tmp_path}/missing.json"):
        done = subprocess.run(["bash", "-c", f"{exe} {args} 2>&-"], cwd=ROOT, timeout=60)
        assert done.returncode == 2, args


@pytest.mark.parametrize("utf8_mode", ["default", "0"])
def test_a_non_ascii_path_under_the_c_locale(tmp_path, excerpt, utf8_mode):
    folder = tmp_path / "ünïcödé"
    folder.mkdir()
    call = folder / "cäll.wav"
    shutil.copy(excerpt, call)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONIOENCODING", "PYTHONUTF8")}
    env.update(LC_ALL="C", LANG="C")
    if utf8_mode != "default":
        env["PYTHONUTF8"] = utf8_mode  # a locale Python will not treat as UTF-8
    done = _exe("replay", str(call), "-q", "-o", str(folder / "out"), env=env)
    assert done.returncode == 0, done.stderr
    assert validate_bundle(folder / "out") == []
    assert _exe("report", str(folder / "out"), env=env).returncode == 0
    missing = _exe("replay", str(folder / "missing.wav"), env=env)
    assert missing.returncode == 2 and "no such audio file" in _one_line(missing.stderr)


# --- internal errors of the new surfaces: one line, their exit code -----------------------------


def test_an_ice_server_aiortc_cannot_use_is_bad_input(cli):
    for url in ("stun:stun.example.com:abc", "turn:turn.example.com:99999",
                "turn:turn.example.com?transport=sctp"):  # fmt: skip
        code, _, err = cli(
            "call", "http://127.0.0.1:9/api/offer", "--scenario",
            str(ROOT / "configs" / "scenarios" / "refund-call.yaml"), "--ice-server", url,
        )  # fmt: skip
        assert code == 2 and "--ice-server" in _one_line(err), err


async def test_a_turn_url_with_credentials_is_handed_to_aiortc_apart():
    from aiortc import RTCPeerConnection

    from turnscope.capture.webrtc.signaling import rtc_configuration

    config = rtc_configuration(["turn:someone:pa%21ss@127.0.0.1:9", "stun:127.0.0.1:9"])
    turn = config.iceServers[0]
    assert (turn.urls, turn.username, turn.credential) == ("turn:127.0.0.1:9", "someone", "pa!ss")
    pc = RTCPeerConnection(config)  # aiortc gathers with it (it refused the URL whole)
    pc.addTransceiver("audio")
    try:
        await pc.setLocalDescription(await pc.createOffer())
        assert "a=candidate" in pc.localDescription.sdp
    finally:
        await pc.close()


def test_ray_client_address_without_the_ray_client_is_one_line(tmp_path):
    blocked = (
        "import sys; sys.modules['grpc'] = None\n"  # the Ray client's module, not installed
        "from turnscope.cli.main import main\n"
        f"sys.exit(main(['bench', {str(REGRESSION)!r}, '--ray', "
        f"'ray://127.0.0.1:{free_port()}', '-o', {str(tmp_path / 'r.json')!r}]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", blocked], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2, done.stderr
    assert "ray[client]" in _one_line(done.stderr)
    assert not (tmp_path / "runs").exists()  # the bundles' folder it made is not left empty
