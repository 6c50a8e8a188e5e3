"""A live caller turn is decoded once the agent has begun its answer.

The moment a caller's turn ends is the moment an agent computes its reply, and the time that
takes is the latency the harness reports. On one machine (an agent with a local model beside
the harness, the usual way to test one) the ASR decoding that turn at once shares the cores
with the reply it is timing: a CPU-bound agent's 600 ms of work per reply took 201 ms more than
alone with the ASR at its priority (nice 10), 83 ms more with the turn held as here, 87 ms with
the ASR at idle priority (benchmarks/asr_cost_to_agent.py, one run). No one
needs the caller's text then: the scripted caller listens to the agent's words only, and the
caller's turns go to the transcript and the live view, which can wait a second. So a realtime
source's caller turn waits for the agent's next speech (it has answered: what is left of its
reply no longer delays its first sound) or a cap of the call, whichever is first; the audio's
end lets every turn go. The cap is ``HOLD_MS``, or once the agent has answered a turn more
slowly, ``ANSWER_MARGIN`` times its slowest answer so far (up to ``MAX_HOLD_MS``): an agent with
a local model on a CPU answers in 3-6 s, and it is the agent the hold is for. A replay faster
than real time holds nothing: no agent is computing beside it, and it waits for its decodes to
keep their number bounded.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from turnscope.asr.events import SpeechEvent, SpeechStart
from turnscope.capture.frames import AGENT

__all__ = ["ANSWER_MARGIN", "HOLD_MS", "MAX_HOLD_MS", "AnswerHold"]

# Most agents answer within 3 s; one that takes longer (or never answers) has its caller turn
# decoded then, as before, until it has shown it is slower (below).
HOLD_MS = 3000.0
# Once an answer came later than that, the turns after it wait for this many times the slowest
# answer (its own spread: a reply of another length, a longer question), never more than
# MAX_HOLD_MS (the live view's caller words no later than that behind the call).
ANSWER_MARGIN = 1.5
MAX_HOLD_MS = 12000.0


@dataclass
class AnswerHold:
    """Caller turns waiting for the agent's answer (``wait``); ``heard`` and ``advance`` let
    them go, ``release`` lets every one go (the audio's end). Each wait ends with the call time
    (ms) it was let go at."""

    hold_ms: float = HOLD_MS
    max_hold_ms: float = MAX_HOLD_MS  # == hold_ms: the cap stays fixed
    slowest_answer_ms: float = 0.0  # the longest from a caller's end of turn to the answer
    _waiting: list[tuple[float, asyncio.Future[float]]] = field(default_factory=list)
    _open_at: float | None = None  # the audio ended here: nothing waits any more
    # The agent's latest speech start (audio time, decided): an agent that answered before the
    # caller's end of turn was decided (its own end of turn came sooner) has answered.
    _agent_start: tuple[float, float] = (float("-inf"), float("-inf"))
    _unanswered: float | None = None  # the latest caller end of turn not yet answered

    @property
    def cap_ms(self) -> float:
        """How long after its end a caller turn waits for the answer, from what this call's
        agent has shown so far."""
        learned = min(self.max_hold_ms, ANSWER_MARGIN * self.slowest_answer_ms)
        return max(self.hold_ms, learned)

    def wait(self, end_ms: float) -> asyncio.Future[float]:
        """Done once the agent speaks after ``end_ms`` (a caller turn's end, call ms) or the
        call is ``cap_ms`` past it."""
        done: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        if self._open_at is not None:
            done.set_result(self._open_at)
        elif self._agent_start[0] >= end_ms:
            done.set_result(self._agent_start[1])
        else:
            self._waiting.append((end_ms, done))
            last = self._unanswered
            self._unanswered = end_ms if last is None else max(last, end_ms)
        return done

    def heard(self, event: SpeechEvent) -> None:
        if isinstance(event, SpeechStart) and event.channel == AGENT:
            self._agent_start = (event.at_ms, event.decided_ms)
            # The answer to the latest turn before it, held or already let go at the cap.
            if self._unanswered is not None and event.at_ms >= self._unanswered:
                answer_ms = event.decided_ms - self._unanswered
                self.slowest_answer_ms = max(self.slowest_answer_ms, answer_ms)
                self._unanswered = None
            self._let_go(lambda end_ms: event.at_ms >= end_ms, event.decided_ms)

    def advance(self, position_ms: float) -> None:
        """The call has reached ``position_ms`` (its audio so far)."""
        if self._waiting:
            cap = self.cap_ms
            self._let_go(lambda end_ms: position_ms - end_ms >= cap, position_ms)

    def release(self, position_ms: float) -> None:
        """The audio ended at ``position_ms``: every turn goes, those still to come at once."""
        self._open_at = position_ms
        self._let_go(lambda end_ms: True, position_ms)

    def _let_go(self, due: Callable[[float], bool], at_ms: float) -> None:
        keep = []
        for end_ms, done in self._waiting:
            if not due(end_ms):
                keep.append((end_ms, done))
            elif not done.done():
                done.set_result(at_ms)
        self._waiting = keep
