"""The caller's reactions to what the agent says: a line that waits for the agent's words, a
branch chosen by them, a fact given when the agent asks for it, the goal, an early end.

A mixin of ``ScriptedCaller`` (its ear, track, records and warnings). Before a caller line that
answers the agent it reads the agent's last turn as the pipeline transcribed it (waiting for the
transcript a bounded time: the caller's reaction, never the agent's latency) and decides with
the plain functions of ``reactive``; every decision is kept for the bundle and the report.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from turnscope.actors.caller import reactive
from turnscope.actors.caller.lines import LineRecord, is_said, quote, said
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.reactive import Decision, DecisionKind
from turnscope.actors.caller.scenario import Line
from turnscope.offload import offload

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller

# How long the caller waits for the transcript of the agent's turn after the turn ended (the
# ASR worker is usually a few hundred ms behind); past it, it decides on what it has.
TRANSCRIPT_WAIT_MS = 4000
# A line waiting for words the agent never says gives up after this many agent turns.
MAX_WAIT_TURNS = 4
# One fact is given at most this often in a call (an agent asking again and again loops).
MAX_FACT_ANSWERS = 3


class Reactions:
    """What ``ScriptedCaller`` does with the agent's words (see the module)."""

    decisions: list[Decision]
    ended_early: str | None
    goal_reached: bool
    _fact_answers: dict[str, int]

    def _init_reactions(self) -> None:
        self.decisions = []
        self.ended_early = None
        self.goal_reached = False
        self._fact_answers = {}

    # -- hearing ------------------------------------------------------------------------------

    async def _heard(self: ScriptedCaller, since_ms: float) -> str:
        """The agent's words since ``since_ms`` (its last turn), once transcribed."""
        ends = [s.end_ms for s in self.ear.speeches if s.end_ms is not None]
        ended = [end for end in ends if end > since_ms]
        if ended and not await self.ear.transcripts_until(max(ended), TRANSCRIPT_WAIT_MS):
            self._warn(
                CallerNote.TRANSCRIPT_LATE,
                f"the transcript of the agent's turn ending at {max(ended) / 1000:.1f} s took "
                f"over {TRANSCRIPT_WAIT_MS} ms; the caller decided on what it had (a caller "
                "delay, not the agent's)",
            )
        text = self.ear.said_since(since_ms)
        self._check_goal(text)
        return text

    def _decide(
        self: ScriptedCaller, kind: DecisionKind, line: int | None, heard: str, outcome: str,
        hit: reactive.Hit | None = None, condition: Any = None,
    ) -> None:  # fmt: skip
        self.decisions.append(
            Decision(
                kind,
                self.clock.now_ms(),
                line,
                heard,
                outcome,
                matched=hit.matched if hit else None,
                condition=condition.model_dump(exclude_none=True) if condition else None,
            )
        )

    def _check_goal(self: ScriptedCaller, heard: str) -> None:
        goal = self.scenario.goal
        if self.goal_reached or goal is None or goal.reached_when is None:
            return
        hit = reactive.test(goal.reached_when, heard)
        if hit is not None:
            self.goal_reached = True
            self._decide(DecisionKind.GOAL, None, heard, "goal reached", hit, goal.reached_when)

    def _until_met(self: ScriptedCaller, heard: str, line: int | None) -> bool:
        """Whether the call should end now (``until``); says why once."""
        until = self.scenario.until
        if until is None or self.ended_early:
            return self.ended_early is not None
        why, hit = None, None
        if until.agent_says is not None and (hit := reactive.test(until.agent_says, heard)):
            why = "the agent said it"
        elif until.goal_reached and self.goal_reached:
            why = "the goal was reached"
        elif until.turns is not None and self._agent_turns() >= until.turns:
            why = f"{until.turns} agent turns"
        elif until.seconds is not None and self.clock.now_ms() >= until.seconds * 1000:
            why = f"{until.seconds:g} s into the call"
        if why is None:
            return False
        self.ended_early = why
        self._decide(DecisionKind.UNTIL, line, heard, f"ended the call: {why}", hit,
                     until.agent_says if hit else None)  # fmt: skip
        return True

    def _after_script(self: ScriptedCaller) -> int:
        """The line number of what the caller says after its script (listed after its lines,
        in the order spoken): one past the script's last line."""
        return len(self.scenario.script)

    def _agent_turns(self: ScriptedCaller) -> int:
        return len({s.end_ms for s in self.ear.speeches if s.end_ms is not None})

    # -- reacting before a line ---------------------------------------------------------------

    async def _react(
        self: ScriptedCaller, index: int, line: Line, audio: np.ndarray, rec: LineRecord,
        last_end: float,
    ) -> tuple[str, np.ndarray, float] | None:  # fmt: skip
        """Before caller line ``index`` (the agent's turn has ended and the think time passed):
        give the facts the agent asked for, wait for the words the line waits for, choose its
        branch. The text and audio to speak and the end of what the caller said meanwhile;
        None when the call ends here (``until``)."""
        waited = 0
        while True:
            heard = await self._heard(last_end)
            if self._until_met(heard, index):
                rec.notes.append(f"not spoken: the caller ended the call ({self.ended_early})")
                return None
            answered = await self._give_fact(index, line, heard, last_end)
            if answered is not None:
                last_end = answered
                continue
            if line.choose is not None:
                k, branch, hit = reactive.choose(line.choose, heard) or (None, None, None)
                if branch is None:
                    rec.notes.append("no branch matched and there is no default: not spoken")
                    self._decide(DecisionKind.CHOOSE, index, heard, "no branch matched")
                    return "", np.zeros(0, np.float32), last_end
                text = branch.caller  # what the caller did, as for a fact: what it said
                said = f"said {quote(text)} (choose[{k}])"
                self._decide(DecisionKind.CHOOSE, index, heard, said, hit, branch.when)
                return text, await self._audio(text, branch.voice or line.voice), last_end
            if line.when is None:
                return line.text, audio, last_end
            hit = reactive.test(line.when, heard)
            if hit is not None:
                self._decide(DecisionKind.WHEN, index, heard, f"said {quote(line.text)}", hit,
                             line.when)  # fmt: skip
                return line.text, audio, last_end
            waited += 1
            heard_end = max((s.end_ms or 0.0 for s in self.ear.speeches), default=last_end)
            if waited > MAX_WAIT_TURNS or not await self._next_turn(heard_end, rec):
                self._warn(
                    CallerNote.CONDITION_NEVER_MET,
                    f"script[{index}].when: the agent never said what the line waits for "
                    f"({waited} turn(s); heard last: {quote(heard, 70)}); spoken anyway",
                )
                self._decide(DecisionKind.WHEN, index, heard, "condition never met: spoken")
                return line.text, audio, last_end

    async def _next_turn(self: ScriptedCaller, after_ms: float, rec: LineRecord) -> bool:
        """Wait for the agent's next turn (its first speech after ``after_ms``), to its end and
        the think time; False when it does not come within the reply timeout."""
        spec = self.scenario.caller
        speech = await self.ear.start_after(after_ms, spec.reply_timeout_ms)
        if speech is None:
            return False
        await self._end_of(speech)
        think = rec.trigger_ms or 0
        await self._quiet_then((speech.decided_ms or self.clock.now_ms()) + think, think, rec)
        return True

    async def _give_fact(
        self: ScriptedCaller, index: int | None, line: Line | None, heard: str, since: float
    ) -> float | None:
        """When the agent's last turn asks for a fact the line does not give: say it, wait for
        the agent's answer; the end of what the caller said. None: no fact to give."""
        facts = self.scenario.facts
        given = {d.notes[0] for d in self.decisions if d.kind == DecisionKind.FACT
                 and d.at_ms >= since and d.notes}  # fmt: skip
        asked = reactive.fact_asked(facts, heard, given) if facts else None
        if asked is None:
            return None
        name, hit = asked
        fact = facts[name]
        answer = reactive.fact_answer(fact)
        if line is not None and line.choose is None and reactive.said_in(fact.value, line.text):
            return None  # the scripted line gives it
        count = self._fact_answers.get(name, 0)
        if count >= MAX_FACT_ANSWERS:
            return None
        self._fact_answers[name] = count + 1
        self._decide(DecisionKind.FACT, index, heard, f"said {quote(answer)}", hit)
        self.decisions[-1].notes.append(name)
        line_no = index if index is not None else self._after_script()
        rec = LineRecord(line_no, answer, "fact", "after_agent_ms", 0)
        self.records.append(rec)
        playback = self.track.play(await self._audio(answer, None), f"{rec.line}:{answer}")
        rec.queued_ms = round(self.clock.now_ms(), 1)
        await playback.done
        sent = playback.record
        rec.status, rec.spoken_as = "spoken", "line"
        rec.sent = sent.to_dict() if sent else None
        end = sent.end_ms if sent and sent.end is not None else self.clock.now_ms()
        rec.agent_answered = await self._next_turn(end, rec)
        return end

    async def _audio(self: ScriptedCaller, text: str, voice: str | None) -> np.ndarray:
        if is_said(self.scenario, text, voice):
            return said(self.scenario, text, voice)
        return await offload(said, self.scenario, text, voice)  # not spoken ahead: off the loop

    # -- after the script ---------------------------------------------------------------------

    async def _converse_on(self: ScriptedCaller, last_end: float) -> float:
        """After the script, and the agent's answer to its last caller line: keep answering
        the agent's questions for facts until ``until`` is met or the agent stops asking; the
        end of what the caller said last."""
        while not self.ended_early:
            heard = await self._heard(last_end)
            if self._until_met(heard, None):
                break
            answered = await self._give_fact(None, None, heard, last_end)
            if answered is None:
                break
            last_end = answered
        return last_end

    def reactions_report(self) -> dict[str, Any]:
        """The decisions, the goal and how the conversation ended (result.json's ``script``)."""
        goal = self.scenario.goal
        return {
            "decisions": [d.to_dict() for d in self.decisions],
            "goal": None
            if goal is None
            else {"description": goal.description, "reached": self.goal_reached},
            "ended_early": self.ended_early,
            "facts_given": dict(self._fact_answers),
        }
