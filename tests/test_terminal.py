"""Every command as a person at a keyboard meets it: in a real pseudo-terminal, with a deadline.

Piped, as the rest of the suite runs the CLI, rich shows no live display; on a terminal it does,
and that path once looped forever (issue 26). Each command here runs on a pty (live view,
progress bar, tables), ends as it does piped, shows what the piped run prints, and never shows
a secret given by ``--header``. Also TERM=dumb, NO_COLOR=1, a 40-column terminal, a terminal
resized and held (Ctrl-S) mid-call, and one closed mid-call (SIGHUP).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import ROOT, reference_agent, turnscope_exe
from tests.pty_run import Terminal, missing_from, run_in_pty, words

SECRET = "tty-secret-7f3a9c21"
HEADER = f"X-Api-Key: {SECRET}"

SCENARIO = """
name: terminal-check
task: {budgets: {max_latency_ms: 2000}}
caller: {voice: en-us, timeout_s: 40, hangup_after_ms: 400}
agent: {voice: en-gb, latency_ms: 500, yield_ms: 250}
script:
  - agent: Hello, how can I help?
  - caller: I would like to check on my order please.
  - agent: Of course. It ships tomorrow morning, and you will get an email with the tracking
      number as soon as it leaves our warehouse.
  - caller: wait
    barge_in_at: early
  - agent: Yes?
  - caller: Thank you, bye.
  - agent: Goodbye.
