"""What the scripted caller hears of the agent: its own endpointer on the agent channel (the
same settings as the pipeline's, so it decides what the turn detection decides), and the waits
the script is made of (for the agent to start, to finish, to pause)."""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from turnscope.asr.endpointer import Endpointer
from turnscope.asr.events import EndOfTurn, SpeechEvent, SpeechStart, SpeechStop, StartMoved
from turnscope.asr.settings import Settings
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import AGENT, SAMPLE_RATE, PcmFrame

if TYPE_CHECKING:
    from turnscope.actors.caller.phrase import Partial

# The pipeline's endpointer and the caller's have the same settings and frames, so they end an
# utterance at the same moment; a little slack all the same.
TEXT_MATCH_MS = 50
# No agent audio for this long (a DTX sender's pause: it sends nothing, or a frame every 400
# ms): the caller hears the silence up to then, as a listener's playout goes on; later audio
# of that stretch is taken as it comes (its overlap with the silence heard is dropped).
QUIET_MS = 150.0
PACE_S = 0.04  # how often the ear looks


@dataclass
class AgentSpeech:
    """One agent speech start as the caller heard it, and the end of its utterance once
    decided."""

    start_ms: float
    end_ms: float | None = None
    decided_ms: float | None = None
    forced: bool = False  # the utterance ran to max_utterance_ms without a pause

    @property
    def length_ms(self) -> float:
        return (self.end_ms or self.start_ms) - self.start_ms


