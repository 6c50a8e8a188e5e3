"""The scripted caller: speaks a scenario's caller lines into a live call at the right moments.

It watches the endpointer's events on the agent channel (the same events the turn detection
uses) to decide when to speak, and copes with agents it did not write: agents that do not
greet, answer in one short sentence, reply twice, or never answer. Per caller line:
- after_agent_ms: think time after the agent's end of turn (as the endpointer decides it); when
  the line before it in the script is the caller's own, after that line instead. The agent's
  answer is waited for at most ``reply_timeout_ms`` of its silence (the greeting of a script
  that opens with the agent: ``greeting_timeout_ms`` from the start of media); then the line is
  spoken anyway, with a warning. If the agent is speaking again at that moment (a second reply),
  the caller waits for that one to end too, as a polite caller would.
- at_ms: at a fixed time on the call clock;
- barge_in_* / backchannel_*: that far into the agent's current turn, while it speaks. When the
  agent's turn ends first, the line is spoken as an ordinary reply after the think time and is
  reported as not exercised.
After the last line (and the agent's answer, if the script expects one) it waits
hangup_after_ms and hangs up; timeout_s bounds the whole call. Every warning goes to the call's
``info.warnings`` as it happens (the live view prints it), and ``report()`` says, per line, what
was spoken, how, and what was not.
"""

from __future__ import annotations

import asyncio
import contextlib
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np

from turnscope.asr.events import EndOfTurn, SpeechEvent, SpeechStart, SpeechStop
from turnscope.asr.settings import Settings
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import AGENT
from turnscope.capture.player import Player
from turnscope.capture.script.scenario import DEFAULT_THINK_MS, Line, Scenario
from turnscope.capture.script.speech import load_clip, speak
from turnscope.capture.source import SourceInfo
from turnscope.pipeline import PipelineResult, Sink

CallerLine = tuple[int, Line, np.ndarray]  # script index, the line, its audio
Status = Literal["spoken", "not spoken"]


class CallControl(Protocol):
    """What the caller needs of a live call: its clock, its caller track, a way to hang up, and
    the call's ``info`` to report warnings in."""

    clock: CallClock
    caller_track: Player
    info: SourceInfo

    async def hangup(self, reason: str = ..., *, degraded: bool = False) -> None: ...


@dataclass
class _AgentSpeech:
    """One agent speech start as the caller heard it, and the end of its utterance once
    decided."""

    start_ms: float
    end_ms: float | None = None
    decided_ms: float | None = None
    forced: bool = False  # the utterance ran to max_utterance_ms without a pause


@dataclass
class LineRecord:
    """What happened to one caller line."""

    line: int
    text: str
    kind: str
    trigger: str
    trigger_ms: int | None
    placement: str | None = None
    status: Status = "not spoken"
    spoken_as: str | None = None  # barge_in | backchannel | line (an unexercised barge-in: line)
    into_agent_speech: bool | None = None
    agent_turn_ms: float | None = None  # length of the agent turn a barge-in aimed at
    waited_for_agent: bool | None = None  # None: the line did not wait for the agent
    agent_answered: bool | None = None
    queued_ms: float | None = None
    sent: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != []}


def caller_lines(scenario: Scenario) -> list[CallerLine]:
    """Every caller line of the script with its audio (espeak-ng runs here: call it off the
    event loop when other calls are live)."""
    return [
        (i, line, line_audio(scenario, line))
        for i, line in enumerate(scenario.script)
        if line.speaker == "caller"
    ]


def line_audio(scenario: Scenario, line: Line) -> np.ndarray:
    """The audio of a caller line: its recording (the scenario resolved its path), or its text
    spoken with espeak-ng."""
    if line.audio is not None:
        return load_clip(line.audio, 16000)
    spec = scenario.caller
    return speak(
        line.text, voice=line.voice or spec.voice, rate_wpm=spec.rate_wpm, pitch=spec.pitch
    )


def _quote(text: str, limit: int = 40) -> str:
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


