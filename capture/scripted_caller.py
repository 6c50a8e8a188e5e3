"""The scripted caller: speaks a scenario's caller lines into a live call at the right moments.

It is a pipeline sink: it watches the endpointer's events on the agent channel (the same events
the turn detection uses) to decide when to speak. Triggers, per caller line:
- after_agent_ms: think time after the agent's end of turn (as the endpointer decides it); when
  the line before it in the script is the caller's own, after that line instead;
- at_ms: at a fixed time on the call clock;
- barge_in_ms / backchannel_ms: N ms after the start of the agent's current turn.
After the last line (and the agent's answer, if the script expects one) it waits
hangup_after_ms and hangs up; timeout_s bounds the whole call.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from turnscope.asr.events import EndOfTurn, SpeechEvent, SpeechStart
from turnscope.asr.settings import Settings
from turnscope.capture.frames import AGENT
from turnscope.capture.playback import CallClock, Player
from turnscope.capture.scenario import Line, Scenario
from turnscope.capture.source import SourceInfo
from turnscope.capture.tts import load_clip, speak
from turnscope.pipeline import PipelineResult, Sink


@dataclass
class _AgentTurn:
    start_ms: float
    end_ms: float | None = None
    decided_ms: float | None = None


CallerLine = tuple[int, Line, np.ndarray]  # script index, the line, its audio


def caller_lines(scenario: Scenario) -> list[CallerLine]:
    """Every caller line of the script with its audio (espeak-ng runs here: call it off the
    event loop when other calls are live)."""
    return [
        (i, line, line_audio(scenario, line))
        for i, line in enumerate(scenario.script)
        if line.speaker == "caller"
    ]


def line_audio(scenario: Scenario, line: Line) -> np.ndarray:
    """The audio of a caller line: its recording, or its text spoken with espeak-ng."""
    if line.audio is not None:
        base = scenario.source.parent if scenario.source else None
        path = line.audio if base is None or line.audio.is_absolute() else base / line.audio
        return load_clip(path, 16000)
    spec = scenario.caller
    return speak(
        line.text, voice=line.voice or spec.voice, rate_wpm=spec.rate_wpm, pitch=spec.pitch
    )


class ScriptedCaller(Sink):
    """Plays the caller side of ``scenario`` into ``track`` (a WebRTC track or a sound device);
    calls ``hangup`` when done."""

    def __init__(
        self,
        scenario: Scenario,
        track: Player,
        clock: CallClock,
        hangup: Callable[[str], Awaitable[None]],
        lines: list[CallerLine] | None = None,
    ) -> None:
        self.scenario = scenario
        self.track = track
        self.clock = clock
        self.hangup = hangup
        # Everything is spoken before the call starts: synthesis must not delay a barge-in.
        self.lines = caller_lines(scenario) if lines is None else lines
        self.agent_turns: list[_AgentTurn] = []
        self.trace: list[dict[str, Any]] = []
        self.finished_reason: str | None = None
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None

    # -- the sink side ------------------------------------------------------------------------

    def on_start(self, info: SourceInfo, settings: Settings) -> None:
        self._task = asyncio.ensure_future(self._run())

    def on_event(self, event: SpeechEvent) -> None:
        if event.channel != AGENT:
            return
        if isinstance(event, SpeechStart):
            # Every start counts, also speech resuming inside one utterance: an agent that
            # yields and answers within the end-of-turn silence still answered.
            self.agent_turns.append(_AgentTurn(event.at_ms))
        elif isinstance(event, EndOfTurn):
            for turn in self.agent_turns:
                if turn.decided_ms is None:
                    turn.end_ms, turn.decided_ms = event.at_ms, event.decided_ms
        self._changed.set()

    def on_finish(self, result: PipelineResult) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()

    # -- the script ---------------------------------------------------------------------------

    async def _until(self, call_ms: float) -> None:
        delay = (call_ms - self.clock.now_ms()) / 1000
        if delay > 0:
            await asyncio.sleep(delay)

    async def _wait_for(self, find: Callable[[float], Any], after_ms: float) -> Any:
        while True:
            found = find(after_ms)
            if found:
                return found
            self._changed.clear()
            await self._changed.wait()

    def _turn_after(self, after_ms: float) -> _AgentTurn | None:
        """The first agent turn that started after ``after_ms``."""
        turns = [t for t in self.agent_turns if t.start_ms >= after_ms - 1]
        return turns[0] if turns else None

    def _ended_turn_after(self, after_ms: float) -> _AgentTurn | None:
        """That turn, once the endpointer has decided it ended."""
        turn = self._turn_after(after_ms)
        return turn if turn is not None and turn.decided_ms is not None else None

    async def _run(self) -> None:
        spec = self.scenario.caller
        try:
            await asyncio.wait_for(self._script(), spec.timeout_s)
            self.finished_reason = "scenario finished"
        except (asyncio.TimeoutError, TimeoutError):
            self.finished_reason = f"scenario timed out after {spec.timeout_s:.0f} s"
            self.trace.append({"event": "timeout", "at_ms": round(self.clock.now_ms(), 1)})
        await self.hangup(self.finished_reason)

    async def _script(self) -> None:
        script = self.scenario.script
        last_end = 0.0  # call time our previous line finished going out
        for index, line, audio in self.lines:
            trigger, ms = line.trigger
            previous = script[index - 1].speaker if index > 0 else None
            if trigger == "at_ms":
                await self._until(ms)
            elif trigger == "after_agent_ms":
                if previous == "agent":
                    turn = await self._wait_for(self._ended_turn_after, last_end)
                    await self._until(turn.decided_ms + ms)
                else:
                    await self._until(last_end + ms)
            else:  # barge_in_ms / backchannel_ms: into the agent's current turn
                turn = await self._wait_for(self._turn_after, last_end)
                await self._until(turn.start_ms + ms)
            playback = self.track.play(audio, f"{index}:{line.text}")
            started = self.clock.now_ms()
            await playback.done
            rec = playback.record
            last_end = rec.end / 16 if rec and rec.end is not None else self.clock.now_ms()
            self.trace.append(
                {
                    "line": index,
                    "kind": line.kind,
                    "trigger": trigger,
                    "trigger_ms": ms,
                    "queued_ms": round(started, 1),
                    "sent": rec.to_dict() if rec else None,
                }
            )
        if self.lines and self.lines[-1][0] < len(script) - 1:
            # The script expects the agent to answer the last caller line: wait for it.
            await self._wait_for(self._ended_turn_after, last_end)
            last_end = max(last_end, self.agent_turns[-1].end_ms or last_end)
        await self._until(last_end + self.scenario.caller.hangup_after_ms)

    def truth(self) -> dict[str, Any]:
        """When each caller line really went out (the caller channel's ground truth)."""
        return {
            "utterances": [r.to_dict() for r in self.track.log],
            "trace": self.trace,
            "finished": self.finished_reason,
        }