"""

VARIANTS = {
    "xterm": ({}, 100),
    "dumb": ({"TERM": "dumb"}, 100),
    "no-color": ({"NO_COLOR": "1"}, 100),
    "40-columns": ({}, 40),
}


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("tty") / "terminal-check.yaml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture(scope="module")
def agent_url(scenario):
    with reference_agent(scenario) as url:
        yield url


def piped(*args: str, cwd: Path = ROOT) -> tuple[int, str]:
    """The same command with its output going to a pipe (stdout and stderr, as a pty mixes)."""
    # The environment given explicitly: GNU readline, once something in this process has set
    # it up, puts COLUMNS/LINES into the C environment (not os.environ), which a child given
    # no env would inherit and print 80 columns wide.
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    p = subprocess.run(
        [*turnscope_exe(), *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        text=True, timeout=300, env=env,
    )  # fmt: skip
    return p.returncode, p.stdout


def same_run(text: str, tmp_path: Path) -> str:
    """A run's output with what differs between two runs of it made alike: the output folder
    (``p`` piped, ``t`` on the terminal) and the wall time."""
    text = text.replace(str(tmp_path / "p"), str(tmp_path / "t"))
    return re.sub(r"in \d+\.\d+ s\b", "in _ s", text)


def on_tty(*args: str, cwd: Path = ROOT, env=None, cols=100, steps=None, deadline_s=180.0):
    run = run_in_pty(
        [*turnscope_exe(), *args], cwd=cwd, env=env, cols=cols, steps=steps, deadline_s=deadline_s
    )
    assert run.code is not None, f"still running after {deadline_s} s:\n{run.screen[-3000:]}"
    assert "Traceback" not in run.screen, run.screen
    return run


def turn_texts(bundle: Path) -> list[str]:
    turns = json.loads((bundle / "transcript.json").read_text())["turns"]
    return [t["text"] for t in turns if t["text"]]


def assert_shows_turns(screen: str, bundle: Path) -> None:
    """Every final turn of the call was printed (the live view's lines)."""
    shown = " ".join(words(screen))
    for text in turn_texts(bundle):
        assert " ".join(text.split()) in shown, (text, screen)


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_replay_on_a_terminal_shows_what_a_pipe_shows(tmp_path, variant):
    env, cols = VARIANTS[variant]
    code, expected = piped("replay", "recordings/refund-call.wav", "-o", str(tmp_path / "p"))
    run = on_tty(
        "replay", "recordings/refund-call.wav", "-o", str(tmp_path / "t"), env=env, cols=cols
    )
    assert run.code == code == 0
    lost = missing_from(same_run(run.screen, tmp_path), same_run(expected, tmp_path))
    assert not lost, lost
    if variant in ("dumb", "no-color"):
        assert "\x1b[1;32m" not in run.raw  # no colour where the terminal or the user says so
    p, t = (json.loads((tmp_path / d / "result.json").read_text()) for d in ("p", "t"))
    assert p["verifier"] == t["verifier"]


def _offline(argv: list[str]) -> list[str]:
    """``argv`` in a network namespace with only loopback up, where one may be made (root and
    util-linux's unshare): nothing but 127.0.0.1 is reachable. Else ``argv`` as it is."""
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        return argv
    if subprocess.run(["unshare", "-n", "true"], capture_output=True).returncode != 0:
        return argv  # namespaces not permitted here
    return ["unshare", "-n", "sh", "-c", f"ip link set lo up && exec {shlex.join(argv)}"]


def ended_or_too_busy(run, out: Path) -> str:
    """The verdict the screen must show: PASS for a call that ended as it should (exit 0); or,
    degraded for the one reason a busy machine gives, said on the screen (the harness sent the
    caller's audio late), the verdict the bundle has. What these tests check is the terminal;
    beside the suite's other calls on two cores that happened in CI runs (up to 272 ms late),
    an honest exit 4, and once (209 ms) a barge-in the agent yielded to late at the caller's
    ear, so a FAIL."""
    result = json.loads((out / "result.json").read_text())
    if run.code != 4:
        assert run.code == 0 and result["verdict"] == "pass", run.screen
        return "PASS"
    assert result["degraded_codes"] == ["caller_audio_late"], (result["degraded"], run.screen)
    said = " ".join(words(run.screen))
    assert "degraded evidence: the caller's audio went out" in said, run.screen
    return result["verdict"].upper()


def test_demo_on_a_terminal_ends_and_shows_the_call(tmp_path):
    """The README's main command, as a person runs it: the live view, then the verdict; with
    no network at all where the machine lets a test take it away (the demo is offline: its
    model, voices and agent are on this machine, the call on 127.0.0.1)."""
    argv = _offline([*turnscope_exe(), "demo", "-o", str(tmp_path / "d")])
    run = run_in_pty(argv, cwd=tmp_path, env=None, cols=100, steps=None, deadline_s=240)
    assert run.code is not None, f"still running after 240 s:\n{run.screen[-3000:]}"
    assert "Traceback" not in run.screen, run.screen
    verdict = ended_or_too_busy(run, tmp_path / "d")
    assert_shows_turns(run.screen, tmp_path / "d")
    assert f"verdict: {verdict}" in run.screen and "wrote" in run.screen
    assert "\x1b[?25l" in run.raw  # the live status line ran (rich hides the cursor for it)


def test_call_on_a_narrow_plain_terminal_never_shows_the_secret(tmp_path, scenario, agent_url):
    out = tmp_path / "c"
    run = on_tty(
        "call", agent_url, "--scenario", str(scenario), "-o", str(out), "--header", HEADER,
        "--loopback-only", env={"NO_COLOR": "1"}, cols=40,
    )  # fmt: skip
    verdict = ended_or_too_busy(run, out)
    assert SECRET not in run.raw
    assert_shows_turns(run.screen, out)
    assert f"verdict: {verdict}" in run.screen
    for f in out.iterdir():
        if f.suffix in (".json", ".html", ".txt"):
            assert SECRET not in f.read_text(errors="replace"), f


def test_bench_and_gate_on_a_terminal_show_what_a_pipe_shows(tmp_path):
    suite = ROOT / "configs" / "suites" / "voice_regression_transcripts.json"
    baseline = ROOT / "configs" / "baselines" / "voice_regression_transcripts.scorecard.json"

    def bench(d: str) -> list[str]:
        return ["bench", str(suite), "-o", str(tmp_path / d / "r.json"), "--runs",
                str(tmp_path / d / "runs")]  # fmt: skip

    code, expected = piped(*bench("p"))
    run = on_tty(*bench("t"), env={"TERM": "dumb"}, cols=120)
    assert run.code == code == 0, run.screen
    lost = missing_from(same_run(run.screen, tmp_path), same_run(expected, tmp_path))
    assert not lost, lost

    gate = ["gate", "--baseline", str(baseline), "--junit"]
    code, expected = piped(*gate, str(tmp_path / "p.xml"), str(tmp_path / "p" / "r.scorecard.json"))
    run = on_tty(*gate, str(tmp_path / "t.xml"), str(tmp_path / "t" / "r.scorecard.json"), cols=40)
    assert run.code == code == 0, run.screen
    assert "gate passed" in run.screen
    expected = expected.replace(str(tmp_path / "p.xml"), str(tmp_path / "t.xml"))
    lost = missing_from(same_run(run.screen, tmp_path), same_run(expected, tmp_path))
    assert not lost, lost


def test_load_on_a_terminal_ends_and_never_shows_the_secret(tmp_path, scenario, agent_url):
    out = tmp_path / "load"
    run = on_tty(
        "load", agent_url, "--scenario", str(scenario), "--calls", "2", "--rate", "2",
        "-o", str(out), "--header", HEADER, "--loops", "1", deadline_s=240,
    )  # fmt: skip
    # What this test is for: the command ends on a terminal and shows its tables. Beside the
    # rest of the suite on two cores the harness may be too busy to send caller audio on time,
    # which load reports as a degraded run (exit 4), as it should.
    report = json.loads((out / "load.json").read_text())
    overloaded = any("overloaded" in d for d in report["degraded"])
    assert run.code == 0 or (run.code == 4 and overloaded), run.screen
    assert SECRET not in run.raw
    assert report["completed"] == 2, report
    assert "p50" in run.screen and "load.html" in run.screen
    assert "caller voice " in run.screen and "ASR heard it at WER" in run.screen, run.screen


def test_a_terminal_resized_and_held_mid_call_holds_up_nothing(tmp_path, scenario, agent_url):
    """Ctrl-S holds the terminal's output for 8 s mid-call: the call goes on unharmed (no caller
    audio late, every turn captured), and what was held is shown once Ctrl-Q releases it."""
    out = tmp_path / "c"

    def key(k: bytes):
        return lambda t: t.type(k)

    steps = [
        (2.0, "resize 60", lambda t: t.resize(60)),
        (3.0, "ctrl-s", key(b"\x13")),
        (11.0, "ctrl-q", key(b"\x11")),
        (12.0, "resize 120", lambda t: t.resize(120)),
    ]
    run = on_tty(
        "call", agent_url, "--scenario", str(scenario), "-o", str(out), "--loopback-only",
        steps=steps,
    )  # fmt: skip
    assert run.steps_done == [s[1] for s in steps]
    held = run.read_at_step[2] - run.read_at_step[1]
    assert held < 200, held  # the terminal did hold its output (a pty's tail may still come)
    verdict = ended_or_too_busy(run, out)
    result = json.loads((out / "result.json").read_text())
    # Held, the output must not hold the call: that would send its audio seconds late (8 s).
    assert result["source"]["details"]["caller_max_send_lag_ms"] < 1000, result["degraded"]
    busy = run.code == 4
    assert busy or not any("late" in w for w in result["warnings"]), result["warnings"]
    assert_shows_turns(run.screen, out)
    assert f"verdict: {verdict}" in run.screen


def test_a_terminal_closed_mid_call_keeps_what_was_captured(tmp_path, scenario, agent_url):
    """The window is closed 8 s into the call: the session is hung up (SIGHUP), the call ends
    cleanly, and its bundle is written, marked degraded with the reason."""
    out = tmp_path / "c"
    steps = [(8.0, "close", Terminal.close)]
    run = on_tty(
        "call", agent_url, "--scenario", str(scenario), "-o", str(out), "--loopback-only",
        steps=steps, deadline_s=90,
    )  # fmt: skip
    assert run.code == 4, run.screen
    result = json.loads((out / "result.json").read_text())
    assert any("terminal closed" in d for d in result["degraded"]), result["degraded"]
    for name in ("caller.wav", "agent.wav", "transcript.json", "report.html"):
        assert (out / name).exists(), name
    assert (out / "agent.wav").stat().st_size > 50_000