class ScriptedCaller(Sink):
    """Plays the caller side of ``scenario`` into ``call`` (a WebRTC call or a sound-device
    call); hangs the call up when done."""

    def __init__(
        self,
        scenario: Scenario,
        call: CallControl,
        lines: list[CallerLine] | None = None,
    ) -> None:
        self.scenario = scenario
        self.call = call
        self.track = call.caller_track
        self.clock = call.clock
        # Everything is spoken before the call starts: synthesis must not delay a barge-in.
        self.lines = caller_lines(scenario) if lines is None else lines
        self.agent: list[_AgentSpeech] = []
        self.agent_speaking = False
        self.records: list[LineRecord] = []
        self.warnings: list[str] = []
        self.greeting: dict[str, Any] | None = None
        self.finished_reason: str | None = None
        self.timed_out = False
        self._concluded = False
        self._nonstop = False
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
            self.agent.append(_AgentSpeech(event.at_ms))
            self.agent_speaking = True
        elif isinstance(event, SpeechStop):
            self.agent_speaking = False
        elif isinstance(event, EndOfTurn):
            self.agent_speaking = False
            for speech in self.agent:
                if speech.decided_ms is None:
                    speech.end_ms, speech.decided_ms = event.at_ms, event.decided_ms
                    speech.forced = event.utterance.forced
        self._changed.set()

    def on_finish(self, result: PipelineResult) -> None:
        # The call may end from the agent's side (it hung up, died, went silent) mid-script.
        if self._task is not None and not self._task.done():
            self._task.cancel()  # (or it is hanging up, the script done)
        if self.finished_reason is None:
            end = getattr(self.call, "end_reason", None) or "the call ended"
            self.finished_reason = f"the call ended before the script did ({end})"
        self._conclude()

    # -- waiting on the agent -----------------------------------------------------------------

    async def _until(self, call_ms: float) -> None:
        delay = (call_ms - self.clock.now_ms()) / 1000
        if delay > 0:
            await asyncio.sleep(delay)

    async def _wait_for(
        self, find: Callable[[], Any], deadline_ms: float | None = None
    ) -> Any | None:
        """``find()`` once it is truthy; None when the call clock passes ``deadline_ms``."""
        while True:
            found = find()
            if found:
                return found
            self._changed.clear()
            if deadline_ms is None:
                await self._changed.wait()
                continue
            remaining = (deadline_ms - self.clock.now_ms()) / 1000
            if remaining <= 0:
                return find() or None
            with contextlib.suppress(asyncio.TimeoutError, TimeoutError):
                await asyncio.wait_for(self._changed.wait(), remaining)

    def _speech_after(self, after_ms: float) -> _AgentSpeech | None:
        """The first agent speech that started after ``after_ms``."""
        return next((s for s in self.agent if s.start_ms >= after_ms - 1), None)

    def _open_speech(self) -> bool:
        """The agent is in an utterance that has not ended (speaking, or in a pause)."""
        return bool(self.agent) and self.agent[-1].decided_ms is None

    def _typical_turn_ms(self) -> float | None:
        """The median length of the agent's finished utterances so far (for ``mid``)."""
        seen: dict[float, float] = {}
        for s in self.agent:
            if s.end_ms is not None:
                seen.setdefault(s.end_ms, s.end_ms - s.start_ms)
        lengths = [ms for ms in seen.values() if ms > 0]
        return statistics.median(lengths) if lengths else None

    async def _agent_turn(self, after_ms: float, timeout_ms: float, rec: LineRecord) -> Any:
        """Wait for the agent to start speaking after ``after_ms`` (at most ``timeout_ms``);
        the speech, or None with the warning said."""
        speech = await self._wait_for(lambda: self._speech_after(after_ms), after_ms + timeout_ms)
        rec.agent_answered = speech is not None
        return speech

    async def _end_of(self, speech: _AgentSpeech) -> _AgentSpeech:
        """Wait for the end of the utterance ``speech`` belongs to."""
        await self._wait_for(lambda: speech.decided_ms is not None)
        if speech.forced and not self._nonstop:
            self._nonstop = True
            self.call.info.degraded.append(
                "the agent talked without a pause until the endpointer cut its turn at "
                "vad.max_utterance_ms; the caller could not take its turns as planned"
            )
        return speech

    async def _quiet_then(self, at_ms: float, think_ms: int, rec: LineRecord) -> None:
        """Sleep until ``at_ms``; while the agent is speaking again by then (a second reply),
        wait for that utterance to end too and think again."""
        while True:
            await self._until(at_ms)
            if not self._open_speech():
                return
            speech = await self._end_of(self.agent[-1])
            rec.notes.append(
                f"waited for the agent's further speech ({speech.start_ms:.0f}-"
                f"{speech.end_ms or 0:.0f} ms)"
            )
            at_ms = (speech.decided_ms or self.clock.now_ms()) + think_ms

    # -- the script ---------------------------------------------------------------------------

    def _warn(self, message: str) -> None:
        if message not in self.warnings:
            self.warnings.append(message)
            self.call.info.warnings.append(message)

    async def _run(self) -> None:
        spec = self.scenario.caller
        try:
            await asyncio.wait_for(self._script(), spec.timeout_s)
            self.finished_reason = "scenario finished"
        except (asyncio.TimeoutError, TimeoutError):
            self.timed_out = True
            self.finished_reason = f"scenario timed out after {spec.timeout_s:g} s"
            self._warn(self._timeout_line())
            talking = next((s for s in self.agent if s.decided_ms is None), None)
            now = self.clock.now_ms()
            if talking is not None and now - talking.start_ms > spec.reply_timeout_ms:
                self._nonstop = True
                self.call.info.degraded.append(
                    f"the agent talked without a pause from {talking.start_ms / 1000:.1f} s "
                    "until the call's timeout; the caller could not take its turns as planned"
                )
        self._conclude()
        await self.call.hangup(self.finished_reason)

    def _conclude(self) -> None:
        """What the call's evidence lacks because of how the script went (once)."""
        if self._concluded:
            return
        self._concluded = True
        spoken = sum(1 for r in self.records if r.status == "spoken")
        if not spoken:
            self.call.info.degraded.append(
                f"the caller never got to speak ({self.finished_reason or 'the call ended'}); "
                "the script could not be carried out"
            )

    def _timeout_line(self) -> str:
        spoken = [r for r in self.records if r.status == "spoken"]
        unspoken = [(i, line) for i, line, _ in self.lines if i not in {r.line for r in spoken}]
        said = f"{len(spoken)} of {len(self.lines)} caller lines spoken"
        if unspoken:
            said += "; not spoken: " + ", ".join(
                f"script[{i}] {_quote(line.text, 30)}" for i, line in unspoken
            )
        limit = self.scenario.caller.timeout_s
        return f"the call reached the scenario's {limit:g} s timeout ({said})"

    async def _script(self) -> None:
        script = self.scenario.script
        last_end = 0.0  # call time our previous line finished going out
        spoken_any = False
        for index, line, audio in self.lines:
            trigger, ms = line.trigger
            rec = LineRecord(index, line.text, line.kind, trigger, ms, placement=line.placement)
            self.records.append(rec)
            previous = script[index - 1].speaker if index > 0 else None
            spoken_as = line.kind
            if trigger == "at_ms":
                await self._until(ms)
            elif trigger == "after_agent_ms" and previous != "agent":
                await self._until(last_end + ms)
            elif trigger == "after_agent_ms":
                await self._after_agent(index, line, ms, last_end, spoken_any, rec)
            else:
                spoken_as = await self._into_agent(index, line, last_end, rec)
            rec.spoken_as = spoken_as
            rec.into_agent_speech = self.agent_speaking or self._open_speech()
            playback = self.track.play(audio, f"{index}:{line.text}")
            rec.queued_ms = round(self.clock.now_ms(), 1)
            await playback.done
            sent = playback.record
            rec.status = "spoken"
            rec.sent = sent.to_dict() if sent else None
            spoken_any = True
            last_end = sent.end / 16 if sent and sent.end is not None else self.clock.now_ms()
        if self.lines and self.lines[-1][0] < len(script) - 1:
            # The script expects the agent to answer the last caller line: wait for it.
            final = LineRecord(len(script) - 1, "(the agent's last answer)", "answer", "", None)
            speech = await self._agent_turn(last_end, self.scenario.caller.reply_timeout_ms, final)
            if speech is None:
                self._warn(
                    f"the agent did not answer the last caller line (script[{self.lines[-1][0]}]) "
                    f"within {self.scenario.caller.reply_timeout_ms} ms"
                )
            else:
                await self._end_of(speech)
                last_end = max(last_end, speech.end_ms or last_end)
        await self._until(last_end + self.scenario.caller.hangup_after_ms)

    async def _after_agent(
        self, index: int, line: Line, think_ms: int, last_end: float, spoken_any: bool,
        rec: LineRecord,
    ) -> None:  # fmt: skip
        """Wait for the agent's turn (the greeting, or its answer to our previous line) to end,
        at most the timeout, then think."""
        spec = self.scenario.caller
        greeting = not spoken_any and index > 0 and self.scenario.script[0].speaker == "agent"
        timeout = spec.greeting_timeout_ms if greeting else spec.reply_timeout_ms
        rec.waited_for_agent = True
        speech = await self._agent_turn(last_end, timeout, rec)
        if greeting:
            self.greeting = {
                "expected": True,
                "heard": speech is not None,
                "timeout_ms": timeout,
                "started_ms": None if speech is None else round(speech.start_ms, 1),
            }
        if speech is None:
            if greeting:
                self._warn(
                    f"the agent did not greet: nothing heard from it within {timeout} ms of "
                    "media starting; the caller went on with its first line"
                )
            else:
                self._warn(
                    f"script[{index}] {_quote(line.text)}: the agent did not answer within "
                    f"{timeout} ms; the caller went on (an unanswered caller turn)"
                )
            return
        speech = await self._end_of(speech)
        await self._quiet_then((speech.decided_ms or self.clock.now_ms()) + think_ms, think_ms, rec)

    async def _into_agent(self, index: int, line: Line, last_end: float, rec: LineRecord) -> str:
        """Barge in (or backchannel) that far into the agent's current turn while it speaks;
        what the line was spoken as."""
        what = "barge-in" if line.kind == "barge_in" else "backchannel"
        # The agent's current turn: the utterance it is in (a second backchannel into the same
        # line counts from the same start), else the next one it starts.
        speech = next((s for s in self.agent if s.decided_ms is None), None)
        if speech is None:
            speech = await self._agent_turn(last_end, self.scenario.caller.reply_timeout_ms, rec)
        if speech is None:
            self._warn(
                f"script[{index}] {_quote(line.text)}: planned as a {what}, but the agent did "
                f"not speak within {self.scenario.caller.reply_timeout_ms} ms; spoken into "
                "silence"
            )
            return "line"
        _, offset = line.placed_trigger(self._typical_turn_ms())
        rec.trigger_ms = offset
        target = speech.start_ms + offset
        # Until the moment, or the end of the agent's utterance if that comes first.
        await self._wait_for(lambda: speech.decided_ms is not None, target)
        if speech.decided_ms is None and not self.agent_speaking:
            # A pause inside the agent's turn: barge in when it resumes, unless the turn ends.
            await self._wait_for(lambda: self.agent_speaking or speech.decided_ms is not None)
        if speech.decided_ms is None:
            return line.kind
        turn_ms = (speech.end_ms or speech.start_ms) - speech.start_ms
        rec.agent_turn_ms = round(turn_ms, 1)
        self._warn(
            f"script[{index}] {_quote(line.text)}: planned as a {what} {offset} ms into the "
            f"agent's turn, but that turn lasted {turn_ms:.0f} ms; spoken as an ordinary reply "
            f"(the {what} was not exercised)"
        )
        await self._quiet_then(speech.decided_ms + DEFAULT_THINK_MS, DEFAULT_THINK_MS, rec)
        return "line"

    # -- what happened ------------------------------------------------------------------------

    def planned(self, kind: str) -> int:
        return sum(1 for _, line, _ in self.lines if line.kind == kind)

    def exercised(self, kind: str) -> int:
        return sum(1 for r in self.records if r.kind == kind and r.spoken_as == kind)

    def report(self) -> dict[str, Any]:
        """Per line what was spoken and how, the greeting, barge-ins and backchannels planned
        and exercised, and how the script ended (result.json's ``script``)."""
        done = {r.line for r in self.records}
        unspoken = [
            LineRecord(i, line.text, line.kind, *line.trigger, placement=line.placement)
            for i, line, _ in self.lines
            if i not in done
        ]
        records = sorted([*self.records, *unspoken], key=lambda r: r.line)
        opens_with_agent = self.scenario.script[0].speaker == "agent"
        return {
            "finished": self.finished_reason,
            "timed_out": self.timed_out,
            "greeting": self.greeting or {"expected": opens_with_agent, "heard": None},
            "lines": [r.to_dict() for r in records],
            "spoken": sum(1 for r in records if r.status == "spoken"),
            "not_spoken": [r.line for r in records if r.status != "spoken"],
            "barge_ins": {
                "planned": self.planned("barge_in"),
                "exercised": self.exercised("barge_in"),
            },
            "backchannels": {
                "planned": self.planned("backchannel"),
                "exercised": self.exercised("backchannel"),
            },
            "unanswered_lines": [r.line for r in records if r.agent_answered is False],
            "warnings": list(self.warnings),
        }

    def truth(self) -> dict[str, Any]:
        """When each caller line really went out (the caller channel's ground truth)."""
        return {
            "utterances": [r.to_dict() for r in self.track.log],
            "trace": [r.to_dict() for r in self.records],
            "finished": self.finished_reason,
        }
