"""Bounded resources (issue 34): a run cancelled while its script is spoken stops speaking at
once with its bundle written; a line too long to synthesise is one line naming its key; network
waits end in one line (a Ray address and an object store that take the connection and never
answer, an agent that never answers the offer); scoring is near-linear in turns with the
verifier's numbers unchanged; a long call's report never reads its audio whole.
(benchmarks/memory.py measures the times and peaks; nothing here is timed but the promptness
of an exit that used to take minutes.)"""

from __future__ import annotations

import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT, STARTER, regression_suite, turnscope_exe
from turnscope.errors import EnvironmentProblem, InputError
from turnscope.scoring.verifier import score_voice_episode, verifier_facts

# --- a peer that takes the connection and never answers --------------------------------------


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A TCP port on 127.0.0.1 that accepts connections, reads nothing and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join(5)
    for conn in held:
        conn.close()
    server.close()


def _one_line(stderr: str) -> str:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


# --- scoring: the contract's rule, near-linear --------------------------------------------------


def _pairwise(turns: list[dict]) -> tuple[list[tuple[int, int, bool, int | None]], list[int]]:
    """The contract's overlap rule read literally: every agent turn against every caller turn,
    both in list order."""
    t = [
        (str(x.get("speaker")), int(x.get("start_ms", 0)), int(x.get("end_ms", 0)),
         bool(x.get("interrupt", False)))
        for x in turns
    ]  # fmt: skip
    found, harmful = [], []
    for ai, (sa, a0, a1, _) in enumerate(t):
        if sa != "agent":
            continue
        over = [
            ci for ci, (sc, c0, c1, _) in enumerate(t) if sc == "caller" and c0 < a1 and c1 > a0
        ]
        for ci in over:
            found.append((ci, ai, t[ci][3], a1 - t[ci][1] if t[ci][3] else None))
        if over and not any(t[ci][3] for ci in over):
            harmful.append(ai)
    return found, harmful


def test_overlaps_are_the_contracts_pairs_for_any_times():
    """Random dialogues with every oddity the contract allows (times out of order, end before
    start, equal edges, other speakers, missing fields): the same pairs, in the same order, as
    the rule read pair by pair."""
    rng = random.Random(34)
    for _ in range(2000):
        turns = []
        for _ in range(rng.randint(0, 24)):
            start = rng.randint(-50, 300)
            turn = {
                "speaker": rng.choice(["caller", "agent", "agent", "caller", "system"]),
                "start_ms": start,
                "end_ms": start + rng.randint(-60, 200),
                "interrupt": rng.random() < 0.4,
            }
            if rng.random() < 0.05:
                del turn["start_ms"]
            turns.append(turn)
        facts = verifier_facts(turns)
        found, harmful = _pairwise(turns)
        assert [(o.caller, o.agent, o.interrupt, o.yield_ms) for o in facts.overlaps] == found
        assert list(facts.harmful) == harmful
        met = {o.caller for o in facts.overlaps}
        assert list(facts.unmet_interrupts) == [
            i for i, t in enumerate(turns)
            if t["speaker"] == "caller" and t["interrupt"] and i not in met
        ]  # fmt: skip
        for i in range(len(turns)):
            assert facts.gap_of(i) == next((g for g in facts.gaps if g.agent == i), None)
            assert facts.barge_ins_of(i) == tuple(o for o in facts.barge_ins if o.caller == i)


def test_64k_turns_score_as_their_small_call_repeated(cli, tmp_path):
    """The starter task's reference dialogue (a reply in budget, a barge-in the agent yields to)
    repeated 16,000 times, a minute apart: 64,000 turns scored by `turnscope score` with the
    small call's components and verdict, and every pair counted 16,000 times."""
    small = json.loads(STARTER.read_text())["tasks"][0]["reference_dialogue"]
    copies = 16_000
    big = [
        {**t, "start_ms": t["start_ms"] + k * 60_000, "end_ms": t["end_ms"] + k * 60_000}
        for k in range(copies)
        for t in small
    ]
    path = tmp_path / "long.json"
    path.write_text(json.dumps(big))
    code, out, err = cli("score", str(path), "--require", "refund", "--json")
    expected = score_voice_episode(small, required_content=["refund"])
    assert code == 0, err
    got = json.loads(out)
    assert got["result"] == expected["result"]
    assert got["raw"] == {**expected["raw"], "turns": len(big)}
    one, many = verifier_facts(small), verifier_facts(big)
    assert len(many.gaps) == copies * len(one.gaps)
    assert len(many.overlaps) == copies * len(one.overlaps)
    assert len(many.barge_ins) == copies * len(one.barge_ins)


