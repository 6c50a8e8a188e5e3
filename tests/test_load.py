"""`turnscope load`: many scripted calls at once, each a full bundle, and their aggregate.

- the plan, the aggregate's percentiles, windows, failure kinds and degraded reasons (no loop);
- real WebRTC calls against the reference agent in its own process with a configured latency:
  every call completes with its bundle, callers redial through --duration, and the reply
  latency is reported at p50 and p99 within the bounds benchmarks/scale.py measures; at the
  same time, calls on a phone line (turnscope playing the carrier) through the same path;
- the stock pipecat bot (its own VAD and interruptions) under the same load path;
- an agent that is not there: every call a set-up failure of kind "unreachable", exit 1;
- Ctrl-C mid-run: the live calls end and are written, the run says it was interrupted, exit 4.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port, reference_agent, turnscope_exe
from turnscope.load.plan import LoadPlan, overload
from turnscope.load.record import CallRecord, Reply
from turnscope.load.report import aggregate, degraded_calls_line, missing_slots
from turnscope.scoring.turn_taking import YIELD_MS

LATENCY_MS = 600
# What the caller hears beyond the agent's configured latency on loopback (the jitter buffer,
# packetisation, the agent's own end-of-speech wait): benchmarks/scale.py measures 175-178 ms
# (2026-12-02). The spread across calls and replies stays within a few tens of ms on a quiet
# machine; with six calls and the agent sharing two cores beside another test worker it was 82 ms
# in a fresh-clone CI run (the agent's own replies come later under load, the harness not late).
# A wrong reference point (a reply timed from the wrong turn) scatters by hundreds of ms.
EAR_EXTRA_MS = (100, 320)
MAX_SPREAD_MS = 150

SCENARIO = f"""
name: load-test
task: {{budgets: {{max_latency_ms: 2000}}}}
caller: {{voice: en-us, timeout_s: 40, hangup_after_ms: 400}}
agent: {{voice: en-gb, latency_ms: {LATENCY_MS}, yield_ms: 100}}
script:
  - caller: Hi, I need help with my order.
  - agent: Sure, what is the order number?
  - caller: It is four two seven.
  - agent: Thanks, I found it. It ships tomorrow morning, and you will get an email with the
      tracking number as soon as it leaves.
  - caller: wait
    barge_in_at: early
  - agent: Yes?
