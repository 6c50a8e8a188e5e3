"""Real calls against a stock pipecat bot (its own venv, its own Silero VAD, turn and interruption
handling): the call features hold against an agent turnscope did not write.

- a well-behaved bot passes, its greeting is heard, the planned barge-in is exercised, and every
  agent turn lands where the bot's pipeline wrote the reply, give or take the one-way delay;
- a slow bot fails latency; a bot that ignores barge-ins fails barge_in, and its answer to the
  interruption after it finished is a turn of its own;
- a bot that does not greet, answering in one short sentence, gets the greeting warning and a
  complete call with the shipped refund scenario, and the barge-in its short reply made
  impossible is "not exercised" in result.json, report.html, the scorecard and the gate;
- a bot that refuses the offer, dies mid-call, never answers, talks without a pause or sends
  silence only: one clear line, exit 4, the bundle kept and marked degraded with the reason.

Needs .venv-pipecat (scripts/setup.sh --dev builds it): without it these fail, never skip.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import statistics
import subprocess
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, turnscope_exe
from tests.interop.pipecat import PipecatBot, call_bot, pipecat_bot
from tests.test_answer_hold import assert_held_until_answered
from turnscope.lost_audio import LossNote

# Opens with the agent (the bot greets or not); one barge-in placed to fit any reply length.
SCENARIO = """
name: interop
task: {budgets: {max_latency_ms: 2000}}
caller: {voice: en-us, timeout_s: 50, hangup_after_ms: 800}
script:
  - agent: Hello, thanks for calling. How can I help you today?
  - caller: Hi, I would like a refund for my headphones please.
  - agent: Sure, I can help with that.
  - caller: wait
    barge_in_at: early
  - agent: Yes, go ahead.
  - caller: Can I send them back by post?
  - agent: Yes, you can.
