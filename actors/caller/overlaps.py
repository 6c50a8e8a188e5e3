"""The agent's turn that overlaps the caller's previous line and answers it: one it talked
through a barge-in with, or one it began over the line's end (a talk-over). The caller takes
either as the answer and waits for its end; waiting for a turn to start after the line would
wait in vain (the reply timeout, an "unanswered" warning) and put the script one reply out of
step (the shipped talk-over scenario against the reference agent: four lines "unanswered")."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnscope.actors.caller.conversation import TRANSCRIPT_WAIT_MS
from turnscope.actors.caller.ear import AgentSpeech
from turnscope.actors.caller.in_step import said_lines, words_of
from turnscope.actors.caller.lines import LineRecord
from turnscope.scoring.verifier import BARGE_IN_YIELD_MS

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller

__all__ = ["STOP_SETTLE_MS", "YIELD_WAIT_MS", "Overlaps"]

# How long after a barge-in ends the caller looks whether the agent stopped during it: a stop is
# decided one VAD hangover (100 ms by default) after the agent goes quiet, plus a frame or two.
STOP_SETTLE_MS = 200
# How long after a barge-in starts an agent may go on and still have yielded: the verifier's.
YIELD_WAIT_MS = BARGE_IN_YIELD_MS


class Overlaps:
    """The answers that began before the caller's line ended (a ScriptedCaller mixin)."""

    @property
    def _previous(self: ScriptedCaller) -> LineRecord | None:
        """The caller's line before the one now being placed (the last record is its own)."""
        return self.records[-2] if len(self.records) > 1 else None

    def _into_next_line(self: ScriptedCaller, index: int) -> bool:
        """Whether caller line ``index``, said into an agent turn, goes into a later agent line
        than the caller's line before it, itself said into a turn (an agent line lies between
        them in the script): the agent's restart after a false yield is a new turn, while the
        turn its "mm-hmm" stopped may not have ended yet."""
        previous = self._previous
        if previous is None or previous.spoken_as in (None, "line"):
            return False
        return any(x.speaker == "agent" for x in self.scenario.script[previous.line + 1 : index])

    async def _talked_through(self: ScriptedCaller, rec: LineRecord) -> AgentSpeech | None:
        """After a barge-in the agent ignored: its turn that went on through it, which answers
        the barge-in for a listener once it ends (an agent that queues its next reply straight
        behind the one it talked through makes one turn of both: waiting for a new turn to
        start would wait in vain and put the script one reply out of step)."""
        previous = self._previous
        if previous is None:
            return None
        speech = await self._answered_through(previous)
        if speech is not None:
            rec.agent_answered = True
            rec.notes.append(
                f"the agent talked through the barge-in (its turn from {speech.start_ms:.0f} ms "
                "went on): the end of that turn answers it"
            )
        return speech

    async def _answered_through(self: ScriptedCaller, barge: LineRecord) -> AgentSpeech | None:
        """The agent's turn that went on through the barge-in ``barge``, if it did."""
        if barge.spoken_as != "barge_in" or not barge.sent:
            return None
        start, end = barge.sent["start_ms"], barge.sent.get("end_ms")
        if end is None:
            return None
        # An agent that yields does so up to YIELD_WAIT_MS after the barge-in began (pipecat
        # takes ~400 ms, often after a short "wait" has ended), and its stop is decided a VAD
        # hangover later: wait that long to know.
        await self.ear.until(max(end, start + YIELD_WAIT_MS) + STOP_SETTLE_MS)
        return self.ear.talked_through(start)

    async def _talked_over(
        self: ScriptedCaller, line: LineRecord | None, rec: LineRecord
    ) -> AgentSpeech | None:
        """The agent's turn begun over the caller's ``line`` (after it began, before it ended):
        the answer to it, begun early (noted in ``rec``), when it goes on past the line's end
        or its words say the agent line the script answers it with; a shorter overlap that
        says something else ("Okay." into the caller's pause) is not the answer."""
        sent = line.sent if line is not None else None
        if line is None or line.spoken_as != "line" or not sent or sent.get("end_ms") is None:
            return None  # a barge-in's or backchannel's overlap is the agent's own turn
        start, end = sent["start_ms"], sent["end_ms"]
        inside = [s for s in self.ear.speeches if start < s.start_ms < end]
        speech = next((s for s in inside if s.end_ms is None or s.end_ms > end), None)
        if speech is None and inside and await self._says_the_answer(line.line, start, end):
            speech = inside[0]
        if speech is not None:
            rec.agent_answered = True
            rec.notes.append(
                f"the agent began its answer over the end of the caller's line (at "
                f"{speech.start_ms:.0f} ms, the line ended at {end:.0f} ms): its end answers it"
            )
        return speech

    async def _says_the_answer(self: ScriptedCaller, index: int, start: float, end: float) -> bool:
        """Whether the agent's words from ``start`` to ``end`` say the agent line the script
        answers caller line ``index`` with (once transcribed)."""
        script = self.scenario.script
        answer = None  # the first agent line after it, not one spoken into the caller's pause
        for k in range(index + 1, len(script)):
            if script[k].speaker == "caller":
                break
            if script[k].at_pause_ms is None:
                answer = k
                break
        if answer is None or not (words := words_of(script[answer].text)):
            return False
        said_end = max(s.end_ms or 0.0 for s in self.ear.speeches if start < s.start_ms < end)
        if not await self.ear.transcripts_until(said_end, TRANSCRIPT_WAIT_MS):
            return False
        text = " ".join(t for s, e, t in sorted(self.ear.texts) if s >= start - 1 and e <= end)
        return answer in said_lines(text, [(answer, words)])
