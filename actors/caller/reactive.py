"""What the caller makes of the agent's words: conditions, branches, facts asked for, the goal.

Plain functions over the agent's last turn as transcribed live. Text on both sides goes through
the normalisation WER uses, so "Order 427" matches ``says: [order four two seven]`` and
"ORDER NUMBER?" matches ``says: [order number]``. The same words always give the same decision:
a call against an agent that says the same things is played the same way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from turnscope.actors.caller.scenario import Branch, Condition, Fact, Scenario
from turnscope.asr.normalise import normalise
from turnscope.scoring.caller_decisions import DecisionKind

__all__ = [
    "Decision",
    "DecisionKind",
    "Hit",
    "choose",
    "fact_answer",
    "fact_asked",
    "said_in",
    "spoken_texts",
    "test",
]


@dataclass(frozen=True)
class Hit:
    """A condition met, and on which words."""

    matched: str  # the phrase or the regular expression's match, normalised


@dataclass
class Decision:
    """One decision, for the bundle and the report: what was heard and what it made the caller
    do."""

    kind: DecisionKind
    at_ms: float
    line: int | None  # the script line it belongs to (None: no scripted line)
    heard: str  # the agent's last turn, as transcribed
    outcome: str  # what the caller did
    matched: str | None = None
    condition: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if v is not None and v != []}
        d["kind"] = self.kind.value
        d["at_ms"] = round(self.at_ms, 1)
        return d


def _phrase(words: str) -> re.Pattern[str] | None:
    """``words`` normalised, as whole words, spaced either way: the ASR writes a compound
    split or joined from one call to the next ("goodbye" heard "good bye" on another CPU)."""
    said = normalise(words).replace(" ", "")
    spaced = r"\s?".join(re.escape(c) for c in said)
    return re.compile(rf"(?<!\S){spaced}(?!\S)") if said else None


def _says(words: str, said: str) -> bool:
    """Whether normalised ``said`` holds ``words`` as whole words (spaced either way)."""
    pattern = _phrase(words)
    return bool(pattern and pattern.search(said))


def test(condition: Condition, text: str) -> Hit | None:
    """Whether the agent's ``text`` meets ``condition``; on which words."""
    said = normalise(text)
    hits: list[str] = []
    if condition.says is not None:
        found = next((w for w in condition.says if _says(w, said)), None)
        if found is None:
            return None
        hits.append(normalise(found))
    if condition.matches is not None:
        m = re.search(condition.matches, said, re.IGNORECASE)
        if m is None:
            return None
        hits.append(m.group(0))
    return Hit(" / ".join(hits))


def choose(branches: list[Branch], text: str) -> tuple[int, Branch, Hit | None] | None:
    """The first branch whose condition ``text`` meets (a branch without one: the default)."""
    for k, branch in enumerate(branches):
        if branch.when is None:
            return k, branch, None
        hit = test(branch.when, text)
        if hit is not None:
            return k, branch, hit
    return None


def fact_asked(facts: dict[str, Fact], text: str, given: set[str]) -> tuple[str, Hit] | None:
    """The first fact (in the scenario's order) the agent's ``text`` asks for and the caller has
    not given since it was asked: ``given`` holds the facts already said in answer to this very
    turn of the agent."""
    for name, fact in facts.items():
        if name in given:
            continue
        hit = test(Condition(says=fact.asked_by or [name]), text)
        if hit is not None:
            return name, hit
    return None


def fact_answer(fact: Fact) -> str:
    """What the caller says when asked for ``fact``."""
    return fact.answer or fact.value


def said_in(text: str, line: str) -> bool:
    """Whether ``line`` already says ``text`` (a scripted line that gives the fact itself)."""
    return _says(text, normalise(line))


def spoken_texts(scenario: Scenario) -> list[tuple[str, str | None]]:
    """Every text a reactive caller may say beyond its plain lines, with its voice: branches
    and facts' answers (spoken before the call, as every line is)."""
    out: list[tuple[str, str | None]] = []
    for line in scenario.script:
        for branch in line.choose or []:
            out.append((branch.caller, branch.voice or line.voice))
    out.extend((fact_answer(f), None) for f in scenario.facts.values())
    return out