"""

# The bot's own endpointing (Silero stop plus its turn wait, ~0.9 s) comes before its latency.
CALLS: dict[str, dict[str, Any]] = {
    "good": {"greeting": True, "reply": "long", "latency_ms": 300},
    # Every 25th RTP packet it sends lost on the wire (4%), every 13th of the rest sent after
    # the one after it (neighbours swapped, 7.7%).
    "lossy": {
        "greeting": True,
        "reply": "long",
        "latency_ms": 300,
        "lose_every": 25,
        "swap_every": 13,
    },
    # Also slower to decide the caller has finished (Silero stop 0.8 s, not 0.2 s).
    "slow": {"greeting": True, "reply": "short", "latency_ms": 2200, "vad_stop_secs": 0.8},
    # Answers "wait" 600 ms after finishing its long reply (as a browser agent was seen to):
    # longer than its own 395 ms pauses between sentences.
    "ignores": {
        "greeting": True,
        "reply": "long",
        "latency_ms": 600,
        "ignore_barge_ins": True,
        "answer_barge_ins": True,
    },
}


@contextlib.asynccontextmanager
async def _running_bot(workdir: Path, **knobs: Any) -> AsyncIterator[PipecatBot]:
    """The bot, started and stopped off the event loop: the other call of the pair is live."""
    bot_cm = pipecat_bot(workdir, **knobs)
    bot = await asyncio.to_thread(bot_cm.__enter__)
    try:
        yield bot
    finally:
        await asyncio.to_thread(bot_cm.__exit__, None, None, None)


@pytest.fixture(scope="module")
def calls(tmp_path_factory):
    """One call per bot behaviour, two at a time (each bot in its own process)."""
    root = tmp_path_factory.mktemp("interop")
    scenario = root / "interop.yaml"
    scenario.write_text(SCENARIO)

    async def one(name: str, knobs: dict[str, Any], sem: asyncio.Semaphore) -> dict[str, Any]:
        async with sem, _running_bot(root / f"bot-{name}", **knobs) as bot:
            run, call, caller = await call_bot(bot.url, scenario, root / name)
            got = {"run": run, "call": call, "caller": caller, "outdir": root / name}
            got["truth"] = bot.truth()
            got["log"] = bot.log_tail()
            return got

    async def all_calls() -> dict[str, dict[str, Any]]:
        sem = asyncio.Semaphore(2)
        done = await asyncio.gather(*(one(n, k, sem) for n, k in CALLS.items()))
        return dict(zip(CALLS, done, strict=True))

    return asyncio.run(all_calls())


def _result(got: dict[str, Any]) -> dict[str, Any]:
    return json.loads((got["outdir"] / "result.json").read_text())


# A reply whose chunks left this far off their pacing: the bot's loop stalled. A greeting's
# go out 20-22 ms ahead (the track catching up at the call's start), any other reply's within
# 1-4 ms (measured: the interop and fault bots, 19 replies).
STALL_MS = 40


def _one_way(got: dict[str, Any]) -> tuple[float, list[float], list[float]]:
    """Each measured agent turn against the reply the bot wrote: the constant one-way delay,
    every boundary's error around it, and apart the errors of the ends the bot logged after a
    stall in its own loop (its chunks left late, or early in the burst after it, while their
    RTP timestamps kept their place: the logged end is the stall's, not the audio's)."""
    origin = got["call"].clock.origin  # time.monotonic() seconds: the bot's clock too
    measured = [
        (t.start_ms, t.end_ms) for t in got["run"].result.assembly.turns if t.speaker == "agent"
    ]
    replies = [r for r in got["truth"] if r["event"] == "reply"]
    written = [
        ((r["start_monotonic"] - origin) * 1000, (r["end_monotonic"] - origin) * 1000)
        for r in replies
    ]
    assert len(measured) == len(written), (measured, written, got["log"])
    offsets = [
        m - w for pair in zip(measured, written, strict=True) for m, w in zip(*pair, strict=True)
    ]
    one_way = statistics.median(offsets)
    # An end (every second boundary) of a reply whose chunks left off their pacing.
    stall = [end and r.get("off_pace_ms", 0) > STALL_MS for r in replies for end in (False, True)]
    errors = [abs(o - one_way) for o, x in zip(offsets, stall, strict=True) if not x]
    apart = [abs(o - one_way) for o, x in zip(offsets, stall, strict=True) if x]
    return one_way, errors, apart


def test_well_behaved_bot_passes_with_its_greeting_and_barge_in_exercised(calls):
    got = calls["good"]
    run, caller = got["run"], got["caller"]
    assert run.result.degraded == [], run.result.degraded
    assert caller.finished_reason == "scenario finished"
    assert run.outcome.passed, (run.outcome.verifier, run.outcome.failures)
    script = _result(got)["script"]
    assert script["greeting"]["heard"] is True
    assert script["barge_ins"] == {"planned": 1, "exercised": 1}
    assert _result(got)["exercise"]["barge_in"]["exercised"] is True
    assert not [w for w in run.result.warnings if "did not" in w], run.result.warnings
    # pipecat cut its reply short for the barge-in: its own log says so.
    assert any(r["event"] == "reply" and r["interrupted"] for r in got["truth"]), got["truth"]


@pytest.mark.parametrize("name", ["good", "slow"])
def test_the_callers_turns_are_transcribed_once_the_bot_has_answered(calls, name):
    """The ASR leaves the cores to the bot while it computes its answer: each caller turn's
    decode waits for the bot's speech, or 3 s of the call; the slow bot answers ~3.9 s after
    the caller, so only its first answer comes after that cap, and the turns after it wait
    for theirs (the cap follows the agent)."""
    checked, at_cap = assert_held_until_answered(calls[name]["outdir"])
    assert checked >= 3 and at_cap == {"good": 0, "slow": 1}[name], (checked, at_cap)


@pytest.mark.parametrize("name", ["good", "lossy", "slow", "ignores"])
def test_agent_turns_agree_with_the_bots_own_log(calls, name):
    one_way, errors, stalled = _one_way(calls[name])
    assert 0 <= one_way <= 300, one_way
    # A lasting rise in the bot's delay is re-anchored (and warned of): the audio after it is
    # placed that much later, so boundaries either side sit that far apart around the median
    # (a CI run: a 47 ms step as the bot's loop fell 176 ms off its pace, errors up to 62 ms).
    steps = calls[name]["run"].result.info.details.get("delay_reanchors") or []
    moved = sum(r["step_ms"] for r in steps)
    assert statistics.median(errors) <= 15 and max(errors) <= 60 + moved, (
        one_way, errors, stalled, steps)  # fmt: skip
    assert len(stalled) <= 1, (one_way, errors, stalled)  # a rare stall, not a slow bot


def test_packets_the_bot_lost_on_the_wire_are_the_loss_and_cost_only_themselves(calls):
    """4% of the bot's packets lost: counted lost by their sequence numbers and each located
    where the bot's log says it lost it (its turns still where the bot's log has them, above),
    no other gap (aiortc's own jitter buffer dropped received packets after each: 3.6 s of this
    call), no re-anchor, and the call still passes. The evidence is degraded only for losses
    that touched a turn (where each fell is chance: 1 packet in 25). Packets it sent swapped
    with the next are waited for and heard: no gap but the lost packets' (dropped, each was
    20 ms of the agent's audio missing and taken for audio it never sent)."""
    got = calls["lossy"]
    details = _result(got)["source"]["details"]
    lost_by_bot = sum(1 for r in got["truth"] if r["event"] == "packet_lost")
    swapped = sum(1 for r in got["truth"] if r["event"] == "packet_swapped")
    assert details["agent_loss_by_sequence"] and details["agent_unsent_ms"] == 0, details
    assert details["agent_gaps"] <= details["agent_lost_frames"], details
    assert swapped >= 60 and details["reorder_wait_ms"] == 40, (swapped, details)
    # The bot goes on losing packets after the caller hung up, and none before it connected.
    assert lost_by_bot - 3 <= details["agent_lost_frames"] <= lost_by_bot, (lost_by_bot, details)
    assert details["agent_lost_frames"] >= 40 and details["delay_reanchors"] == [], details
    notes = got["run"].result.findings.notes
    assert [n.code_name for n in notes if n.code_name == "agent_audio_lost"], notes
    degraded = [n.code for n in notes if n.severity == "degraded"]
    assert set(degraded) <= {LossNote.IN_TURNS, LossNote.COULD_HIDE_SPEECH}, notes
    # Located where the bot lost them, moved by the one-way delay of its turns (and 30 ms:
    # the bot logs a reply's start as pipecat hands its audio on, a loss as it leaves).
    one_way = _one_way(got)[0]
    origin = got["call"].clock.origin
    logged = [
        ((r["monotonic"] - origin) * 1000 + one_way, r["n"])
        for r in got["truth"]
        if r["event"] == "packet_lost"
    ]
    located = got["call"].info.lost
    assert len(located) >= 40, located
    pairs = [(x, min(logged, key=lambda t: abs(x.start_ms - t[0]))) for x in located]
    off = [x.start_ms - at for x, (at, _) in pairs]
    lag = statistics.median(off)
    assert abs(lag) <= 40 and max(abs(o - lag) for o in off) <= 30, off
    # Exactly where in the bot's stream: its n-th packet, 20 ms each (the bot's clock above
    # wanders with its CPU: in one CI run one loss was logged 20 ms off its neighbours' lag).
    grid = [x.start_ms - 20.0 * n for x, (_, n) in pairs]
    assert max(grid) - min(grid) <= 2, grid
    assert got["run"].outcome.verifier["result"]["pass_fail"]["voice"], got["run"].outcome
    # Placed as promptly as the clean call's audio (a constant the agreement cannot see).
    lossy, clean = _one_way(got)[0], _one_way(calls["good"])[0]
    assert abs(lossy - clean) <= 30, (lossy, clean)


