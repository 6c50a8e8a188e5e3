"""The reference agent made CPU-bound, for benchmarks/asr_priority.py: each reply is computed on
every core before it is spoken (a fixed amount of matrix work, as a local model's reply is),
instead of waiting the scenario's latency.

    .venv/bin/python benchmarks/cpu_bound_agent.py ROUNDS LOG [--stream F] -- <agent options>

ROUNDS matrix products per reply (numpy's OpenBLAS, one thread per core, the GIL released, so
the agent's own event loop keeps its audio going); LOG gets a JSON line per reply with how long
its computation took, and first one with the same computation timed alone at start-up (median of
seven after two uncounted, before any call). The reply is spoken as soon as it is computed.

``--stream F``: as a streaming agent (an LLM's later tokens, the TTS of its next sentence), only
the fraction F of the work comes before the reply is spoken, the rest while it is being spoken;
the line then also says how many of the agent's frames went out more than 20 ms late (and the
worst lag) from the reply's first sound to the end of that rest.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from turnscope.actors.agent import core
from turnscope.cli.main import run

SIZE = 384
SPEAK_AFTER_MS = 50.0  # the player's lead comes on top, as for any reply


def compute(rounds: int) -> float:
    """``rounds`` products of a SIZE x SIZE matrix; the milliseconds it took."""
    t0 = time.perf_counter()
    a = np.random.default_rng(0).random((SIZE, SIZE))
    for _ in range(rounds):
        a = a @ a
        a /= np.abs(a).max()
    return (time.perf_counter() - t0) * 1000


def patch(rounds: int, log: Path, stream: float | None) -> None:
    """Replace the agent's wait before each reply with the computation."""
    before = rounds if stream is None else round(rounds * stream)

    def reply_now(self: core.AgentCore, at_ms: float) -> asyncio.Task:
        async def think() -> None:
            loop = asyncio.get_running_loop()
            took = await loop.run_in_executor(None, compute, before)
            now = self.clock.now_ms()
            speak_ms = now + self._lead_s * 1000 + SPEAK_AFTER_MS
            self._speak_next(speak_ms)
            row = {"compute_ms": round(took, 1)}
            if stream is not None:
                track = self.player  # the call's PlaybackTrack: it counts its late frames
                seen = len(track.late_at)
                rest = await loop.run_in_executor(None, compute, rounds - before)
                late = [lag for at, lag in track.late_at[seen:] if at >= speak_ms]
                row |= {"rest_ms": round(rest, 1), "late": len(late), "lag_ms": max(late or [0])}
            with log.open("a") as f:
                f.write(json.dumps(row) + "\n")

        task = asyncio.ensure_future(think())
        self._tasks.append(task)
        return task

    core.AgentCore._reply_at = reply_now  # type: ignore[method-assign]


def main() -> None:
    rounds, log = int(sys.argv[1]), Path(sys.argv[2])
    options = sys.argv[3 : sys.argv.index("--")]
    stream = float(options[1]) if options[:1] == ["--stream"] else None
    compute(rounds), compute(rounds)  # the first products start OpenBLAS's threads
    alone = statistics.median(compute(rounds) for _ in range(7))
    log.write_text(json.dumps({"alone_ms": round(alone, 1)}) + "\n")
    patch(rounds, log, stream)
    sys.argv = ["turnscope", *sys.argv[sys.argv.index("--") + 1 :]]
    run()


if __name__ == "__main__":
    main()
