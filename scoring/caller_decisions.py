"""The kinds of decision a reacting caller makes, as result.json names them: written by the
caller (``reactive``), read back by scoring (the conversation's outcome, the report)."""

from __future__ import annotations

from enum import Enum

__all__ = ["DecisionKind"]


class DecisionKind(str, Enum):
    """What the caller decided on the agent's words."""

    WHEN = "when"  # a line waiting for the agent to say something
    CHOOSE = "choose"  # a branch taken
    FACT = "fact"  # a fact given because the agent asked for it
    GOAL = "goal"  # the goal reached
    UNTIL = "until"  # the call ended early