def test_assembly_flags_barge_ins_by_the_rule_without_pairing_every_turn():
    """Turn assembly (rebuilt as each utterance is heard) flags a caller turn that starts while
    an agent turn is in progress, found by bisection: the same flags as every caller turn
    against every agent turn, on random overlapping calls."""
    from tests.test_assembly import heard
    from turnscope.asr.assembly import assemble
    from turnscope.asr.settings import load_settings

    cfg = load_settings().assembly
    rng = random.Random(34)
    texts = ["mm-hmm", "yeah", "wait", "no, hold on", "I want a refund", "Sure. Thirty days.", ""]
    flagged = 0
    for _ in range(400):
        utterances = []
        for _ in range(rng.randint(0, 12)):
            t, spans = rng.randint(0, 20_000), []
            for _ in range(rng.randint(1, 3)):
                d = rng.randint(100, 2000)
                spans.append((t, t + d))
                t += d + rng.randint(50, 900)
            utterances.append(heard(rng.choice(["caller", "agent"]), spans, rng.choice(texts)))
        turns = assemble(utterances, cfg).turns
        agents = [a for a in turns if a.speaker == "agent"]
        for t in turns:
            rule = t.speaker == "caller" and any(a.start_ms < t.start_ms < a.end_ms for a in agents)
            assert t.interrupt == rule
            flagged += t.interrupt
    assert flagged > 50  # the calls did overlap


# --- synthesis: bounded lines, stopped with the run -------------------------------------------


def test_a_line_too_long_to_synthesise_is_one_line_naming_its_key(tmp_path, cli):
    from turnscope.actors.caller.fields import MAX_LINE_CHARS
    from turnscope.actors.caller.scenario_file import load_scenario

    words = " ".join(["word"] * 10_000)  # 2.4 GB to synthesise before the bound
    path = tmp_path / "long-line.yaml"
    path.write_text(f"name: long\nscript:\n  - agent: Hello.\n  - caller: {words}\n")
    with pytest.raises(InputError) as err:
        load_scenario(path)
    assert "script[1].caller" in str(err.value) and str(MAX_LINE_CHARS) in str(err.value)
    code, _, stderr = cli("synth", str(path), "-o", str(tmp_path / "out"))
    assert code == 2 and "script[1].caller" in _one_line(stderr)
    assert len(stderr) < 400
    assert not (tmp_path / "out").exists()


def _descendants(pid: int, name: str) -> list[int]:
    """The processes called ``name`` below ``pid`` (children, grandchildren ...)."""
    parent: dict[int, int] = {}
    comm: dict[int, str] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        p = int(stat.parent.name)
        comm[p] = text[text.index("(") + 1 : text.rindex(")")]
        parent[p] = int(text[text.rindex(")") + 2 :].split()[1])

    def below(p: int) -> bool:
        while p in parent and p > 1:
            p = parent[p]
            if p == pid:
                return True
        return False

    return [p for p, c in comm.items() if c == name and below(p)]


@pytest.fixture
def long_script(tmp_path) -> Path:
    """3000 caller lines: a minute of synthesis."""
    script = ["name: long-script", "script:", "  - agent: Hello, how can I help you today?"]
    script += [
        f"  - caller: Line {i} of a very long scripted call, spoken by the caller to keep "
        "espeak busy for a while, with enough words to take a moment."
        for i in range(3000)
    ]
    scenario = tmp_path / "long-script.yaml"
    scenario.write_text("\n".join(script) + "\n")
    return scenario


