"""The scripted caller: speaks a scenario's caller lines into a live call at the right moments.

It hears the agent through its own endpointer on the agent channel (``AgentEar``: the same
settings the turn detection uses) and drives the call through the call's own interface
(``CallControl``: its clock, its caller track, hanging up). It copes with agents it did not
write: agents that do not greet, answer in one short sentence, reply twice, or never answer.
Per caller line:
- after_agent_ms: think time after the agent's end of turn (as the endpointer decides it); when
  the line before it is the caller's own, after that line (a choose: still answers the agent;
  a script of caller lines alone: each answers the agent, ``agent_lines.no_agent_lines``).
  The agent is waited for at most ``reply_timeout_ms`` of its silence (the greeting of a script
  that opens with the agent: ``greeting_timeout_ms`` from the start of media); then the line is
  spoken anyway, with a warning. If the agent speaks again as the line is due (a second reply,
  also one begun while the caller waited for words), the caller waits for it to end and thinks.
- at_ms: at a fixed time on the call clock;
- barge_in_* / backchannel_*: that far into the agent's current turn, while it speaks. When the
  agent's turn ends first, the line is spoken as an ordinary reply after the think time and is
  reported as not exercised.
After the last line (and the agent's answer, if the script expects one) it waits
hangup_after_ms and hangs up; timeout_s bounds the whole call. Every warning and degraded reason
goes to the caller's own ``found`` as it happens (the runner assembles it with the call's, the
live view prints it), and ``report()`` says, per line, what was spoken, how, and what was not.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable
from typing import Any, Protocol

from turnscope.actors.caller.acoustics import attach
from turnscope.actors.caller.agent_lines import AgentLines, answers_agent, no_agent_lines
from turnscope.actors.caller.caller_report import CallerReport
from turnscope.actors.caller.conversation import Reactions
from turnscope.actors.caller.ear import AgentEar, AgentSpeech
from turnscope.actors.caller.in_step import ahead_of_script, sent_starts
from turnscope.actors.caller.into_agent import IntoAgent
from turnscope.actors.caller.lines import CallerLine, LineRecord, caller_lines, line_pauses, quote
from turnscope.actors.caller.llm import LlmEndpoint
from turnscope.actors.caller.llm_driver import LlmDriver
from turnscope.actors.caller.llm_listen import LlmListener
from turnscope.actors.caller.mid import MidLines
from turnscope.actors.caller.notes import CallerFindings, CallerNote
from turnscope.actors.caller.overlaps import Overlaps
from turnscope.actors.caller.pauses import note_sent
from turnscope.actors.caller.phrase import PhraseTriggers
from turnscope.actors.caller.reply_gap import after_stop, reply_context
from turnscope.actors.caller.scenario import Line, Scenario
from turnscope.asr.settings import Settings
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import PcmFrame
from turnscope.capture.player import Player
from turnscope.capture.source import SourceInfo
from turnscope.reasons import Note, Severity


class CallControl(Protocol):
    """What the caller needs of a live call: its clock, its caller track, its frames as they
    are placed, a way to hang up, and the call's ``info`` (its details; what the caller
    finds is its own ``found``)."""

    clock: CallClock
    caller_track: Player
    info: SourceInfo
    frame_listeners: list[Callable[[PcmFrame], None]]
    ended: asyncio.Future | None
    end_reason: str | None
    script_done: bool

    async def hangup(self, reason: str = ..., *, degraded: bool = False) -> None: ...


class KeypadControl(CallControl, Protocol):
    """A call that can also press keys (a phone line)."""

    async def send_dtmf(self, digits: str, gap_ms: int) -> list[dict[str, Any]]: ...


class ScriptedCaller(
    Reactions, LlmDriver, LlmListener, PhraseTriggers, CallerReport, AgentLines, Overlaps, IntoAgent
):
    """Plays the caller side of ``scenario`` into ``call`` (a WebRTC call or a sound-device
    call) from ``start()``; hangs the call up when done. It reacts to the agent's words where
    the scenario asks it to (``Reactions``): feed it the agent's transcripts (``transcribed``)."""

    def __init__(
        self,
        scenario: Scenario,
        call: CallControl,
        settings: Settings,
        lines: list[CallerLine] | None = None,
        *,
        llm_endpoint: LlmEndpoint | None = None,
        replay: list[dict[str, Any]] | None = None,
    ) -> None:
        self.scenario = scenario
        self.call = call
        self.track = call.caller_track
        self.clock = call.clock
        self.ear = AgentEar(call.clock, settings)
        # Everything is spoken before the call starts: synthesis must not delay a barge-in.
        self.lines = caller_lines(scenario) if lines is None else lines
        self.mid = MidLines(scenario)  # the agent lines mid lines cut into, spoken (mid.py)
        # The caller's line: its background and the rooms' tails (acoustics.py), made already.
        self.bed = attach(scenario, self.track, [audio for _, _, audio in self.lines])
        self.records: list[LineRecord] = []
        self.found = CallerFindings()  # its warnings, degraded reasons and pauses made
        self.greeting: dict[str, Any] | None = None
        self.finished_reason: str | None = None
        self.timed_out = False
        self.error: str | None = None  # the caller's own failure, if it failed
        self._concluded = False
        self._nonstop = False
        self._hanging_up = False
        self._task: asyncio.Task | None = None
        self._init_reactions()
        self._init_llm(llm_endpoint, replay)

    def transcribed(self, start_ms: float, end_ms: float, text: str) -> None:
        """An agent utterance as the pipeline transcribed it (what the caller reacts to)."""
        self.ear.transcribed(start_ms, end_ms, text)

    def start(self) -> None:
        """Listen to the call and run the script (the call is connected, its clock running)."""
        self.call.frame_listeners.append(self.ear.hear)
        self._task = asyncio.ensure_future(self._run())
        if self.call.ended is not None:
            self.call.ended.add_done_callback(lambda _: self._call_ended())

    def _call_ended(self) -> None:
        self.ear.close()
        # The call may end from the agent's side (it hung up, died, went silent) mid-script.
        if self._task is not None and not self._task.done() and not self._hanging_up:
            self._task.cancel()  # not when it is the caller hanging up: that must finish
        if self.finished_reason is None:
            end = self.call.end_reason or "the call ended"
            self.finished_reason = f"the call ended before the script did ({end})"
        self._conclude()

    # -- the script ---------------------------------------------------------------------------

    @property
    def warnings(self) -> list[str]:
        return self.found.warnings

    def _warn(self, code: CallerNote, message: str) -> None:
        if Note(code, message, Severity.WARNING) not in self.found.notes:  # said once
            self.found.warn(code, message)

    def _degrade(self, code: CallerNote, reason: str) -> None:
        self.found.degrade(code, reason)

    async def _run(self) -> None:
        try:
            await self._play()
        except Exception as exc:  # a bug in the caller: the call still ends, kept, and says so
            self.finished_reason = f"the scripted caller failed ({type(exc).__name__})"
            self._degrade(
                CallerNote.CALLER_FAILED,
                f"the scripted caller failed ({exc!r}, a bug in turnscope: please report it); "
                "the call was ended there and what it captured kept",
            )
            self.error = "".join(traceback.format_exception(exc))  # result.json: script.error
        self._hanging_up = True
        await self.call.hangup(self.finished_reason)

    async def _play(self) -> None:
        spec = self.scenario.caller
        try:
            await asyncio.wait_for(self._script(), spec.timeout_s)
            self.finished_reason = "scenario finished"
        except (asyncio.TimeoutError, TimeoutError):
            self.timed_out = True
            self.finished_reason = f"scenario timed out after {spec.timeout_s:g} s"
            self._warn(CallerNote.TIMED_OUT, self.timeout_line())
            talking = self.ear.current()
            if (
                talking is not None
                and self.clock.now_ms() - talking.start_ms > spec.reply_timeout_ms
            ):
                self._nonstop = True
                self._degrade(
                    CallerNote.AGENT_NONSTOP,
                    f"the agent talked without a pause from {talking.start_ms / 1000:.1f} s "
                    "until the call's timeout; the caller could not take its turns as planned",
                )
        self._conclude()

    def _conclude(self) -> None:
        """What the call's evidence lacks because of how the script went (once)."""
        if self._concluded:
            return
        self._concluded = True
        if not any(r.status == "spoken" for r in self.records):
            self._degrade(
                CallerNote.NEVER_SPOKE,
                f"the caller never got to speak ({self.finished_reason or 'the call ended'}); "
                "the script could not be carried out",
            )

    def judge_in_step(self) -> None:
        """Degrade the call when the agent ran ahead of the script, judged on every agent
        transcript: called once the pipeline has transcribed the call's last turn (at the
        caller's own end, under load, a turn's words could still be on their way)."""
        ahead = ahead_of_script(self.scenario.script, self.ear.texts, sent_starts(self.records))
        if ahead is not None:
            self._degrade(CallerNote.AHEAD_OF_SCRIPT, ahead.message)

    async def _script(self) -> None:
        script = self.scenario.script
        last_end = 0.0  # call time our previous line finished going out
        for index, line, audio in self.lines:
            if self.ended_early:
                break
            trigger, ms = line.trigger
            rec = LineRecord(index, line.text, line.kind, trigger, ms, placement=line.placement)
            spoken_any = any(r.status == "spoken" for r in self.records)
            self.records.append(rec)
            previous = script[index - 1].speaker if index > 0 else None
            last = self._previous
            after_backchannel = last is not None and last.spoken_as == "backchannel"
            spoken_as = line.kind
            # It answers the agent's turn, not a backchannel of its own said into that turn.
            if trigger == "reply_gap_ms" or (trigger == "after_agent_ms" and after_backchannel):
                previous, last_end = reply_context(script, index, self.records)
            if answers_agent(self.scenario, index):
                previous = "agent"  # it answers the agent (the greeting, or its previous line)
            if trigger == "at_ms":
                await self.ear.until(ms)
            elif trigger in ("after_agent_ms", "reply_gap_ms") and previous != "agent":
                await self.ear.until(last_end + ms)
            elif trigger in ("after_agent_ms", "reply_gap_ms"):
                await self._after_agent(index, line, ms, last_end, spoken_any, rec)
            else:
                spoken_as = await self._into_agent(index, line, last_end, rec)
            text = line.text
            if trigger == "after_agent_ms" and self.scenario.reactive and line.dtmf is None:
                chosen = await self._react(index, line, audio, rec, last_end)
                if chosen is None:
                    break  # the caller ends the call here (until)
                text, audio, last_end = chosen
                rec.text = text
                if not text:
                    continue  # no branch to take
            if trigger == "after_agent_ms" and rec.waited_for_agent:  # a transcript under load
                await self._quiet_then(self.clock.now_ms(), ms, rec)  # came 3.6 s after its turn
            rec.spoken_as = spoken_as
            rec.into_agent_speech = self.ear.speaking or self.ear.current() is not None
            if line.dtmf is not None:
                last_end = await self._press(line.dtmf, rec)
                continue
            playback = self.track.play(audio, f"{index}:{text}")
            rec.queued_ms = round(self.clock.now_ms(), 1)
            await playback.done
            sent = playback.record
            rec.status = "spoken"
            rec.sent = sent.to_dict() if sent else None
            self.found.said(spoken_as, sent)
            planned = line_pauses(self.scenario, line)[1] if text == line.text else []
            note_sent(self.found.pauses, planned, sent)  # a branch taken says its own words
            last_end = sent.end_ms if sent and sent.end is not None else self.clock.now_ms()
        said_end = last_end  # the end of the caller's own last words
        llm_driven = self.scenario.caller.driver == "llm"
        if llm_driven and not self.ended_early:
            last_end = await self._llm_converse(last_end)
        elif self.lines and self._answer_expected() and not self.ended_early:
            # The script expects the agent to answer the last caller line: wait for it.
            speech = await self._talked_over(self.records[-1], self.records[-1]) or (
                await self.ear.start_after(last_end, self.scenario.caller.reply_timeout_ms)
            )
            if speech is None:
                self._warn(
                    CallerNote.LAST_UNANSWERED,
                    f"the agent did not answer the last caller line (script[{self.lines[-1][0]}]) "
                    f"within {self.scenario.caller.reply_timeout_ms} ms",
                )
            else:
                await self._end_of(speech)
                await self._rest_of_row(len(script), said_end, 0, self.records[-1])
                last_end = max(last_end, *(s.end_ms or 0 for s in self.ear.speeches))
        if not llm_driven and (self.scenario.facts or self.scenario.until is not None):
            last_end = max(last_end, await self._converse_on(said_end))
        self.call.script_done = True
        await self.ear.until(last_end + self.scenario.caller.hangup_after_ms)

    def _answer_expected(self) -> bool:
        """Whether the agent answers the script's last caller line: an agent line follows it,
        the script has none (each caller line answers the agent), or the call goes on past the
        script (``facts`` or ``until``: the answer may ask for a fact or say the words)."""
        scenario = self.scenario
        return (
            self.lines[-1][0] < len(scenario.script) - 1
            or no_agent_lines(scenario)
            or bool(scenario.facts)
            or scenario.until is not None
        )

    async def _press(self, digits: str, rec: LineRecord) -> float:
        """A dtmf line: the keys pressed on the phone line; when the last one went."""
        call: KeypadControl = self.call  # type: ignore[assignment]
        rec.queued_ms = round(self.clock.now_ms(), 1)
        sent = await call.send_dtmf(digits, self.scenario.caller.dtmf_gap_ms)
        rec.status = "spoken"
        rec.sent = {"dtmf": sent}
        return self.clock.now_ms()

    async def _agent_turn(self, after_ms: float, timeout_ms: float, rec: LineRecord) -> Any:
        speech = await self.ear.start_after(after_ms, timeout_ms)
        rec.agent_answered = speech is not None
        return speech

    async def _end_of(self, speech: AgentSpeech) -> AgentSpeech:
        """The end of ``speech``'s utterance; an utterance the endpointer had to cut means the
        agent never paused, and the caller could not take its turn."""
        await self.ear.end_of(speech)
        if speech.forced and not self._nonstop:
            self._nonstop = True
            self._degrade(
                CallerNote.AGENT_NONSTOP,
                "the agent talked without a pause until the endpointer cut its turn at "
                "vad.max_utterance_ms; the caller could not take its turns as planned",
            )
        return speech

    async def _quiet_then(self, at_ms: float, think_ms: int, rec: LineRecord) -> None:
        """Sleep until ``at_ms``; while the agent is speaking again by then (a second reply),
        wait for that utterance to end too and think again."""
        while True:
            await self.ear.until(at_ms)
            if self.ear.current() is None:
                return
            speech = await self._end_of(self.ear.speeches[-1])
            rec.notes.append(
                f"waited for the agent's further speech ({speech.start_ms:.0f}-"
                f"{speech.end_ms or 0:.0f} ms)"
            )
            at_ms = (speech.decided_ms or self.clock.now_ms()) + think_ms

    async def _after_agent(
        self, index: int, line: Line, think_ms: int, last_end: float, spoken_any: bool,
        rec: LineRecord,
    ) -> None:  # fmt: skip
        """Wait for the agent's turn (the greeting, or its answer to our previous line) to end,
        at most the timeout, then think."""
        spec = self.scenario.caller
        opens = index > 0 and self.scenario.script[0].speaker == "agent"
        greeting = not spoken_any and (opens or no_agent_lines(self.scenario))
        timeout = spec.greeting_timeout_ms if greeting else spec.reply_timeout_ms
        rec.waited_for_agent = True
        speech = (
            await self._talked_through(rec)
            or await self._talked_over(self._previous, rec)
            or await self._agent_turn(last_end, timeout, rec)
        )
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
                    CallerNote.NO_GREETING,
                    f"the agent did not greet: nothing heard from it within {timeout} ms of "
                    "media starting; the caller went on with its first line",
                )
            else:
                self._warn(
                    CallerNote.UNANSWERED,
                    f"script[{index}] {quote(line.text)}: the agent did not answer within "
                    f"{timeout} ms; the caller went on (an unanswered caller turn)",
                )
            return
        if rec.trigger == "reply_gap_ms":  # from the agent's voice stopping (reply_gap.py)
            await after_stop(self.ear, speech, think_ms)
        else:
            at_ms = (await self._end_of(speech)).decided_ms or self.clock.now_ms()
            await self._quiet_then(at_ms + think_ms, think_ms, rec)
        await self._rest_of_row(index, last_end, think_ms, rec)
