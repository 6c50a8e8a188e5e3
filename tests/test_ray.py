"""`bench --ray`: the fixtures of a suite on a local Ray and on a two-node Ray on this machine,
with results identical to a local run, and a worker killed mid-run losing nothing."""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, regression_suite, turnscope_exe

# A two-node cluster (4 CPUs declared on the runner's 2) with a bench and a load run: beside it
# another worker's live call sent its caller audio 264 ms late and failed as degraded
pytestmark = pytest.mark.solo

RAY = Path(sys.executable).with_name("ray")
# Ray's servers listen on every interface (and it looks for the machine's outside address): each
# Ray run here is in a network namespace of its own, where only the loopback exists.
NETNS = ["unshare", "--net", "--map-root-user", "sh", "-c", 'ip link set lo up && exec "$@"', "sh"]
Done = subprocess.CompletedProcess
ENV = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0", "RAY_worker_niceness": "0"}


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    """Three of the regression suite's synthetic fixtures (paths made absolute)."""
    return regression_suite(tmp_path_factory.mktemp("suite"), 3)


def _bench(
    suite: Path, runs: Path, *extra: str, timeout: float = 400
) -> subprocess.CompletedProcess:
    cmd = [*turnscope_exe(), "bench", str(suite), "-q", "--runs", str(runs), "-o",
           str(runs.with_suffix(".json")), *extra]  # fmt: skip
    if "--ray" in extra:
        cmd = [*NETNS, *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=ENV, cwd=ROOT)


def _turns(runs: Path) -> dict[str, list]:
    return {
        d.name: [(t["speaker"], t["start_ms"], t["end_ms"], t["text"])
                 for t in json.loads((d / "transcript.json").read_text())["turns"]]
        for d in sorted(runs.iterdir()) if (d / "transcript.json").exists()
    }  # fmt: skip


def _rows(runs: Path) -> dict[str, tuple]:
    result = json.loads(runs.with_suffix(".json").read_text())
    return {r["task_id"]: (r["verdict"], json.dumps(r["result"], sort_keys=True))
            for r in result["per_task"]}  # fmt: skip


