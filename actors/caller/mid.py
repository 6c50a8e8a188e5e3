"""Where a ``barge_in_at: mid`` / ``backchannel_at: mid`` line lands on a live call.

A rendered call puts it half-way through the agent line it cuts into, that line spoken in the
scenario's agent voice. Live, the caller cannot know the running turn's length, so it uses the
best it has. Into the agent's first turn (none heard yet), and while the agent is heard saying
the script's lines (two or more of its turns heard, most of them clearly saying a line: the
reference agent, or an agent whose scenario holds its replies), the script's line spoken in the
scenario's agent voice, as a rendered call has it. Otherwise half its typical turn so far: an
agent with replies of its own, or one heard too little to tell (one turn saying the script's
"Yes, go ahead." does not show that its next reply is the script's 6 s line). Turns the caller
spoke into count only when they say a line (a reply cut short says only part of its own; the
pipeline hears a reply cut by a barge-in and the agent's next as one utterance). Before, a ``mid``
into the agent's first turn (none heard yet) was placed as ``early`` (600 ms in: the shipped
barge-ins scenario's first "wait" went out 0.7-1.0 s into a 9 s reply, 4.5 s in rendered), and
into a line longer than the agent's typical turn, early too.
"""

from __future__ import annotations

from collections.abc import Sequence

from turnscope.actors.caller.in_step import said_lines, words_of
from turnscope.actors.caller.placement import Renderer
from turnscope.actors.caller.scenario import Scenario
from turnscope.errors import TurnscopeError

__all__ = ["MidLines", "cut_agent_line"]

SR = 16000


def cut_agent_line(scenario: Scenario, index: int) -> int | None:
    """The script index of the agent line caller line ``index`` cuts into: the last before it."""
    return next(
        (k for k in range(index - 1, -1, -1) if scenario.script[k].speaker == "agent"), None
    )


def _line_ms(scenario: Scenario, k: int) -> float | None:
    """Agent line ``k``'s voiced length as a rendered call has it (synth's ``Renderer``, no
    voice given on the command line); None where its voice cannot speak on this machine (the
    agent is elsewhere: the call goes on, placed by what is heard)."""
    try:
        clip, _ = Renderer(scenario, {"caller": None, "agent": None}, SR).audio_of(
            k, scenario.script[k]
        )
    except TurnscopeError:
        return None
    return (clip.end - clip.start) * 1000 / SR


class MidLines:
    """A scenario's ``mid`` lines, each with the length of the agent line it cuts into (spoken
    before the call, as the caller's own lines are: synthesis must not delay a barge-in)."""

    def __init__(self, scenario: Scenario) -> None:
        self.lengths: dict[int, float] = {}
        self.mid_lines: set[int] = set()
        for i, line in enumerate(scenario.script):
            if "mid" not in (line.barge_in_at, line.backchannel_at):
                continue
            self.mid_lines.add(i)
            k = cut_agent_line(scenario, i)
            ms = _line_ms(scenario, k) if k is not None else None
            if ms:
                self.lengths[i] = ms
        self._lines = [
            (k, words_of(line.text))
            for k, line in enumerate(scenario.script)
            if line.speaker == "agent"
        ]

    def says_the_script(
        self, heard: Sequence[tuple[float, float, str]], caller_starts: Sequence[float]
    ) -> bool:
        """Whether the agent is heard saying the script's lines: before any utterance is heard
        (start, end, text), or when two or more were and most clearly say a line of the script
        (``in_step.said_lines``: a few misheard words are allowed). One a caller line started
        in counts only if it says a line: cut short, it says only part of its own."""
        if not any(text.strip() for _, _, text in heard):
            return True
        said = judged = 0
        for start, end, text in heard:
            if not text.strip():
                continue  # no words heard: nothing to tell by
            says = bool(said_lines(text, self._lines))
            if not says and any(start <= t <= end for t in caller_starts):
                continue  # cut short before it said its line (or heard as one with the next)
            said += says
            judged += 1
        return judged >= 2 and said * 2 > judged

    def turn_ms(
        self,
        index: int,
        heard: Sequence[tuple[float, float, str]],
        caller_starts: Sequence[float],
        typical_ms: float | None,
    ) -> tuple[float | None, str | None]:
        """The agent turn length a ``mid`` caller line ``index`` is placed half-way through
        (its script line's while the agent says the script's lines, else its typical turn), and
        a note saying which, for the line's record."""
        scripted = self.lengths.get(index)
        if scripted is not None and self.says_the_script(heard, caller_starts):
            return scripted, f"mid: half the script's agent line ({scripted / 1000:.1f} s)"
        if index not in self.mid_lines:
            return typical_ms, None
        if typical_ms is None:
            return None, "mid: placed as early (no agent turn heard yet to learn its length from)"
        return typical_ms, f"mid: half the agent's typical turn so far ({typical_ms / 1000:.1f} s)"
