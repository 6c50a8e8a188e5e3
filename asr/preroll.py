"""The pre-roll: the last frames of silence before a speech start, and their energies.

A speech start is decided a few frames after the speech began, and refinement looks before the
first voiced frame, so an utterance opens with the frames that led up to it.
"""

from __future__ import annotations

from collections import deque

import numpy as np


class PreRoll:
    """The last ``frames`` frames of a channel, kept as the runs of frames they came in (each an
    (n, frame length) array: filing a run costs the same however long it is)."""

    def __init__(self, frames: int) -> None:
        self.frames = frames
        self._runs: deque[np.ndarray] = deque()
        self._held = 0  # frames in _runs, at least self.frames once enough came
        self._energies: deque[float] = deque(maxlen=frames)

    def add(self, frames: np.ndarray, energies: list[float]) -> None:
        self.add_frames(frames)
        self._energies.extend(energies)

    def add_frames(self, frames: np.ndarray) -> None:
        """Frames whose energies come later (``add_energies``), before the pre-roll is taken."""
        self._runs.append(frames)
        self._held += len(frames)
        while self._held - len(self._runs[0]) >= self.frames:  # drop runs entirely out of it
            self._held -= len(self._runs.popleft())

    def add_energies(self, energies: list[float]) -> None:
        self._energies.extend(energies)

    def take(self) -> tuple[np.ndarray, list[float]]:
        """The pre-roll's frames, (n, frame length) with n <= ``frames``, and their energies;
        the pre-roll is empty afterwards."""
        runs = self._runs[0] if len(self._runs) == 1 else np.concatenate(self._runs)
        energies = list(self._energies)
        self._runs.clear()
        self._held = 0
        self._energies.clear()
        return runs[-self.frames :], energies
