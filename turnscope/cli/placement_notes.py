"""Warnings about where a live call will place a scripted barge-in or backchannel when the
scenario asks for something the caller cannot know yet."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnscope.cli.console import warn_line

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Scenario


def first_turn_mid(sc: Scenario) -> list[str]:
    """One line per ``barge_in_at: mid`` / ``backchannel_at: mid`` cutting into the agent's
    first turn: live, ``mid`` is half the agent's typical turn, learnt from the turns it has
    finished, and before its first there are none, so the line is placed as ``early``."""
    from turnscope.actors.caller.fields import EARLY_MS

    notes = []
    for i, line in enumerate(sc.script):
        key = next(
            (k for k in ("barge_in_at", "backchannel_at") if getattr(line, k, None) == "mid"),
            None,
        )
        if key is None:
            continue
        if sum(p.speaker == "agent" for p in sc.script[:i]) <= 1:  # it cuts into the first
            notes.append(
                f"script[{i}].{key}: mid on the agent's first turn is placed {EARLY_MS} ms into "
                "it (as early): live, mid is half the agent's typical turn, learnt from the turns "
                f"it has finished, and there are none yet; give {key[:-3]}_ms to choose the time"
            )
    return notes


def warn_first_turn_mid(sc: Scenario) -> None:
    for note in first_turn_mid(sc):
        warn_line(note)
