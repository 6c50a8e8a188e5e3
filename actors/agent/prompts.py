"""The reference agent's prompts as played: which line each clip is, found again from its
playback or its send record, never parsed back from the clip's label."""

from __future__ import annotations

from dataclasses import dataclass

from turnscope.capture.player import Playback, SendRecord


@dataclass(frozen=True)
class Prompt:
    """One agent line as played: its index among the behaviour's lines and its text."""

    index: int
    text: str

    @property
    def label(self) -> str:
        """How the player's send log names the clip (written in the agent's truth)."""
        return f"{self.index}:{self.text}"

    @property
    def mark(self) -> str:
        """The carrier mark told when the clip ends (a phone line)."""
        return str(self.index)


class Prompts:
    """Every prompt handed to the player, with its playback."""

    def __init__(self) -> None:
        self._played: list[tuple[Playback, Prompt]] = []

    def add(self, playback: Playback, prompt: Prompt) -> None:
        self._played.append((playback, prompt))

    def of(self, item: Playback | SendRecord) -> Prompt | None:
        """The prompt a playback, or the send record of one, plays (None: not the agent's)."""
        for playback, prompt in self._played:
            if playback is item or (playback.record is not None and playback.record is item):
                return prompt
        return None