def _sigterm_once_speaking(cmd: list[str]) -> tuple[subprocess.Popen, str, float]:
    """Start ``cmd``; once an espeak-ng of its own (or of its workers) is at work, SIGTERM it:
    the process, its stderr and how long it took to exit after the signal."""
    proc = subprocess.Popen(
        cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 60
        while not _descendants(proc.pid, "espeak-ng"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "espeak-ng never started"
            time.sleep(0.05)
        time.sleep(0.5)  # well into the script
        proc.send_signal(signal.SIGTERM)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=60)
        return proc, stderr, time.monotonic() - sent
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def test_sigterm_while_the_script_is_spoken_stops_speaking_and_writes_the_bundle(
    tmp_path, long_script
):
    """SIGTERM once espeak-ng is at work: the process exits within seconds (it used to
    synthesise every line first, 73 s here) with the set-up failure's bundle written."""
    out = tmp_path / "call"
    proc, stderr, took = _sigterm_once_speaking(
        [*turnscope_exe(), "call", "http://127.0.0.1:9/api/offer", "--scenario",
         str(long_script), "-o", str(out), "-q"]
    )  # fmt: skip
    assert took < 20, f"exited {took:.0f} s after SIGTERM: synthesis went on"
    assert proc.returncode == 4, stderr
    line = _one_line(stderr)
    assert "terminated by SIGTERM while the call was being set up" in line
    result = json.loads((out / "result.json").read_text())
    assert result["verdict"] == "error"
    assert (out / "voice_artifact_manifest.json").exists()


def test_sigterm_while_load_workers_speak_the_script_stops_them(tmp_path, long_script):
    """`turnscope load`: each worker speaks the script before its first call; SIGTERM then
    stops every worker's synthesis, and the run says what did not run."""
    out = tmp_path / "load"
    proc, stderr, took = _sigterm_once_speaking(
        [*turnscope_exe(), "load", "http://127.0.0.1:9/api/offer", "--scenario",
         str(long_script), "-o", str(out), "-q", "--calls", "2"]
    )  # fmt: skip
    assert took < 20, f"exited {took:.0f} s after SIGTERM: the workers went on"
    assert proc.returncode == 4, stderr
    assert "terminated by SIGTERM" in _one_line(stderr)
    report = json.loads((out / "load.json").read_text())
    assert report["completed"] == 0


# --- network waits --------------------------------------------------------------------------


def test_an_agent_that_never_answers_the_offer_is_one_line_with_the_bundle(tmp_path, silent_port):
    out = tmp_path / "call"
    done = subprocess.run(
        [*turnscope_exe(), "call", f"http://127.0.0.1:{silent_port}/api/offer", "--scenario",
         str(ROOT / "configs" / "scenarios" / "quick-exchange.yaml"), "-o", str(out), "-q",
         "--connect-timeout", "1"],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert "did not answer within 1 s" in _one_line(done.stderr)
    assert json.loads((out / "result.json").read_text())["verdict"] == "error"


def test_a_ray_address_that_never_answers_is_one_line(silent_port, monkeypatch):
    from turnscope.distributed.cluster import _probe

    monkeypatch.setenv("TURNSCOPE_NETWORK_TIMEOUT_S", "0.5")
    with pytest.raises(EnvironmentProblem) as err:
        _probe(f"127.0.0.1:{silent_port}")
    assert f"no Ray cluster at 127.0.0.1:{silent_port}" in str(err.value)
    assert "said nothing for 0.5 s" in str(err.value)


def test_a_ray_address_that_answers_something_else_is_one_line(tmp_path):
    """A web server at the address: not Ray, said at once."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def answer() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(64)
            conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")

    thread = threading.Thread(target=answer, daemon=True)
    thread.start()
    from turnscope.distributed.cluster import _probe

    try:
        with pytest.raises(EnvironmentProblem) as err:
            _probe(f"127.0.0.1:{server.getsockname()[1]}")
        assert "did not answer as Ray does" in str(err.value)
    finally:
        thread.join(5)
        server.close()


def test_bench_on_a_ray_address_that_never_answers_is_one_line(tmp_path, silent_port):
    suite = regression_suite(tmp_path, 1)
    env = {**os.environ, "TURNSCOPE_NETWORK_TIMEOUT_S": "1", "RAY_USAGE_STATS_ENABLED": "0"}
    done = subprocess.run(
        [*turnscope_exe(), "bench", str(suite), "-q", "--ray", f"127.0.0.1:{silent_port}",
         "-o", str(tmp_path / "r.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "said nothing for 1 s" in _one_line(done.stderr)
    assert not (tmp_path / "runs").exists()  # the bundles' folder it made is not left empty


def test_an_object_store_that_never_answers_is_one_line(tmp_path, silent_port):
    """The bucket check before anything runs: one line within the network timeout (botocore
    waits 60 s a try, s3fs tries five times, and an upload's 100-continue had no bound)."""
    suite = regression_suite(tmp_path, 1)
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{silent_port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TURNSCOPE_NETWORK_TIMEOUT_S": "0.5",
    }
    done = subprocess.run(
        [*turnscope_exe(), "bench", str(suite), "-q", "--runs", "s3://evals/nightly",
         "-o", str(tmp_path / "r.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    line = _one_line(done.stderr)
    assert "cannot write to s3://evals/nightly: the store did not answer" in line
    assert "testing-secret-key" not in done.stderr


def test_a_network_timeout_that_is_not_a_number_is_bad_input(monkeypatch):
    from turnscope.timeouts import network_timeout_s

    monkeypatch.delenv("TURNSCOPE_NETWORK_TIMEOUT_S", raising=False)
    assert network_timeout_s(5.0) == 5.0
    for bad in ("soon", "0", "-1", "nan", "inf"):
        monkeypatch.setenv("TURNSCOPE_NETWORK_TIMEOUT_S", bad)
        with pytest.raises(InputError, match="TURNSCOPE_NETWORK_TIMEOUT_S"):
            network_timeout_s(5.0)
    monkeypatch.setenv("TURNSCOPE_NETWORK_TIMEOUT_S", "2.5")
    assert network_timeout_s(5.0) == 2.5


# --- a long call's report --------------------------------------------------------------------


def _silence(path: Path, seconds: float, rate: int = 16000) -> None:
    with sf.SoundFile(path, "w", rate, 1, subtype="PCM_16") as f:
        block = np.zeros(rate * 60, np.int16)
        left = int(seconds * rate)
        while left > 0:
            f.write(block[: min(left, len(block))])
            left -= len(block)


def _traced_peak(fn) -> tuple[object, int]:
    tracemalloc.start()
    try:
        value = fn()
        return value, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_call_too_long_to_embed_is_never_read(tmp_path):
    """21 minutes per channel (2 x 81 MB as float samples): no audio embedded, and the
    samples never read (a 3-hour replay peaked at 1.4 GB reading them whole)."""
    from turnscope.scoring.report import listen

    for name in ("caller.wav", "agent.wav"):
        _silence(tmp_path / name, 21 * 60)
    data, peak = _traced_peak(lambda: listen.opus_of(tmp_path))
    assert data is None
    assert peak < 2_000_000


def test_a_call_that_is_embedded_is_encoded_block_by_block(tmp_path):
    """Two minutes a side of unequal length: all of it in the Opus (the shorter padded), and
    never more than a few blocks in memory at once."""
    import io

    import av

    from turnscope.scoring.report import listen

    rate = 16000
    rng = np.random.default_rng(0)
    sf.write(tmp_path / "caller.wav", 0.1 * rng.standard_normal(rate * 120), rate,
             subtype="PCM_16")  # fmt: skip
    sf.write(tmp_path / "agent.wav", 0.1 * rng.standard_normal(rate * 100 + 123), rate,
             subtype="PCM_16")  # fmt: skip
    data, peak = _traced_peak(lambda: listen.opus_of(tmp_path))
    assert data
    # Read whole: 2 x 7.7 MB of float samples and 7.7 MB of int16; by blocks, about 1 MB.
    assert peak < 5_000_000
    with av.open(io.BytesIO(data)) as container:
        stream = container.streams.audio[0]
        assert stream.channels == 2
        samples = sum(frame.samples for frame in container.decode(stream))
    assert abs(samples / 48000 - 120.0) < 0.1  # Opus decodes at 48 kHz