@pytest.fixture(scope="module")
def local(suite, tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("local") / "runs"
    done = _bench(suite, runs, "--jobs", "1")
    assert done.returncode in (0, 1), done.stderr
    return runs


def test_a_local_ray_gives_the_local_results(suite, local, tmp_path):
    runs = tmp_path / "runs"
    done = _bench(suite, runs, "--ray", "--json")
    assert done.returncode in (0, 1), done.stderr
    assert _turns(runs) == _turns(local) and len(_turns(runs)) == 3
    assert _rows(runs) == _rows(local)
    # --json: the result document alone on stdout, where it ran on stderr
    assert json.loads(done.stdout)["per_task"] and "ray: 1 node(s)" in done.stderr


def test_a_bad_cluster_address_is_one_line(suite, tmp_path):
    done = _bench(suite, tmp_path / "runs", "--ray", "127.0.0.1:1", timeout=120)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "no Ray cluster at 127.0.0.1:1" in done.stderr
    done = _bench(suite, tmp_path / "runs", "--ray", "nonsense", timeout=60)
    assert done.returncode == 2 and "is not a cluster address" in done.stderr


TWO_NODES = """
set -e
ray start --head --num-cpus 2 --port 6379 --disable-usage-stats --include-dashboard=false \
  --temp-dir "$RAY_TMP" >/dev/null
ray start --address 127.0.0.1:6379 --num-cpus 2 --disable-usage-stats >/dev/null
set +e
"$@"
code=$?
ray stop --force >/dev/null 2>&1
exit $code
"""


class _Ref:
    def __init__(self, worker, task):
        self.worker, self.task = worker, task


class _Worker:
    """A fake worker that dies under the fixture ``die_on`` (or under its first, ``die_first``)
    and then refuses ``refusals`` probes while Ray restarts it."""

    def __init__(self, node: str, die_on: str | None = None, refusals: int = 0):
        self.node, self.die_on, self.refusals, self.ran = node, die_on, refusals, []
        self.down = False
        self.handed_while_down = 0
        outer = self

        class _Call:
            def __init__(self, probe: bool):
                self.probe = probe

            def remote(self, task=None):
                if not self.probe and outer.down:
                    outer.handed_while_down += 1
                return _Ref(outer, None if self.probe else task)

        self.run, self.where = _Call(False), _Call(True)


class _FakeRay:
    """ray.wait / ray.get over the fake workers: every call finishes at the next wait."""

    def wait(self, refs, num_returns, timeout):
        return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
        from types import SimpleNamespace

        from ray.exceptions import ActorUnavailableError, RayActorError

        w = ref.worker
        if ref.task is None:  # the probe of a restarting worker
            if w.refusals:
                w.refusals -= 1
                raise ActorUnavailableError("The actor is restarting.", None)
            w.down = False
            return w.node, "cpu"
        if w.die_on in (ref.task["id"], "*"):
            w.die_on, w.down = None, True  # it dies once, then Ray restarts it
            raise RayActorError()
        w.ran.append(ref.task["id"])
        return SimpleNamespace(scores=SimpleNamespace(verdict="pass"), task=ref.task), w.node


def test_fixtures_are_handed_to_the_least_loaded_worker_and_a_lost_one_is_retried(monkeypatch):
    from turnscope.distributed import fixtures
    from turnscope.distributed.fixtures import _dispatch

    monkeypatch.setattr(fixtures, "alive", lambda ray: True)  # one worker died, not the cluster

    tasks = [{"id": f"t{k}"} for k in range(9)]
    workers = [_Worker("a", die_on="t0"), _Worker("b"), _Worker("c")]
    seen = []
    run = _dispatch(_FakeRay(), tasks, None, workers, lambda p: seen.append((p.done, p.retried)))
    assert sorted(t for w in workers for t in w.ran) == [t["id"] for t in tasks]  # each once
    assert [r.task["id"] for r in run.runs] == [t["id"] for t in tasks]  # in suite order
    assert run.retried == 1 and seen[-1] == (9, 1)
    # spread evenly, but for the worker that died: handed nothing until it answered again
    assert sorted(run.per_node.values()) == [2, 3, 4] and workers[0].handed_while_down == 0


def test_every_worker_dying_at_once_is_waited_for_not_spent(monkeypatch):
    """All the workers killed together: their fixtures wait until a worker answers again
    (a restarting one refuses what it is handed), one attempt spent each, none void."""
    from turnscope.distributed import fixtures
    from turnscope.distributed.fixtures import _dispatch

    monkeypatch.setattr(fixtures, "alive", lambda ray: True)
    monkeypatch.setattr(fixtures, "REST_S", 0.01)
    tasks = [{"id": f"t{k}"} for k in range(6)]
    workers = [_Worker(n, die_on="*", refusals=3) for n in "ab"]
    run = _dispatch(_FakeRay(), tasks, None, workers, None)
    assert [r.task["id"] for r in run.runs] == [t["id"] for t in tasks]
    assert all(r.scores.verdict == "pass" for r in run.runs)
    assert run.retried == 2  # the two fixtures under the two deaths, once each
    assert sum(w.handed_while_down for w in workers) == 0


def test_a_signal_hands_out_nothing_more_and_tells_the_workers_to_stop():
    """Ctrl-C in the driver (a real SIGINT, after the first result): no fixture is handed out
    after it, each worker is told to stop (its fixtures under way end and come back, written),
    the fixtures never handed out are void "not run", and a worker dying after the signal is
    never retried."""
    from turnscope import interrupts
    from turnscope.distributed.fixtures import _dispatch
    from turnscope.scoring.suites.suite import SuiteTask

    class Ray(_FakeRay):
        waits = 0

        def wait(self, refs, num_returns, timeout):
            self.waits += 1
            if self.waits == 2:  # one result is in: the user presses Ctrl-C
                os.kill(os.getpid(), signal.SIGINT)
            return super().wait(refs, num_returns, timeout)

    told: list[str] = []

    class Stoppable(_Worker):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.stop = type("Stop", (), {"remote": lambda _, reason: told.append(reason)})()

    tasks = [SuiteTask.model_validate({"id": f"t{k}"}) for k in range(12)]  # as load_suite's
    workers = [Stoppable("a", die_on="t2"), Stoppable("b")]
    try:
        run = _dispatch(Ray(), tasks, None, workers, None)
        assert interrupts.received() == interrupts.REASONS[signal.SIGINT]
    finally:
        interrupts.reset()
    reason = interrupts.REASONS[signal.SIGINT]
    assert told == [reason, reason]  # each worker, once
    ids = [r.task.id if hasattr(r, "task") else r.scores.task_id for r in run.runs]
    assert ids == [t.id for t in tasks]  # every task, in suite order
    ran = sorted(t for w in workers for t in w.ran)
    handed = 2 * 4 + 1  # both workers full, one more for the first result; none after Ctrl-C
    void = {r.scores.task_id: r.scores.note for r in run.runs if r.scores.verdict == "void"}
    assert len(ran) + len(void) == 12 and len(ran) < handed, (ran, void)
    assert void["t2"].startswith(f"{reason}: its Ray worker ended")  # died after: not retried
    never = [t.id for t in tasks[handed:]]
    assert all(void[t] == f"not run: {reason}" for t in never), void
    assert run.retried == 0 and run.gone is None and run.lost == 0


def test_ctrl_c_during_a_bench_on_ray_keeps_what_ran_and_says_so(tmp_path):
    """`bench --ray` interrupted once the first fixture has begun: the fixtures under way end
    and are written (each bundle valid: scored whole, or void for a replay cut short), those
    never handed out are void "not run", the scorecard is written, one error line, exit 4 (it
    exited 130 with "interrupted" alone, no scorecard, and half-written bundles of two files)."""
    from turnscope.scoring.evidence.validate import validate_bundle

    suite = regression_suite(tmp_path, 6)
    runs = tmp_path / "runs"
    cmd = [*NETNS, *turnscope_exe(), "bench", str(suite), "-q", "--runs", str(runs), "-o",
           str(tmp_path / "out" / "bench.json"), "--ray"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, env=ENV, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    began = time.monotonic()
    while not list(runs.glob("*/caller.wav")) and time.monotonic() - began < 300:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 4 and "Traceback" not in err, (out, err)
    errors = [x for x in err.splitlines() if x.startswith("turnscope: error:")]
    assert len(errors) == 1 and "interrupted by the user (Ctrl-C):" in errors[0], err
    rows = json.loads((tmp_path / "out" / "bench.json").read_text())["per_task"]
    assert len(rows) == 6 and (tmp_path / "out" / "bench.scorecard.json").is_file()
    never = [r for r in rows if "not run: interrupted by the user (Ctrl-C)" in str(r)]
    assert never, rows  # one worker takes 4 at once: the rest were never handed out
    for r in never:
        assert r["verdict"] == "void" and not (runs / r["task_id"]).exists()
    ran = [r for r in rows if r not in never]
    assert ran
    for r in ran:
        assert r["verdict"] != "void" or "interrupted by the user (Ctrl-C)" in r["error"], r
        assert validate_bundle(runs / r["task_id"]) == [], r["task_id"]


def _kill(pattern: str, ready, *, every: bool = False) -> None:  # type: ignore[no-untyped-def]
    """Once ``ready()`` holds, SIGKILL the first process whose command line has ``pattern``
    (``every``: each of them)."""
    deadline = time.monotonic() + 400
    while time.monotonic() < deadline and not ready():
        time.sleep(0.1)
    ps = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    pids = [int(p) for p in ps.stdout.split()]
    for pid in pids if every else pids[:1]:
        os.kill(pid, signal.SIGKILL)


def _one_done_one_running(runs: Path) -> bool:
    """A fixture's bundle is finished and another's is still being written."""
    folders = [d for d in runs.glob("*") if d.is_dir()]
    done = [d for d in folders if (d / "transcript.json").exists()]
    return bool(done) and len(done) < len(folders)


@pytest.fixture(scope="module")
def two_nodes(suite, tmp_path_factory):
    """One two-node cluster (2 CPUs each, `ray start`, token authentication) in its own network
    namespace, for three drivers in turn: a bench without the token; a bench with a fixture
    worker killed after the first bundle; a load run from every loop, one killed mid-call."""
    from tests.test_load import SCENARIO

    tmp = tmp_path_factory.mktemp("two-nodes")
    runs, out = tmp / "runs", tmp / "load"
    scenario = tmp / "load-test.yaml"
    scenario.write_text(SCENARIO)
    home = tmp / "home"
    home.mkdir()
    exe = " ".join(turnscope_exe())
    bench = (f"{exe} bench {suite} -q --runs {runs} -o {runs.with_suffix('.json')} "
             "--ray 127.0.0.1:6379")  # fmt: skip
    script = f"""
HOME={home} env -u RAY_AUTH_MODE -u RAY_AUTH_TOKEN_PATH {bench} >/dev/null 2>{tmp}/tokenless.err
echo $? >{tmp}/tokenless.rc
{bench} >{tmp}/bench.out 2>{tmp}/bench.err
echo $? >{tmp}/bench.rc
{exe} agent --port 18311 --scenario {scenario} >/dev/null 2>&1 & agent=$!
sleep 3
{exe} load http://127.0.0.1:18311/api/offer --loopback-only --scenario {scenario} --calls 4 \
  --rate 4 -q -o {out} --ray 127.0.0.1:6379 >{tmp}/load.out 2>{tmp}/load.err
echo $? >{tmp}/load.rc
kill "$agent"
"""
    # Every fixture worker is killed while a fixture is still running: the one that ran a
    # single short fixture may be idle by then, and killing only it would lose nothing to retry
    killers = [
        threading.Thread(target=_kill, args=("ray::FixtureWorker", lambda: _one_done_one_running(
            runs) or (tmp / "bench.rc").exists()), kwargs={"every": True}),
        threading.Thread(target=_kill, args=(
            "ray::LoadWorker", lambda: len(list(out.glob("calls/*/caller.wav"))) >= 4
            and time.sleep(2.0) is None)),
    ]  # fmt: skip
    for k in killers:
        k.start()
    temp = tempfile.mkdtemp(prefix="ray")  # short: Ray's socket paths must fit 107 bytes
    token = Path(temp) / "token"  # a cluster started by `ray start` wants token authentication
    token.write_text(secrets.token_hex(32))
    env = {**ENV, "PATH": f"{RAY.parent}:{ENV['PATH']}", "RAY_TMP": temp,
           "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": str(token)}  # fmt: skip
    subprocess.run([*NETNS[:3], "sh", "-c", "ip link set lo up\n" + TWO_NODES, "sh", "sh", "-c",
                    script], capture_output=True, text=True, timeout=900, env=env,
                   cwd=ROOT)  # fmt: skip
    for k in killers:
        k.join()

    def read(name: str) -> str:
        path = tmp / name
        return path.read_text() if path.exists() else ""

    return {"runs": runs, "load": out, "read": read, "token": token.read_text()}


def test_a_driver_without_the_clusters_token_is_one_line(two_nodes):
    err = two_nodes["read"]("tokenless.err")
    assert two_nodes["read"]("tokenless.rc").strip() == "2", err
    assert err.count("\n") == 1 and "wants its authentication token" in err
    assert two_nodes["token"] not in err


def test_two_nodes_share_the_fixtures_and_a_killed_worker_loses_nothing(two_nodes, local):
    read, runs = two_nodes["read"], two_nodes["runs"]
    assert read("bench.rc").strip() in ("0", "1"), read("bench.err")
    assert _turns(runs) == _turns(local)  # every fixture, once, as locally
    assert _rows(runs) == _rows(local)
    line = next(x for x in read("bench.out").splitlines() if x.startswith("ray: "))
    assert "2 node(s)" in line
    counts = [int(part.rsplit(":", 1)[1]) for part in line.split("per node: ")[1].split(";")[:2]]
    assert len(counts) == 2 and sum(counts) == 3, line  # which node ran what moves with the kill
    assert "retried 0" not in line, line


def test_load_from_two_nodes_spreads_the_calls_and_a_killed_loop_is_reported(two_nodes):
    """4 calls from the two nodes (a loop per CPU) against the reference agent; one loop is
    killed mid-call: its call is reported lost, the run degraded, the rest kept."""
    read, out = two_nodes["read"], two_nodes["load"]
    assert read("load.rc").strip() == "4", read("load.out") + read("load.err")
    r = json.loads((out / "load.json").read_text())
    nodes = {w.split("#")[0] for w in r["per_worker"]}
    assert len(nodes) == 2 and r["loops"] == 4, r["per_worker"]  # both nodes placed calls
    assert r["completed"] == 3 and r["failures"]["not_run"] == {"worker lost": 1}
    assert any("did not run" in d for d in r["degraded"])
    assert "died" in read("load.err") and "Traceback" not in read("load.err")
    for c in r["calls"]:
        assert (out / "calls" / f"call-{c['slot'] + 1:04d}" / "caller.wav").exists()
    assert r["latency_ms"]["n"] >= 6


def test_a_gpu_node_runs_the_gpu_settings_on_one_worker_per_gpu(tmp_path):
    """asr.on_gpu: the first worker of each GPU of a node is given the GPU and runs faster-whisper
    there (cuda, float16, the larger model); the others, and every CPU node, keep the CPU path."""
    from turnscope.asr.settings import Settings, load_settings
    from turnscope.distributed.cluster import Node
    from turnscope.distributed.fixtures import _start_workers

    started = []

    class _Remote:
        def options(self, **kw):
            return type("O", (), {"remote": lambda _s, *a: started.append((kw, a))})()

    fake = type("R", (), {"remote": staticmethod(lambda cls: _Remote())})()
    gpu = {"asr": {"on_gpu": {"compute_type": "float16", "model": str(tmp_path)}}}
    settings = load_settings().with_overrides(gpu)
    nodes = [Node("a" * 56, "10.0.0.1", 4, 1), Node("b" * 56, "10.0.0.2", 2, 0)]
    _start_workers(fake, nodes, settings, None, tmp_path, {})
    runs = [(kw["num_gpus"], Settings.model_validate_json(a[0]).asr) for kw, a in started]
    assert [g for g, _ in runs] == [1, 0, 0]  # 4 CPUs / 2 threads: two workers, then one
    assert (runs[0][1].device, runs[0][1].compute_type, runs[0][1].model) == (
        "cuda", "float16", str(tmp_path))  # fmt: skip
    assert all(asr.device == "cpu" and asr.model == "tiny.en" for _, asr in runs[1:])
    started.clear()
    _start_workers(fake, nodes, load_settings(), None, tmp_path, {})  # no on_gpu: CPU only
    assert [kw["num_gpus"] for kw, _ in started] == [0, 0, 0]


def test_a_model_that_cannot_load_on_cuda_is_one_line():
    from turnscope.asr.model import ModelSpec, load_whisper
    from turnscope.errors import EnvironmentProblem

    with pytest.raises(EnvironmentProblem, match="cannot load the Whisper model on cuda"):
        load_whisper(ModelSpec(device="cuda", compute_type="float16"))


def test_a_cluster_that_goes_away_voids_what_did_not_run_and_keeps_what_did(monkeypatch):
    from turnscope.distributed import fixtures
    from turnscope.distributed.cluster import GONE
    from turnscope.distributed.fixtures import _dispatch

    monkeypatch.setattr(fixtures, "alive", lambda ray: False)
    from turnscope.scoring.suites.suite import SuiteTask

    tasks = [SuiteTask.model_validate({"id": f"t{k}"}) for k in range(9)]  # as load_suite's
    workers = [_Worker("a", die_on="t4"), _Worker("b")]
    run = _dispatch(_FakeRay(), tasks, None, workers, None)
    ran = sorted(t for w in workers for t in w.ran)
    assert run.gone and run.gone.startswith(GONE) and len(run.runs) == 9
    void = [r for r in run.runs if getattr(r, "scores", None) and r.scores.verdict == "void"]
    assert len(ran) + len(void) == 9 and "t4" not in ran and len(ran) >= 4
    assert all(GONE in r.scores.note for r in void)
    assert run.lost == len(void)  # counted where they were voided, never read from the note


def test_a_node_without_the_project_or_the_model_is_named_and_the_rest_run():
    """A worker whose node cannot import turnscope (or load the model) fails its start: with
    others up, a line says so and the run goes on; with none, one line names the fix."""
    from turnscope.distributed.cluster import started
    from turnscope.errors import EnvironmentProblem

    class Ray:
        def __init__(self, fails: set[str]) -> None:
            self.fails = fails

        def wait(self, pending, num_returns, timeout):
            return pending[:1], pending[1:]

        def get(self, ref):
            if ref in self.fails:
                raise RuntimeError("ModuleNotFoundError: No module named 'turnscope'")
            return f"{ref} ready"

    refs = {"r1": "worker-1", "r2": "worker-2"}
    ok, problems = started(Ray({"r2"}), refs)
    assert ok == [("worker-1", "r1 ready")]
    assert problems == ["ModuleNotFoundError: No module named 'turnscope'"]
    with pytest.raises(EnvironmentProblem) as err:
        started(Ray({"r1", "r2"}), refs)
    msg = str(err.value)
    assert "no Ray worker could start" in msg and "No module named 'turnscope'" in msg
    assert "install turnscope and its model on every node" in msg