def test_slow_bot_fails_latency_only(calls):
    pf = calls["slow"]["run"].outcome.verifier["result"]["pass_fail"]
    assert pf["latency_floor"] is False and pf["voice"] is False
    assert pf["turn_taking_floor"] and pf["barge_in_floor"] and pf["content_floor"], pf


def test_bot_ignoring_barge_ins_fails_barge_in_and_its_answer_is_a_new_turn(calls):
    got = calls["ignores"]
    run = got["run"]
    pf = run.outcome.verifier["result"]["pass_fail"]
    assert pf["barge_in_floor"] is False, run.outcome.verifier
    assert _result(got)["script"]["barge_ins"] == {"planned": 1, "exercised": 1}
    replies = [r for r in got["truth"] if r["event"] == "reply"]
    assert not any(r["interrupted"] for r in replies), replies
    # The bot finished its long reply, then answered "wait": that answer is its own agent turn.
    agent_texts = [t.text.lower() for t in run.result.assembly.turns if t.speaker == "agent"]
    assert len(agent_texts) == len(replies), (agent_texts, replies)
    answer = next(i for i, r in enumerate(replies) if "go ahead" in r["text"].lower())
    # The answer alone (a turn cut at the bot's first sentence pause, 995 ms after "Wait."
    # began, once joined "First, I look up your account ... Yes, go ahead." and passed here).
    assert "go ahead" in agent_texts[answer] and len(agent_texts[answer].split()) <= 4, agent_texts