class AgentEar:
    """Feed it the call's frames (``hear``); it keeps every agent speech start and how each
    utterance ended, and wakes the waits."""

    def __init__(self, clock: CallClock, settings: Settings) -> None:
        self.clock = clock
        self.endpointer = Endpointer(
            AGENT, settings.vad, settings.refine, pad_ms=settings.asr.pad_ms
        )
        self.speeches: list[AgentSpeech] = []
        self.stops: list[float] = []  # when each stretch of agent speech stopped (call ms)
        # The agent's utterances as transcribed (start, end, text), as the pipeline hears them.
        self.texts: list[tuple[float, float, str]] = []
        # Partial transcripts of its running utterance, latest last (only while a line waits
        # for the agent's words: a few a second).
        self.partials: deque[Partial] = deque(maxlen=64)
        self.speaking = False
        self._changed = asyncio.Event()
        self._end = 0  # the sample after the last one heard
        self._heard_at: float | None = None  # call ms the last agent frame came
        self._pacer: asyncio.TimerHandle | None = None

    def hear(self, frame: PcmFrame) -> None:
        if frame.channel == AGENT:
            self._heard_at = self.clock.now_ms()
            if self._pacer is None:
                self._pacer = asyncio.get_running_loop().call_later(PACE_S, self._pace)
            self._feed(frame)

    def close(self) -> None:
        """Stop hearing time go on (the call ended)."""
        if self._pacer is not None:
            self._pacer.cancel()

    def _feed(self, frame: PcmFrame) -> None:
        self._end = max(self._end, frame.end)
        for event in self.endpointer.push(frame):
            self._on_event(event)

    def _pace(self) -> None:
        """The agent's silence heard while it sends nothing: without it the caller decided the
        end of a DTX sender's turn 1.8 s late (its endpointer moved only as packets came)."""
        self._pacer = asyncio.get_running_loop().call_later(PACE_S, self._pace)
        assert self._heard_at is not None
        now = self.clock.now_ms()
        if now - self._heard_at < QUIET_MS:
            return
        frame = SAMPLE_RATE // 50  # 20 ms
        n = (round((now - QUIET_MS) * SAMPLE_RATE / 1000) - self._end) // frame * frame
        if n > 0:
            self._feed(PcmFrame(AGENT, self._end, np.zeros(n, np.int16)))

    def _on_event(self, event: SpeechEvent) -> None:
        if isinstance(event, SpeechStart):
            # Every start counts, also speech resuming inside one utterance: an agent that
            # yields and answers within the end-of-turn silence still answered.
            self.speeches.append(AgentSpeech(event.at_ms))
            self.speaking = True
        elif isinstance(event, StartMoved):
            # The utterance opened on a recording's room tone: its speech starts here (a
            # barge-in "600 ms into the agent's turn" counts from the first word).
            for speech in self.speeches:
                if speech.decided_ms is None and speech.start_ms < event.at_ms:
                    speech.start_ms = event.at_ms
        elif isinstance(event, SpeechStop):
            self.speaking = False
            self.stops.append(event.at_ms)
        elif isinstance(event, EndOfTurn):
            self.speaking = False
            for speech in self.speeches:
                if speech.decided_ms is None:
                    speech.end_ms, speech.decided_ms = event.at_ms, event.decided_ms
                    speech.forced = event.utterance.forced
        self._changed.set()

    def transcribed(self, start_ms: float, end_ms: float, text: str) -> None:
        """An agent utterance's transcript, from the pipeline's transcriber."""
        self.texts.append((start_ms, end_ms, text))
        self._changed.set()

    def partial(self, partial: Partial) -> None:
        """A partial transcript of the agent's running utterance."""
        self.partials.append(partial)
        self._changed.set()

    def said_since(self, since_ms: float) -> str:
        """What the agent said in the utterances that ended after ``since_ms``."""
        return " ".join(t for _, end, t in sorted(self.texts) if end > since_ms and t).strip()

    async def transcripts_until(self, end_ms: float, timeout_ms: float) -> bool:
        """Wait until the utterance ending at ``end_ms`` is transcribed (the transcriber runs
        in its own process, a few hundred ms behind); False after ``timeout_ms``."""

        def done() -> bool:
            return any(end >= end_ms - TEXT_MATCH_MS for _, end, _ in self.texts)

        found = await self.wait_for(done, self.clock.now_ms() + timeout_ms)
        return bool(found)

    # -- what is known ------------------------------------------------------------------------

    def speech_after(self, after_ms: float) -> AgentSpeech | None:
        """The first agent speech that started after ``after_ms``."""
        return next((s for s in self.speeches if s.start_ms >= after_ms - 1), None)

    def current(self) -> AgentSpeech | None:
        """The start of the utterance the agent is in (speaking, or in a pause), if any."""
        return next((s for s in self.speeches if s.decided_ms is None), None)

    def talked_through(self, from_ms: float) -> AgentSpeech | None:
        """The agent's utterance in progress, when it began before ``from_ms`` and the agent
        has not stopped since (a barge-in from ``from_ms`` on that it ignored)."""
        speech = self.current()
        if speech is None or speech.start_ms >= from_ms or not self.speaking:
            return None
        if any(stop >= from_ms for stop in self.stops):
            return None
        return speech

    def typical_turn_ms(self) -> float | None:
        """The median length of the agent's finished utterances so far (for ``mid``)."""
        seen: dict[float, float] = {}
        for s in self.speeches:
            if s.end_ms is not None:
                seen.setdefault(s.end_ms, s.length_ms)
        lengths = [ms for ms in seen.values() if ms > 0]
        return statistics.median(lengths) if lengths else None

    # -- waiting ------------------------------------------------------------------------------

    async def through_pause(self, speech: AgentSpeech) -> float:
        """When the agent is in a pause inside ``speech`` (not ended): wait until it speaks
        again or the utterance ends (a barge-in or backchannel due then goes out as the agent
        goes on, as a listener would cut in, not into the pause). How long it waited, ms."""
        if speech.decided_ms is not None or self.speaking:
            return 0.0
        due = self.clock.now_ms()
        await self.wait_for(lambda: self.speaking or speech.decided_ms is not None)
        return self.clock.now_ms() - due

    async def until(self, call_ms: float) -> None:
        delay = (call_ms - self.clock.now_ms()) / 1000
        if delay > 0:
            await asyncio.sleep(delay)

    async def wait_for(
        self, find: Callable[[], Any], deadline_ms: float | Callable[[], float] | None = None
    ) -> Any:
        """``find()`` once it is truthy; None when the call clock passes ``deadline_ms`` (a
        callable: read again whenever what was heard changes, e.g. a start moved)."""
        while True:
            found = find()
            if found:
                return found
            self._changed.clear()
            if deadline_ms is None:
                await self._changed.wait()
                continue
            deadline = deadline_ms() if callable(deadline_ms) else deadline_ms
            remaining = (deadline - self.clock.now_ms()) / 1000
            if remaining <= 0:
                return find() or None
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    async def start_after(self, after_ms: float, timeout_ms: float) -> AgentSpeech | None:
        """The agent's first speech after ``after_ms``, waited for at most ``timeout_ms``."""
        return await self.wait_for(lambda: self.speech_after(after_ms), after_ms + timeout_ms)

    async def end_of(self, speech: AgentSpeech) -> AgentSpeech:
        """``speech`` once the utterance it belongs to has ended."""
        await self.wait_for(lambda: speech.decided_ms is not None)
        return speech
