"""A live WebRTC call where the agent answers with recordings of real people, room tone kept
(issue 28.3): the stock pipecat bot plays two read sentences whole (LibriVox and praatio, each
with 236-315 ms of room tone before its speech and 338-351 ms after, digital silence between
replies), and turnscope's agent turns follow the speech in them, not the room tone.

Truth: when the bot sent each clip (its own log) + the clip's annotated speech offsets + the
one-way delay found in the recorded agent channel by cross-correlation (benchmarks/live_real.py).

The caller side too: a caller whose lines are those recordings (``audio:`` lines, room tone
kept, digital silence between them), the bot answering in its own voice; truth is when the
caller's line went out (its send log) + the speech's offset in the audio it sent.

Needs .venv-pipecat and the recordings (scripts/setup.sh --dev): without them these fail.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from live_real import (
    LATENCY_MS,
    caller_scenario,
    clip_files,
    scenario_text,
    score_call,
    score_caller,
)

from tests.interop.pipecat import BOT, call_bot, free_port, pipecat_bot, pipecat_python

# L0870: its speech labels span 0.24-6.76 s of a 7.10 s recording (LibriVox); mary's TextGrid
# words span 0.32-1.52 s of a 1.87 s one (praatio): 236 / 315 ms of room tone before the speech,
# 338 / 351 ms after, between digital silence.
CLIPS = ("L0870", "mary")
# benchmarks/live_real.py (2026-12-02, 7 calls each over WebRTC and the phone line): on these
# two clips (8 replies each) every boundary was within 35 ms but one, a mary ending 129 ms late
# on the phone line (heard after bobby and L0890); a turn that took the room tone for speech (as
# every one did before issue 28.1, and as L0880, L0930 and L0890 still can as a call's first
# reply over Opus: see the benchmark) is off by the whole room tone, 236-351 ms here. 100 ms
# sits between the two: three times the usual error, under a third of the room tone.
BOUND_MS = 100.0
# On a loaded machine the bot's sender can stall at a clip's start and the audio that reaches
# the caller is no clean copy of the clip around that boundary (seen once in 112 replies at load
# average 6 on 2 cores); its truth cannot be placed, so such a call is placed once more. The
# accuracy bound is never retried.
ATTEMPTS = 2


@pytest.fixture(scope="module")
def clip_call(tmp_path_factory):
    root = tmp_path_factory.mktemp("live-real")
    clips = root / "clips.json"
    clips.write_text(json.dumps(clip_files(CLIPS)))
    scenario = root / "live-real.yaml"
    scenario.write_text(scenario_text(len(CLIPS), timeout_s=40))
    knobs = {"greeting": False, "latency_ms": LATENCY_MS, "reply_clips": clips}
    for attempt in range(ATTEMPTS):
        outdir = root / f"call{attempt}"
        with pipecat_bot(root / f"bot{attempt}", **knobs) as bot:
            run, call, caller = asyncio.run(call_bot(bot.url, scenario, outdir))
            replies = bot.replies()
            log = bot.log_tail()
        scored = score_call(run, call, caller, replies, outdir)
        if not scored["unlocated"]:
            break
    return {"replies": replies, "scored": scored, "log": log}


def test_the_bot_logs_each_clip_it_sent_with_the_speech_inside_it(clip_call):
    replies = clip_call["replies"]
    assert [Path(r["clip"]).name for r in replies] == [
        Path(c["wav"]).name for c in clip_files(CLIPS)
    ], clip_call["log"]
    for r, c in zip(replies, clip_files(CLIPS), strict=True):
        assert not r["interrupted"]
        assert r["speech_start_ms"] == pytest.approx(c["speech_start_s"] * 1000, abs=0.1)
        assert r["speech_end_ms"] == pytest.approx(c["speech_end_s"] * 1000, abs=0.1)
        # the whole clip went out, room tone and all
        assert r["played_ms"] == r["audio_ms"] == r["clip_ms"] > r["speech_end_ms"]


def test_agent_turns_follow_the_speech_in_the_clips_not_their_room_tone(clip_call):
    got = clip_call["scored"]
    assert (got["unlocated"], got["missed"], got["extra"]) == (0, 0, 0), got
    assert len(got["start"]) == len(got["end"]) == len(CLIPS), got
    for err in got["start"] + got["end"]:
        assert abs(err) <= BOUND_MS, got
    # the caller's latency is measured from the speech, not from the room tone before it
    assert got["latency"] and all(abs(e) <= BOUND_MS for e in got["latency"]), got
    # and the start told during the call (a barge-in counts from it) was moved to the speech
    assert len(got["live_start"]) == len(CLIPS), got
    assert all(abs(e) <= BOUND_MS for e in got["live_start"]), got


def test_caller_turns_follow_the_speech_in_recorded_caller_lines_not_their_room_tone(
    tmp_path,
):
    entries = clip_files(CLIPS)
    scenario = tmp_path / "caller.yaml"
    scenario.write_text(caller_scenario(entries, timeout_s=40))
    with pipecat_bot(tmp_path / "bot", greeting=False, latency_ms=LATENCY_MS) as bot:
        run, _, caller = asyncio.run(call_bot(bot.url, scenario, tmp_path / "call"))
    got = score_caller(run, caller, entries)
    assert (got["missed"], got["extra"]) == (0, 0), got
    assert len(got["start"]) == len(CLIPS), got
    # the room tone the caller sent before and after each line's speech is not its turn
    for err in got["start"] + got["end"]:
        assert abs(err) <= BOUND_MS, got


def test_a_bad_clip_list_is_one_line_naming_the_flag(tmp_path):
    bad = tmp_path / "clips.json"
    bad.write_text(json.dumps([{"wav": str(tmp_path / "missing.wav")}]))
    done = subprocess.run(
        [str(pipecat_python()), str(BOT), "--port", str(free_port()), "--reply-clips", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"pipecat_bot: --reply-clips {bad}: entry 0:"), done.stderr[-2000:]
    assert "Traceback" not in done.stderr