"""


def _record(slot: int, status: str = "completed", **kw) -> CallRecord:
    base = {"planned_s": slot * 0.5, "placed_s": slot * 0.5, "connected_s": slot * 0.5 + 0.05}
    return CallRecord(slot=slot, status=status, worker=f"loop-{slot % 2 + 1}", **{**base, **kw})


# --- the plan and the aggregate ------------------------------------------------------------------


def test_the_plan_ramps_and_deals_the_callers_evenly():
    plan = LoadPlan(calls=5, rate=2)
    assert [s.offset_s for s in plan.slots()] == [0, 0.5, 1.0, 1.5, 2.0]
    shares = plan.split(2)
    assert [[s.index for s in sh] for sh in shares] == [[0, 2, 4], [1, 3]]
    assert len(LoadPlan(calls=2, rate=1).split(8)) == 2  # never an empty loop
    assert overload(16, 2) is None and "--ray" in (overload(200, 2) or "")


def test_the_aggregate_counts_what_each_call_measured(capsys):
    replies = [Reply(at_ms=1000 + 100 * k, latency_ms=800 + k) for k in range(10)]
    records = [
        _record(0, replies=replies[:5], ended_s=20.0, barge_in_yields_ms=[300.0]),
        _record(
            1,
            replies=replies[5:],
            ended_s=20.0,
            unanswered=1,
            barge_ins_planned=1,
            degraded_codes=["audio_lost_in_turns", "audio_lost_in_turns"],
        ),
        _record(2, "setup_failed", kind="unreachable", connected_s=None),
        _record(3, "dropped", kind="agent went silent", ended_s=8.0),
    ]
    r = aggregate(records, LoadPlan(calls=4, rate=2), target="u", transport="webrtc",
                  scenario="s", loops=2, where="here", wall_s=21.0)  # fmt: skip
    assert r.latency_ms.n == 10 and r.latency_ms.p50 == 804.5 and r.latency_ms.max == 809
    assert r.barge_in_yield_ms.p99 == 300 and r.unanswered_turns == 1
    assert r.failures == {"dropped": {"agent went silent": 1}, "setup_failed": {"unreachable": 1}}
    assert r.failed == 2 and r.completed == 2 and not r.degraded
    assert r.harness.max_calls_up == 3 and r.per_worker == {"loop-1": 2, "loop-2": 2}
    assert sum(w.latency_ms.n for w in r.latency_over_time) == 10
    # A call whose own evidence is degraded: counted by code (once a call), said in one line.
    assert r.calls_degraded == {"audio_lost_in_turns": 1}
    assert degraded_calls_line(r).startswith("evidence degraded in 1 of 4 call(s): "
                                             "audio_lost_in_turns 1")  # fmt: skip
    # A planned barge-in that never happened is a warning in the terminal, not a count alone.
    from turnscope.cli.load_tables import print_load

    print_load(r)
    err = " ".join(capsys.readouterr().err.split())
    assert "warning: 1 of the 1 barge-ins planned in completed calls were not exercised" in err


def test_replies_after_caller_audio_sent_late_are_told_apart(capsys):
    from turnscope.load.record import lag_at

    late = [(4900.0, 35.0), (5010.0, 60.0), (9000.0, 90.0)]
    assert lag_at(late, 5000.0) == 60.0  # the worst around that turn's end
    assert lag_at(late, 7000.0) == 0.0
    replies = [Reply(at_ms=1, latency_ms=800, caller_lag_ms=0), Reply(at_ms=2, latency_ms=900,
               caller_lag_ms=60)]  # fmt: skip
    r = aggregate([_record(0, replies=replies, ended_s=5.0, caller_late_frames=2)],
                  LoadPlan(calls=1, rate=1), target="u", transport="webrtc", scenario="s",
                  loops=1, where="here", wall_s=6.0)  # fmt: skip
    assert r.latency_ms.n == 2 and r.latency_on_time_ms.n == 1 and r.latency_on_time_ms.p50 == 800
    (late,) = [w for w in r.warnings if "on time" in w]
    # Said on the terminal and on the page too, not only in load.json.
    from turnscope.cli.load_tables import print_load
    from turnscope.load.html import render

    print_load(r)
    assert late in " ".join(capsys.readouterr().err.split())  # a warning, on stderr
    assert late in render(r)


def test_calls_placed_late_or_never_make_the_run_degraded():
    plan = LoadPlan(calls=3, rate=1)
    late = _record(0, placed_s=2.5, planned_s=0.0)
    busy = _record(
        1,
        degraded=["the caller's audio went out up to 400 ms late (...)"],
        caller_max_send_lag_ms=400.0,
    )
    records = [late, busy]
    records += missing_slots(records, plan, "loop-2 died (exit code -9)", {2: "loop-2"})
    r = aggregate(records, plan, target="u", transport="webrtc", scenario="s", loops=2,
                  where="here", wall_s=5.0)  # fmt: skip
    assert r.failures["not_run"] == {"worker lost": 1}
    assert r.harness.calls_placed_late == 1 and r.harness.calls_caller_audio_late == 1
    text = " ".join(r.degraded)
    assert "placed more than 1 s after" in text and "overloaded" in text and "did not run" in text


# --- real calls -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def scenario(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("load") / "load-test.yaml"
    path.write_text(SCENARIO)
    return path


@pytest.fixture(scope="module")
def agent_url(scenario):
    with reference_agent(scenario) as url:
        yield url


def _load(url: str, scenario: Path, out: Path, *extra: str, timeout: float = 240):
    cmd = [*turnscope_exe(), "load", url, "--scenario", str(scenario), "-o", str(out), "-q",
           *extra]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def _report(out: Path) -> dict:
    return json.loads((out / "load.json").read_text())


def _assert_latency_bounds(r: dict) -> None:
    """The median reply within what the agent was told plus the ear's extra; the tail too, or,
    where the agent itself ran late (the reference agent serving 6 calls on 2 cores beside
    another test worker: p99 965 ms in a CI run), by its own account: then each reply of the
    tail is split and its last hop (the agent's start of speaking to the caller hearing it:
    transport and the harness) stays within the ear's extra, so the tail is the agent's, not a
    mispaired turn; or unsplit because the agent's own start of speaking came later than its
    audio (a busy agent's RTVI message: scoring/latency.py says so), which places it there too."""
    lat = r["latency_ms"]
    lo, hi = LATENCY_MS + EAR_EXTRA_MS[0], LATENCY_MS + EAR_EXTRA_MS[1]
    assert lo <= lat["p50"] <= hi, lat
    if lat["p99"] <= hi and lat["p99"] - lat["p50"] <= MAX_SPREAD_MS:
        return
    tail_from = min(hi, lat["p50"] + MAX_SPREAD_MS)
    replies = [x for c in r["calls"] if c["status"] == "completed"
               for x in _result(c)["latency_breakdown"]["replies"]]  # fmt: skip
    tail = [x for x in replies if x["latency_ms"] > tail_from]
    assert len(replies) == lat["n"] and tail, (lat, tail_from)
    for x in tail:
        assert _late(x["missing"]) if "missing" in x else x["unaccounted_ms"] <= EAR_EXTRA_MS[1], x
    assert all(_late(x["missing"]) for x in replies if "missing" in x), replies


def _late(missing: str) -> bool:
    """A reply unsplit because the agent's message came later than its audio: its start of
    speaking, or (a CI run: one reply of 669 ms) its turn decision."""
    return missing.startswith("the agent's ") and " came " in missing


def _result(call: dict) -> dict:
    return json.loads((Path(call["bundle"]) / "result.json").read_text())


def _assert_failed_only_by_a_late_yield(r: dict) -> None:
    """Each call that failed did so on its barge-in alone, the agent's yield measured over the
    verifier's 600 ms: the reference agent, starved of CPU as the first calls of a CI run came
    up beside another worker's tests, yielded late (650-740 ms; ~300 ms on a quiet machine).
    The harness measured the agent; a failure of anything else fails the test."""
    for c in r["calls"]:
        if c["passed"]:
            continue
        doc = _result(c)
        assert doc["failed_floors"] == ["barge_in"] and not doc["failures"], doc["failed_floors"]
        assert max(c["barge_in_yields_ms"]) > YIELD_MS, c


def test_load_over_webrtc_and_a_phone_line_reports_the_agents_latency(
    agent_url, scenario, tmp_path, cli
):
    """Two runs at once against the reference agent: 4 WebRTC callers dialling again through
    --duration, and 2 callers on a phone line (turnscope playing Twilio). A call takes ~11 s on a
    quiet machine; on a loaded CI runner none had redialled by 18 s, and on a slower one the first
    calls ended at 32-33 s (10.6 s of call, then their last turns' ASR, at idle priority then,
    behind the tests beside it): 45 s leaves time to redial."""
    web, phone = tmp_path / "web", tmp_path / "phone"
    ws = agent_url.replace("http://", "ws://").replace("/api/offer", "/ws")
    cmds = [
        [*turnscope_exe(), "load", agent_url, "--scenario", str(scenario), "-o", str(web), "-q",
         "--loopback-only", "--calls", "4", "--rate", "4/s", "--duration", "45"],
        [*turnscope_exe(), "load", ws, "--scenario", str(scenario), "-o", str(phone), "-q",
         "--transport", "twilio", "--calls", "2", "--rate", "2"],
    ]  # fmt: skip
    procs = [subprocess.Popen(c, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for c in cmds]  # fmt: skip
    outs = [p.communicate(timeout=240) for p in procs]
    for p, (stdout, stderr) in zip(procs, outs, strict=True):
        assert p.returncode in (0, 1), stdout + stderr  # 1: a call failed (checked below)
        assert "Traceback" not in stderr, stderr
    r = _report(web)
    assert r["completed"] == len(r["calls"]) and r["failures"] == {}, r["failures"]
    _assert_failed_only_by_a_late_yield(r)
    assert procs[0].returncode == (0 if r["passed"] == r["completed"] else 1)
    assert {c["slot"] for c in r["calls"]} == {0, 1, 2, 3}
    assert max(c["attempt"] for c in r["calls"]) >= 2  # the callers dialled again
    assert r["harness"]["calls_placed_late"] == 0 and not r["degraded"]
    assert r["harness"]["max_calls_up"] == 4
    assert set(r["per_worker"]) == {f"loop-{k + 1}" for k in range(min(4, os.cpu_count() or 1))}
    _assert_latency_bounds(r)
    assert r["barge_in_yield_ms"]["n"] == r["barge_ins_exercised"] >= len(r["calls"]) - 1
    for c in r["calls"]:
        assert (Path(c["bundle"]) / "voice_artifact_manifest.json").exists()
        assert (Path(c["bundle"]) / "caller.wav").stat().st_size > 10_000
    # A redial has its own folder (which slot redials first depends on the machine's load).
    assert list((web / "calls").glob("call-000?-2")), sorted((web / "calls").iterdir())
    html = (web / "load.html").read_text()
    assert "p99" in html and "<svg" in html
    # `turnscope open` on the run's folder is its page (before: "not a voice artifact bundle")
    code, shown, _ = cli("open", str(web), "--print")
    assert code == 0 and shown.strip() == str((web / "load.html").resolve())
    r = _report(phone)
    assert r["transport"] == "twilio" and r["completed"] == 2 and not r["degraded"]
    _assert_failed_only_by_a_late_yield(r)
    lo, hi = LATENCY_MS, LATENCY_MS + EAR_EXTRA_MS[1]  # no jitter buffer on a phone line
    assert r["latency_ms"]["n"] >= 4 and lo <= r["latency_ms"]["p50"] <= hi, r["latency_ms"]
    doc = json.loads((Path(r["calls"][0]["bundle"]) / "result.json").read_text())
    assert doc["source"]["transport"] == "telephony"


def test_calls_whose_agent_lost_audio_in_their_turns_are_said_by_code(scenario, tmp_path):
    """Two callers against the reference agent losing every 7th packet on the wire (and sending
    every 11th after the next): each call's evidence is degraded for audio lost in its turns,
    and the run says how many calls and why in the terminal and load.html, each call's code in
    its row (the run's own evidence, the harness's, is whole). The swapped packets are waited
    for: no gap taken for audio the agent never sent."""
    out = tmp_path / "lossy"
    with reference_agent(scenario, "--drop-every", "7", "--swap-every", "11") as url:
        cmd = [*turnscope_exe(), "load", url, "--scenario", str(scenario), "-o", str(out),
               "--loopback-only", "--calls", "2", "--rate", "2"]  # fmt: skip
        done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert done.returncode in (0, 1) and "Traceback" not in done.stderr, done.stderr
    r = _report(out)
    assert r["calls_degraded"] == {"audio_lost_in_turns": 2} and not r["degraded"], r
    assert "evidence degraded in 2 of 2 call(s): audio_lost_in_turns 2" in done.stdout
    page = (out / "load.html").read_text()
    assert (
        page.count("<td class='note l'>audio_lost_in_turns</td>") == 2
        and "evidence degraded in 2" in page
    )
    for c in r["calls"]:
        details = json.loads((Path(c["bundle"]) / "result.json").read_text())["source"]["details"]
        assert details["agent_unsent_ms"] == 0 and details["reorder_wait_ms"] == 40, details


def test_load_against_the_stock_pipecat_bot(scenario, tmp_path):
    from tests.interop.pipecat import pipecat_bot

    out = tmp_path / "run"
    # A budget the bot cannot keep: every call completes and fails its verdict on latency.
    tight = tmp_path / "tight.yaml"
    tight.write_text(scenario.read_text().replace("max_latency_ms: 2000", "max_latency_ms: 800"))
    with pipecat_bot(tmp_path, greeting=False, reply="short", latency_ms=300) as bot:
        done = _load(bot.url, tight, out, "--loopback-only", "--calls", "2", "--rate", "2")
    assert done.returncode == 1, done.stdout + done.stderr
    r = _report(out)
    assert r["completed"] == 2 and not r["degraded"], r["degraded"]
    # The bot decides the caller finished ~0.9 s after the speech ends, then waits 300 ms.
    assert r["latency_ms"]["n"] >= 2 and 900 <= r["latency_ms"]["p50"] <= 2000
    assert r["harness"]["agent_lost_frames"] == 0
    # "0 passed" says why: in the summary, on the page (its verdict, each call's row), in
    # load.json; each call's floors as its own result.json has them.
    assert r["passed"] == 0 and r["verdicts_failed"] == 2 and r["floors_failed"]["latency"] == 2
    for c in r["calls"]:
        doc = json.loads((Path(c["bundle"]) / "result.json").read_text())
        assert c["failed_floors"] == doc["failed_floors"] and "latency" in doc["failed_floors"]
    said = " ".join(done.stdout.split())
    assert "verdict failed in 2 of 2 completed call(s); floors failed: " in said, said
    page = (out / "load.html").read_text()
    assert (
        "<p class='v v-fail'>FAILED</p>" in page and page.count("<td class='v-fail l'>fail: ") == 2
    ), page


def test_an_agent_that_is_not_there_is_a_set_up_failure_per_call(scenario, tmp_path):
    out = tmp_path / "run"
    url = f"http://127.0.0.1:{free_port()}/api/offer"
    done = _load(url, scenario, out, "--loopback-only", "--calls", "3", "--rate", "10")
    assert done.returncode == 1, done.stdout + done.stderr
    r = _report(out)
    assert r["failures"] == {"setup_failed": {"unreachable": 3}} and not r["degraded"]
    for c in r["calls"]:
        doc = json.loads((Path(c["bundle"]) / "result.json").read_text())
        assert doc["verdict"] == "error" and "cannot reach" in doc["error"]
    assert "Traceback" not in done.stderr
    # The summary says why, not only how many: each kind with its first call's reason.
    assert "setup failed: unreachable 3" in done.stdout, done.stdout
    assert "  unreachable, the first call's reason: cannot reach" in done.stdout, done.stdout


def test_a_shipped_scenario_named_by_its_name_reaches_the_call_workers(tmp_path):
    """``--scenario quick-exchange`` (a shipped scenario's name, as ``call`` takes it) from a
    folder that holds no such file: the calls are placed (here: refused, as nothing listens),
    not "no such scenario file" in every worker (the workers were handed the name as a path)."""
    url = f"http://127.0.0.1:{free_port()}/api/offer"
    cmd = [*turnscope_exe(), "load", url, "--scenario", "quick-exchange", "-o", "run", "-q",
           "--loopback-only", "--calls", "1"]  # fmt: skip
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    r = _report(tmp_path / "run")
    assert r["failures"] == {"setup_failed": {"unreachable": 1}}, r["failures"]
    assert r["scenario"] == "quick-exchange", r


def test_ctrl_c_ends_the_live_calls_and_keeps_them(agent_url, scenario, tmp_path):
    out = tmp_path / "run"
    cmd = [*turnscope_exe(), "load", agent_url, "--scenario", str(scenario), "-o", str(out),
           "-q", "--loopback-only", "--calls", "2", "--rate", "1"]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)  # fmt: skip
    deadline = time.time() + 60
    while time.time() < deadline and not list(out.glob("calls/call-0002/caller.wav")):
        time.sleep(0.2)
    time.sleep(2.0)
    os.killpg(proc.pid, signal.SIGINT)  # as a terminal's Ctrl-C: the whole process group
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 4, stdout + stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    r = _report(out)
    assert len(r["calls"]) == 2 and any("interrupted" in d for d in r["degraded"])
    for c in r["calls"]:
        assert (Path(c["bundle"]) / "voice_artifact_manifest.json").exists()
        doc = json.loads((Path(c["bundle"]) / "result.json").read_text())
        assert any("interrupted" in d for d in doc["degraded"])


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--calls", "2", "--rate", "0"], "--rate '0': expected calls per second"),
        (["--calls", "2", "--rate", "3/hour"], "expected calls per second"),
        (["--calls", "0"], "--calls"),
        (["--calls", "2", "--duration", "-1"], "--duration"),
        (["--calls", "2", "--loops", "2", "--ray"], "--loops is for a run on this machine"),
    ],
)
def test_bad_load_options_are_one_line(cli, scenario, tmp_path, args, needle):
    url = "http://127.0.0.1:9/api/offer"
    code, _, err = cli("load", url, "--scenario", str(scenario), "-o", str(tmp_path / "o"), *args)
    assert code == 2 and needle in err and err.count("\n") == 1, err


