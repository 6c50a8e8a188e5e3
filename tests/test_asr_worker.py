"""The ASR worker process: below the live call, replaced when it dies, one clear error."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import reference_agent
from tests.interop.pipecat import call_bot
from tests.test_conversation import ORDER
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.speech import speak
from turnscope.asr import transcriber as tr
from turnscope.asr.events import Utterance
from turnscope.asr.settings import load_settings
from turnscope.asr.worker import ASR_NICENESS
from turnscope.errors import EnvironmentProblem


def _worker_pid() -> int:
    _pool, future = tr._on_worker(os.getpid)
    return int(future.result())


@pytest.mark.skipif(not hasattr(os, "sched_getscheduler"), reason="Linux's scheduler")
def test_asr_runs_in_its_own_process_below_the_call_not_idle():
    """Niced, under the ordinary scheduler: below the call, never starved (SCHED_IDLE was)."""
    pid = _worker_pid()
    assert pid != os.getpid()
    _pool, policy = tr._on_worker(os.sched_getscheduler, 0)
    assert policy.result() == os.SCHED_OTHER
    _pool, niceness = tr._on_worker(os.nice, 0)
    assert niceness.result() == os.nice(0) + ASR_NICENESS


@pytest.mark.solo  # it keeps every core busy on purpose
def test_a_call_beside_a_busy_neighbour_still_hears_the_agent_in_time(tmp_path: Path):
    """Other programs keep every core busy at nice 0 for the whole call (an agent's local model,
    a build): the ASR below the call still gets a share, so the reacting caller has each agent
    turn's words within its wait and decides on them. At SCHED_IDLE the texts came back only
    once the neighbour stopped (13 s after each turn, benchmarks/asr_priority.py) and the
    caller decided on nothing."""
    scenario = tmp_path / "order.yaml"
    scenario.write_text(ORDER)
    loop = [sys.executable, "-c", "while True: pass"]
    neighbours = [subprocess.Popen(loop) for _ in range(os.cpu_count() or 1)]
    try:
        with reference_agent(scenario) as url:
            asyncio.run(call_bot(url, scenario, tmp_path / "call"))
    finally:
        for n in neighbours:
            n.kill()
            n.wait()
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    assert CallerNote.TRANSCRIPT_LATE.value not in result["warning_codes"], result["warnings"]
    decisions = result["script"]["decisions"]
    assert [d["kind"] for d in decisions] == ["fact", "goal", "choose", "until"], decisions
    assert all(d["heard"] for d in decisions), decisions


def test_a_killed_worker_is_one_clear_error_and_is_replaced():
    settings = load_settings()
    t = tr.Transcriber(settings.asr, settings.confirm)
    t.warm_up()
    audio = speak("I would like a refund please.", voice="en-us")
    utt = Utterance("caller", 0, 0.0, len(audio) / 16, (), 0.0, audio)

    async def transcribe_while_killed():
        pid = _worker_pid()
        task = asyncio.ensure_future(t(utt))
        await asyncio.sleep(0.05)
        os.kill(pid, signal.SIGKILL)
        return await task

    with pytest.raises(EnvironmentProblem, match="ASR worker process died"):
        asyncio.run(transcribe_while_killed())
    text = asyncio.run(t(utt)).text  # a new worker took over, model loaded again
    assert "refund" in text.lower()


def test_the_worker_does_not_outlive_its_parent(tmp_path):
    """A harness killed outright (SIGKILL, a CI timeout) leaves no model process behind."""
    code = (
        "import os, time\n"
        "from turnscope.asr import transcriber as tr\n"
        "if __name__ == '__main__':\n"
        "    pool, f = tr._on_worker(os.getpid)\n"
        "    print(f.result(), flush=True)\n"
        "    time.sleep(60)\n"
    )
    script = tmp_path / "parent.py"
    script.write_text(code)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    worker = int(proc.stdout.readline())
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.kill(worker, signal.SIGKILL)
    pytest.fail("the ASR worker outlived its parent")
