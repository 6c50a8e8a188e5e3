"""The scenario keys of a caller that reacts to the agent's words: conditions, branches, facts,
the goal, an early end (see ``reactive`` for what is made of them)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator, Field, field_validator, model_validator
from pydantic_core import PydanticCustomError

from turnscope.actors.caller.fields import MAX_LINE_CHARS, MAX_MS, Keyword, Voice, _Strict


class Condition(_Strict):
    """What the agent said in its last turn, tested on the live transcript after Whisper's
    English normalisation (as WER is: case, punctuation, spelled numbers and spellings unified).

    - ``says``: any of these words or phrases (whole words, in order).
    - ``matches``: a regular expression (searched in the normalised text).
    Both given: both must hold.
    """

    says: Annotated[list[Keyword], Field(min_length=1, max_length=50)] | None = None
    matches: Annotated[str, Field(min_length=1, max_length=500)] | None = None

    @field_validator("matches")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                re.compile(value)
            except re.error as exc:
                raise PydanticCustomError(
                    "regex", "not a regular expression ({why})", {"why": str(exc)}
                ) from None
        return value

    @model_validator(mode="after")
    def _something(self) -> Condition:
        if self.says is None and self.matches is None:
            raise PydanticCustomError("condition", "a condition needs says: or matches:")
        return self


class Fact(_Strict):
    """Something the caller knows: said when the agent asks for it (``asked_by``: words or
    phrases that ask, default the fact's own name) as ``answer`` (default: the value)."""

    value: Annotated[str, Field(min_length=1, max_length=MAX_LINE_CHARS)]
    asked_by: Annotated[list[Keyword], Field(min_length=1, max_length=20)] | None = None
    answer: Annotated[str, Field(min_length=1, max_length=MAX_LINE_CHARS)] | None = None


FactValue = Annotated[
    Fact, BeforeValidator(lambda v: {"value": str(v)} if isinstance(v, (str, int, float)) else v)
]


class Goal(_Strict):
    """What the caller wants from the call; ``reached_when`` the agent says so."""

    description: str = ""
    reached_when: Condition | None = None


class Until(_Strict):
    """When the caller ends the call early (whichever comes first): the agent says this, the
    goal is reached, after this many agent turns, after this many seconds. Each is checked
    when the caller's turn comes (the caller never hangs up over the agent): ``seconds`` ends
    the call at the first caller turn past it."""

    agent_says: Condition | None = None
    goal_reached: bool = False
    turns: Annotated[int, Field(ge=1, le=1000)] | None = None
    seconds: Annotated[float, Field(gt=0, le=MAX_MS / 1000)] | None = None


class Branch(_Strict):
    """One branch of a ``choose:`` line: a caller line with an optional ``when:`` (none: the
    default branch, taken when no other matches)."""

    caller: Annotated[str, Field(min_length=1, max_length=MAX_LINE_CHARS)]
    when: Condition | None = None
    voice: Voice | None = None