def test_an_llm_driven_scenario_without_its_llm_is_refused_before_any_call(cli, tmp_path):
    """A scenario whose caller an LLM drives, and no --caller-llm: every call would fail (each
    counted "error: InputError", the run exit 1); one line naming the file and the flag, exit
    2, no folder. --caller-llm for a scripted caller, or with --ray, is refused the same way.
    (The run with an LLM: tests/test_conversation.py.)"""
    out = tmp_path / "o"
    url = "http://127.0.0.1:9/api/offer"
    code, _, err = cli("load", url, "--scenario", "order-status-llm", "--calls", "2",
                       "-o", str(out))  # fmt: skip
    assert code == 2 and err.count("\n") == 1, err
    assert "order-status-llm.yaml: caller.driver is llm: every call's caller asks an LLM" in err
    assert "give --caller-llm URL" in err and not out.exists(), err
    llm = ["--caller-llm", "http://127.0.0.1:9/v1"]
    code, _, err = cli("load", url, "--scenario", "refund-call", "--calls", "2", *llm)
    assert code == 2 and "--caller-llm is for an LLM-driven caller" in err, err
    code, _, err = cli("load", url, "--scenario", "order-status-llm", "--calls", "2", "--ray", *llm)
    assert code == 2 and "--caller-llm is for a load run on this machine" in err, err


def test_a_load_run_is_not_replaced_without_force(cli, scenario, tmp_path):
    out = tmp_path / "o"
    (out / "calls").mkdir(parents=True)
    (out / "load.json").write_text("{}")
    code, _, err = cli("load", "ws://127.0.0.1:9/ws", "--scenario", str(scenario), "--calls", "1",
                       "-o", str(out))  # fmt: skip
    assert code == 2 and "a websocket" in err  # the URL is checked first
    code, _, err = cli("load", "http://127.0.0.1:9/api/offer", "--scenario", str(scenario),
                       "--calls", "1", "-o", str(out))  # fmt: skip
    assert code == 2 and "--force" in err and err.count("\n") == 1, err
