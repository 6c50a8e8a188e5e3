"""Agent lines in a row: a caller line the script places after two or more agent lines (an agent
that says "One moment please." and, after a pause, its answer) is spoken after the last of them,
not into the pause between them.

The caller waits for the agent's turn after its own previous line, as for any reply, and thinks.
Then, while it has heard fewer agent turns than the lines in the row, it reads their words: a
turn that says an earlier line of the row but not the last means the agent has more to say, and
the caller waits for its next turn (at most ``caller.reply_timeout_ms``) and thinks again. Words
that say none of the lines (an agent with replies of its own, an LLM's) leave the caller as it
was, one turn the answer; a turn that says the last line (an agent that did not pause between
them) is the answer. A caller with words of its own (an LLM, facts to give) puts them between
the lines of a row: there a row is the agent's answers to them, not waited for. Without this the
caller spoke into the agent's pause, the agent's next line answered the caller's, and every
later pair was one reply out of step (the shipped quick-exchange scenario against the reference
agent: degraded as "ran ahead").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from turnscope.actors.caller.in_step import said_lines, words_of
from turnscope.actors.caller.lines import LineRecord
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.scenario import Line, Scenario

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller

__all__ = ["AgentLines", "agent_lines_before", "no_agent_lines"]


def no_agent_lines(scenario: Scenario) -> bool:
    """A scripted caller whose script has no agent line (written for an agent whose words it
    does not know) and answers the agent (a line at the default trigger, not only lines placed
    on the clock): each caller line answers the agent's turn, the greeting first, and the last
    line's answer is waited for. Without this its lines went out back to back, over the
    greeting, and the call hung up before the agent answered: a pass that tested nothing."""
    script = scenario.script
    if scenario.caller.driver == "llm" or any(line.speaker == "agent" for line in script):
        return False
    return any(line.trigger[0] in ("after_agent_ms", "reply_gap_ms") for line in script)


def answers_agent(scenario: Scenario, index: int) -> bool:
    """Whether the caller line ``index`` answers the agent's turn though the script does not
    put an agent line before it: a ``choose:`` (it chooses on the agent's answer to the line
    before), or any line of a script of the caller's lines alone (``no_agent_lines``)."""
    return scenario.script[index].choose is not None or no_agent_lines(scenario)


def agent_lines_before(script: Sequence[Line], index: int) -> list[int]:
    """Script indexes of the agent lines right before the caller line ``index`` that start
    after the caller's previous line (not into its pause, not talking over its end)."""
    found: list[int] = []
    for k in range(index - 1, -1, -1):
        line = script[k]
        if line.speaker != "agent":
            break
        if line.at_pause_ms is None and line.talk_over_ms is None:
            found.append(k)
    return found[::-1]


class AgentLines:
    """The wait for the rest of a row of agent lines (a ScriptedCaller mixin)."""

    async def _rest_of_row(
        self: ScriptedCaller, index: int, since_ms: float, think_ms: int, rec: LineRecord
    ) -> None:
        """Once the first agent turn after ``since_ms`` (the caller's previous line's end) has
        ended and the caller has thought: wait for the agent's further turns while their words
        say an earlier line of the row before ``index`` (the script's length: the row it ends
        with) but not the last."""
        script = self.scenario.script
        row = agent_lines_before(script, index)
        if len(row) < 2 or not self.scenario.rows_said_together:
            return
        lines = [(i, words) for i in row if (words := words_of(script[i].text))]
        while True:
            ends = {s.end_ms for s in self.ear.speeches if s.start_ms >= since_ms - 1}
            heard = sorted(end for end in ends if end is not None)
            if not heard or len(heard) >= len(row):
                return  # a turn for each line (or none yet: the wait before said so)
            said = said_lines(await self._heard(since_ms), lines)
            if not said or row[-1] in said:
                return
            speech = await self.ear.start_after(heard[-1], self.scenario.caller.reply_timeout_ms)
            last = row[-1]
            if speech is None:
                self._warn(
                    CallerNote.ROW_CUT_SHORT,
                    f"the agent said script[{max(said)}] but not script[{last}] after it within "
                    f"{self.scenario.caller.reply_timeout_ms} ms; the caller went on",
                )
                return
            speech = await self._end_of(speech)
            rec.notes.append(
                f"waited for the agent's next line (script[{last}] follows script[{max(said)}]): "
                f"its turn {speech.start_ms:.0f}-{speech.end_ms or 0:.0f} ms"
            )
            at_ms = (speech.decided_ms or self.clock.now_ms()) + think_ms
            await self._quiet_then(at_ms, think_ms, rec)
