"""The ASR worker process: below the live call, replaced when it dies, one clear error."""

from __future__ import annotations

import asyncio
import os
import signal
import time

import pytest

from turnscope.actors.caller.speech import speak
from turnscope.asr import transcriber as tr
from turnscope.asr.events import Utterance
from turnscope.asr.settings import load_settings
from turnscope.errors import EnvironmentProblem


def _worker_pid() -> int:
    _pool, future = tr._on_worker(os.getpid)
    return int(future.result())


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="SCHED_IDLE is Linux's")
def test_asr_runs_in_its_own_idle_priority_process():
    pid = _worker_pid()
    assert pid != os.getpid()
    _pool, future = tr._on_worker(os.sched_getscheduler, 0)
    assert future.result() == os.SCHED_IDLE


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
    import subprocess
    import sys

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