# --- the shipped refund scenario, through `bench` with a live fixture, and the gate --------------


def test_short_reply_bot_without_greeting_runs_the_shipped_refund_call(tmp_path, cli):
    """The bot never greets and answers in one short sentence: the caller goes on after the
    greeting timeout, the call completes, and the planned barge-in (6.2 s into a reply that
    lasts 1.6 s) is reported as not exercised everywhere, and fails the gate."""
    suite = {
        "kind": "agent-learning.bench-suite.v1",
        "control": "voice",
        "modality": "voice",
        "name": "interop_live",
        "version": "1",
        "description": "the shipped refund scenario called live",
        "tasks": [
            {
                "id": "refund-live",
                "instruction": "refund call",
                "budgets": {"max_latency_ms": 2500},
                "required_content": [],
                "fixture": {
                    "source": "recorded",
                    "audio": str(ROOT / "configs" / "scenarios" / "refund-call.yaml"),
                    "tags": ["conversational"],
                },
            }
        ],
    }
    suite_path = tmp_path / "suite.json"
    suite_path.write_text(json.dumps(suite))
    with pipecat_bot(tmp_path / "bot", greeting=False, reply="short", latency_ms=300) as bot:
        code, out, _ = cli(
            "bench", str(suite_path), "--agent", bot.url, "--loopback-only", "-q",
            "-o", str(tmp_path / "r.json"), "--runs", str(tmp_path / "runs"),
        )  # fmt: skip
        log = bot.log_tail()
    bundle = tmp_path / "runs" / "refund-live"
    result = json.loads((bundle / "result.json").read_text())
    script = result["script"]
    assert script["finished"] == "scenario finished", (script, log)
    assert script["not_spoken"] == [] and script["greeting"]["heard"] is False
    assert any("did not greet" in w for w in result["warnings"]), result["warnings"]
    continuity = json.loads((bundle / "live_continuity_report.json").read_text())
    assert any("did not greet" in c for c in continuity["caveats"]), continuity
    assert script["barge_ins"] == {"planned": 1, "exercised": 0}
    assert result["exercise"]["barge_in"] == {
        "exercised": False,
        "count": 0,
        "planned": 1,
        "note": "not exercised: 1 planned, none happened",
    }
    # The verifier's own number stays its vacuous 1.0; every view says what it is.
    assert result["verifier"]["result"]["components"]["barge_in"] == 1.0
    html = (bundle / "report.html").read_text()
    assert "NOT EXERCISED" in html and "did not greet" in html
    assert "not exercised" in out, out
    card = json.loads((tmp_path / "r.scorecard.json").read_text())
    assert card["exercise"]["all"]["barge_in"]["missed"] == ["refund-live"]
    # How the project's ASR heard the caller's voice: the bundle's figure, per tag, on every view.
    heard = [v for v in script["voices"] if "asr" in v]
    assert heard, script["voices"]
    for tag in ("all", "conversational"):
        assert [(v["voice"], v["wer"], v["words"], v["calls"]) for v in card["voices"][tag]] == [
            (f"{v['engine']} {v['name']}", v["asr"]["wer"], v["asr"]["reference_words"], 1)
            for v in heard
        ]
    assert f"all: caller voice {card['voices']['all'][0]['voice']}: the project's ASR" in out
    assert "Caller voices" in (tmp_path / "r.scorecard.html").read_text()
    code, out, _ = cli("gate", str(tmp_path / "r.scorecard.json"))
    assert code == 1 and "not exercised" in out and "barge_in" in out, out


