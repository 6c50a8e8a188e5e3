"""Whether the agent kept step with the script: it did not say an agent line's words before
the caller line that agent line answers had been said.

A scenario's agent lines are the replies its script expects, in order (the reference agent
speaks them; a scenario written for another agent may hold the replies it should give). An
agent that says a later agent line's words before the caller has said what that line answers is
ahead of the script: it answered something the caller never said (its greeting cut short by a
noise it took for the caller's speech, say). Each caller line is then answered by another turn
than the script's, so the call's latencies and turn-taking are measured on the wrong pairs.
The check needs the agent's words to match a line clearly (an agent whose replies are its own,
an LLM's, matches none and is never judged).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from turnscope.actors.caller.lines import LineRecord, quote
from turnscope.actors.caller.scenario import Line
from turnscope.asr.normalise import normalise

__all__ = ["AheadOfScript", "ahead_of_script", "said_lines", "sent_starts", "words_of"]

MATCH = 0.6  # a turn says an agent line when it holds this share of the line's words
# ...and at least this many of them, or the whole line: two words a short line shares with an
# ASR error are no evidence (tiny.en heard the reference agent's "Thursday by noon." as
# "Thursday afternoon.", 2 of the 3 words of a line ten lines on: "ahead of the script").
MIN_WORDS = 3


@dataclass(frozen=True)
class AheadOfScript:
    """The first agent turn that said an agent line before the caller line it answers."""

    said: int  # script index of the agent line the turn said
    at_ms: float  # when the turn began (call clock)
    answers: int  # script index of the caller line that agent line answers
    answers_sent_ms: float | None  # when that caller line went out (None: not by the end)
    text: str  # the turn's words as transcribed

    @property
    def message(self) -> str:
        sent = (
            f"sent at {self.answers_sent_ms / 1000:.1f} s"
            if self.answers_sent_ms is not None
            else "never said"
        )
        return (
            f"the agent ran ahead of the script: at {self.at_ms / 1000:.1f} s it said "
            f"script[{self.said}]'s line ({quote(self.text, 40)}) before the caller's "
            f"script[{self.answers}] it answers ({sent}); the caller's lines were answered by "
            "other turns than the script's, so the latencies and turn-taking pair other turns"
        )


def words_of(text: str) -> Counter[str]:
    """A line's words, normalised as WER is, with their counts."""
    return Counter(normalise(text).split())


def said_lines(text: str, lines: Sequence[tuple[int, Counter[str]]]) -> list[int]:
    """The script indexes of the agent lines ``text`` clearly says (of ``lines``: index and
    words), in the order found: the line that explains most of its words first, then, of the
    words left, the next, and so on. A reply cut by a barge-in and the next reply are heard as
    one turn, and so is an agent that yielded to a noise and answered it: each line is judged.
    A shorter line whose words a longer one already took ("Yes." in "Yes, go ahead.") is not
    said again."""
    heard = words_of(text)
    said: list[int] = []
    while True:
        matched = [(sum((words & heard).values()), i, words) for i, words in lines if i not in said]
        found = [
            (n, i, words)
            for n, i, words in matched
            if n >= MATCH * (total := sum(words.values())) and n >= min(MIN_WORDS, total)
        ]
        if not found:
            return said
        _, i, words = max(found, key=lambda f: (f[0], -f[1]))
        said.append(i)
        heard -= words


def _answers(script: Sequence[Line], index: int) -> int | None:
    """The caller line an agent line answers: the last caller turn before it (a backchannel is
    no turn); None for the agent's opening."""
    for k in range(index - 1, -1, -1):
        line = script[k]
        if line.speaker == "caller" and line.kind != "backchannel":
            return k
    return None


def ahead_of_script(
    script: Sequence[Line],
    heard: Sequence[tuple[float, float, str]],
    sent_ms: Mapping[int, float],
) -> AheadOfScript | None:
    """The first of the agent's ``heard`` turns (start, end, text) that said an agent line
    and ended before the caller line it answers went out (``sent_ms``: script index -> start),
    or None."""
    lines = [(i, words_of(line.text)) for i, line in enumerate(script) if line.speaker == "agent"]
    lines = [(i, words) for i, words in lines if words]
    if len(lines) < 2:
        return None
    for start_ms, end_ms, text in heard:
        for said in said_lines(text, lines):
            answers = _answers(script, said)
            if answers is None:
                continue
            sent = sent_ms.get(answers)
            # The whole turn before it: a reply cut by a barge-in and the answer to the
            # barge-in are heard as one turn from the reply's start, the answer after it.
            if sent is None or end_ms <= sent:
                return AheadOfScript(said, start_ms, answers, sent, text)
    return None


def sent_starts(records: Sequence[LineRecord]) -> dict[int, float]:
    """Script index -> when the line went out (call ms), for the lines that did (key presses:
    the first key's)."""
    starts: dict[int, float] = {}
    for r in records:
        sent = r.sent or {}
        keys = [k["at_ms"] for k in sent.get("dtmf") or [] if "at_ms" in k]
        start = sent.get("start_ms", keys[0] if keys else None)
        if start is not None:
            starts[r.line] = start
    return starts
