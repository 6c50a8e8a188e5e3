"""Warnings about where a live call will place a scripted barge-in or backchannel when the
scenario asks for something the caller cannot know yet
(``turnscope.use_cases.scenario_notes``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnscope.cli.console import warn_line

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Scenario


def first_turn_mid(sc: Scenario) -> list[str]:
    """``turnscope.use_cases.scenario_notes.first_turn_mid``, imported when a scenario is."""
    from turnscope.use_cases.scenario_notes import first_turn_mid as notes

    return notes(sc)


def warn_first_turn_mid(sc: Scenario) -> None:
    for note in first_turn_mid(sc):
        warn_line(note)