def guide_caller_lines() -> str:
    """The example of docs/guide/caller.md of a script for an agent whose words one does not
    know: the caller's lines alone (the test calls what the guide shows)."""
    guide = (ROOT / "docs" / "guide" / "caller.md").read_text()
    block = guide.split("\n    name: opening-hours\n")[1].split("\n\n")[0]
    return "name: opening-hours\n" + "\n".join(line[4:] for line in block.splitlines()) + "\n"


# espeak-ng speaks faster than the neural default and needs no model: the same script.
CALLER_LINES_ONLY = "caller: {voice: en-us, timeout_s: 50, hangup_after_ms: 800}\n"


def test_a_script_of_the_callers_lines_alone_is_a_conversation(tmp_path):
    """No agent line in the script: the caller waits for the bot's greeting, says each line once
    the bot has finished its answer to the one before, and waits for the answer to the last (the
    lines went out back to back over the greeting, and the call hung up before any answer: a
    PASS with latency not exercised)."""
    scenario = tmp_path / "mine.yaml"
    scenario.write_text(CALLER_LINES_ONLY + guide_caller_lines())
    with pipecat_bot(tmp_path / "bot", greeting=True, reply="short", latency_ms=300) as bot:
        run, _call, _caller = asyncio.run(call_bot(bot.url, scenario, tmp_path / "call"))
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    turns = [(t.speaker, t.start_ms, t.end_ms) for t in run.result.assembly.turns]
    assert [t[0] for t in turns] == ["agent", "caller", "agent", "caller", "agent"], turns
    for before, after in itertools.pairwise(turns):
        assert after[1] > before[2], turns  # each turn after the one before it: no talk-over
    assert result["script"]["greeting"]["heard"] is True, result["script"]
    assert result["warnings"] == [], result["warnings"]
    assert result["exercise"]["latency"]["count"] == 2, result["exercise"]


# --- faults: one clear line, exit 4, the bundle kept and marked degraded -------------------------

FAULT_SCENARIO = """
name: interop-fault
caller: {voice: en-us, timeout_s: 20, hangup_after_ms: 500, reply_timeout_ms: 3000}
script:
  - caller: Hi, I would like a refund for my headphones please.
    at_ms: 500
  - agent: Sure.
  - caller: Can I send them back by post?
  - agent: Yes.
"""

FAULTS = {
    "refuse": ({"mode": "refuse"}, "offer"),
    "die": ({"mode": "die-after", "die_after_s": 5, "reply": "long"}, "agent"),
    "mute": ({"mode": "mute"}, "no speech found on the agent channel"),
    "silence": ({"mode": "silence"}, "no speech found on the agent channel"),
    "nonstop": ({"mode": "nonstop"}, "without a pause"),
}


@pytest.fixture(scope="module")
def faults(tmp_path_factory):
    root = tmp_path_factory.mktemp("faults")
    scenario = root / "fault.yaml"
    scenario.write_text(FAULT_SCENARIO)

    def one(name: str) -> dict[str, Any]:
        knobs, _ = FAULTS[name]
        with contextlib.ExitStack() as stack:
            bot = stack.enter_context(pipecat_bot(root / f"bot-{name}", greeting=False, **knobs))
            proc = subprocess.run(
                [
                    *turnscope_exe(), "call", bot.url, "--scenario", str(scenario),
                    "--loopback-only", "-q", "--media-timeout", "3", "-o", str(root / name),
                ],
                capture_output=True, text=True, timeout=90, cwd=ROOT,
            )  # fmt: skip
            return {"proc": proc, "outdir": root / name, "log": bot.log_tail()}

    with ThreadPoolExecutor(2) as pool:
        return dict(zip(FAULTS, pool.map(one, FAULTS), strict=True))


@pytest.mark.parametrize("name", list(FAULTS))
def test_bot_faults_are_one_clear_line_exit_4_and_a_degraded_bundle(faults, name):
    got = faults[name]
    proc, outdir = got["proc"], got["outdir"]
    _, needle = FAULTS[name]
    assert proc.returncode == 4, (proc.returncode, proc.stdout, proc.stderr, got["log"])
    assert "Traceback" not in proc.stderr
    errors = [line for line in proc.stderr.splitlines() if line.startswith("turnscope: error:")]
    assert len(errors) == 1 and needle in errors[0], proc.stderr
    result = json.loads((outdir / "result.json").read_text())
    assert result["degraded"] and any(needle in d for d in result["degraded"]), result["degraded"]
    assert (outdir / "voice_artifact_manifest.json").exists()
    if name != "refuse":
        assert (outdir / "caller.wav").stat().st_size > 44 and (outdir / "agent.wav").exists()
    if name in ("mute", "silence"):
        assert result["verdict"] == "fail"
        assert any("never spoke" in f for f in result["failures"]), result


# --- the latency split by the bot's RTVI events ---------------------------------------------------


def _truth_split(got: dict[str, Any], reply) -> tuple[float, float, float]:  # type: ignore[no-untyped-def]
    """The bot's own parts for one reply: its turn decision and its first sample, from its log."""
    origin = got["call"].clock.origin
    d = got["run"].result.assembly.dialogue()
    end, start = d[reply.caller_turn]["end_ms"], d[reply.agent_turn]["start_ms"]
    decided = [
        (r["monotonic"] - origin) * 1000
        for r in got["truth"]
        if r["event"] == "user_stopped_speaking"
    ]
    began = [(r["start_monotonic"] - origin) * 1000 for r in got["truth"] if r["event"] == "reply"]
    dec = [t for t in decided if end - 300 <= t <= start][-1]
    sent = [t for t in began if dec <= t <= start][-1]
    return dec - end, sent - dec, start - sent


@pytest.mark.parametrize("name", ["good", "slow"])
def test_each_reply_is_split_by_the_bots_rtvi_events_as_its_own_log_has_it(calls, name):
    got = calls[name]
    b = got["run"].breakdown
    assert b is not None and b.source == "rtvi" and b.reliable, b
    split = [r for r in b.replies if r.missing is None]
    assert len(split) >= 2, b.replies
    errors = []
    for r in split:
        assert r.endpointing_ms + r.processing_ms + r.delivery_ms == pytest.approx(r.latency_ms)
        truth = _truth_split(got, r)
        errors += [
            abs(m - t)
            for m, t in zip((r.endpointing_ms, r.processing_ms, r.delivery_ms), truth, strict=True)
        ]
    assert statistics.median(errors) <= 15, errors
    result = _result(got)
    assert result["latency_breakdown"]["source"] == "rtvi"
    assert result["source"]["details"]["rtvi"]["events"]


def test_the_split_tracks_the_bots_settings(calls):
    """Processing follows the bot's reply latency (300 / 2200 ms); endpointing its VAD stop
    (0.2 / 0.8 s)."""
    med = {}
    for name in ("good", "slow"):
        split = [r for r in calls[name]["run"].breakdown.replies if r.missing is None]
        med[name] = {
            part: statistics.median(getattr(r, f"{part}_ms") for r in split)
            for part in ("endpointing", "processing", "delivery")
        }
    assert abs(med["good"]["processing"] - 300) <= 60, med
    assert abs(med["slow"]["processing"] - 2200) <= 60, med
    # The slow bot's 0.6 s longer stop shows in endpointing, not in processing or delivery.
    # Alone it measures 620 ms; beside the suite's other calls the bot's own decision once came
    # 200 ms later still (831 ms, its processing and delivery on time): its place against the
    # bot's own log is the test above, so the bound here is only a floor and a sanity ceiling.
    assert 450 <= med["slow"]["endpointing"] - med["good"]["endpointing"] <= 1000, med
    assert abs(med["slow"]["delivery"] - med["good"]["delivery"]) <= 40, med
