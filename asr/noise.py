"""A channel's noise, as the endpointer hears it: the gates and the background level.

``NoiseGate`` vetoes webrtcvad's "speech" on frames not ``energy_gate_db`` above the noise floor,
tracked by minimum statistics. ``BackgroundGate`` vetoes it on frames not ``background_gate_db``
above the loud end of the channel's recent silence (a background that swings, as room tone and
codec noise do, is far above its floor half the time). ``NoiseLevel`` is what boundary
refinement reads: the median and the 90th percentile of the recent frames the endpointer judged
silence. Energies are mean squares per frame, in float audio units.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from turnscope.asr.refine import Background, energy_db

_INF = float("inf")
_BLOCK_MS = 500
_HISTORY_FRAMES = 200
_MIN_FRAMES = 10
_PERCENTILE = 50
_UPPER = 90
_RECOMPUTE = 25  # frames between updates of the background gate
_LOUD_END = 80  # the background gate's percentile


class NoiseGate:
    """webrtcvad's decisions, minus frames too quiet against the noise floor.

    The floor is minimum statistics: the quietest frame of each block of frames, over a few
    seconds, tracks the noise floor even while webrtcvad calls noise "speech". Blocks are aligned
    to the stream, so chunk sizes do not matter.
    """

    def __init__(self, gate_db: float, frame_ms: int, window_ms: int) -> None:
        self.enabled = gate_db > 0
        self._ratio = 10 ** (gate_db / 10)
        self.block_frames = max(1, _BLOCK_MS // frame_ms)
        self._block_mins: deque[float] = deque(maxlen=max(1, window_ms // _BLOCK_MS))
        self._block_min = _INF
        self._block_n = 0
        self._older_min = _INF  # min(self._block_mins), kept as blocks complete

    def gate(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """The flags of frames at least the gate above the floor (all of them before the first
        block is complete: see ``gate_first_block``)."""
        ratio, gated, block_frames = self._ratio, self.enabled, self.block_frames
        block_min, block_n, older = self._block_min, self._block_n, self._older_min
        voiced = []
        for energy, flag in zip(energies, flags, strict=True):
            if energy < block_min:
                block_min = energy
            if flag and gated and older < _INF:
                flag = energy >= (block_min if block_min < older else older) * ratio
            voiced.append(flag)
            block_n += 1
            if block_n >= block_frames:
                self._block_mins.append(block_min)
                older = min(self._block_mins)
                block_min, block_n = _INF, 0
        self._block_min, self._block_n, self._older_min = block_min, block_n, older
        return voiced

    def gate_first_block(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """``gate`` for the stream's first frames, the first block gated against its own quietest
        frame: no floor is known before it, and a call that opens mid-speech would otherwise be
        gated against that speech, one in noise would take the noise for speech."""
        k = min(len(energies), self.block_frames)
        floor = min(energies[:k])
        threshold = floor * self._ratio
        voiced = [f and e >= threshold for e, f in zip(energies[:k], flags[:k], strict=True)]
        if k == self.block_frames:
            self._block_mins.append(floor)
            self._older_min = floor
        else:  # a stream shorter than one block
            self._block_min, self._block_n = floor, k
        return voiced + self.gate(energies[k:], flags[k:])

    def track(self, energies: list[float]) -> None:
        """``gate``'s floor bookkeeping alone, block by block, for frames nobody gates."""
        i, n = 0, len(energies)
        while i < n:
            take = min(n - i, self.block_frames - self._block_n)
            self._block_min = min(self._block_min, *energies[i : i + take])
            self._block_n += take
            if self._block_n >= self.block_frames:
                self._block_mins.append(self._block_min)
                self._older_min = min(self._block_mins)
                self._block_min, self._block_n = _INF, 0
            i += take


class NoiseLevel:
    """The median of the recent unvoiced frames, in dB: the floor refinement's threshold keeps
    above."""

    def __init__(self) -> None:
        self._history: deque[float] = deque(maxlen=_HISTORY_FRAMES)
        self._added = 0  # frames ever added: keys the cached level
        self._cache: tuple[int, float | None, float | None] = (-1, None, None)

    def add(self, energies: list[float]) -> None:
        self._history.extend(energies)
        self._added += len(energies)

    def db(self) -> float | None:
        """The level, or None before enough unvoiced frames were heard. Cached: in speech it does
        not change between boundaries."""
        return self._levels()[0]

    def background(self) -> Background | None:
        """The level and the background's loud end (its 90th percentile: steady noise keeps
        close to its median, room tone and codec noise swing well above it), for refinement."""
        median, upper = self._levels()
        return None if median is None or upper is None else Background(median, upper)

    def _levels(self) -> tuple[float | None, float | None]:
        added, median, upper = self._cache
        if added != self._added:
            median = upper = None
            if len(self._history) >= _MIN_FRAMES:
                ordered = sorted(self._history)
                median = energy_db(ordered[len(ordered) * _PERCENTILE // 100])
                upper = energy_db(ordered[len(ordered) * _UPPER // 100])
            self._cache = (self._added, median, upper)
        return median, upper


class BackgroundGate:
    """Vetoes "speech" on frames not ``gate_db`` above the loud end of the channel's background
    (the 80th percentile of the last frames the endpointer heard as not speech). The floor
    alone is the quietest moment of a background that may swing 15 dB (room tone, mp3, codec
    noise); steady noise keeps close to its floor and is not gated harder. Folded frame by
    frame and recomputed every few frames, so the same however the stream was chunked."""

    def __init__(self, gate_db: float) -> None:
        self.enabled = gate_db > 0
        self._ratio = 10.0 ** (gate_db / 10.0)
        self._history: deque[float] = deque(maxlen=_HISTORY_FRAMES)
        self._n = 0
        self.least = 0.0  # the mean square a frame must reach to stay speech

    def fold(self, energy: float) -> None:
        self._history.append(energy)
        self._n += 1
        if self._n % _RECOMPUTE == 0 and len(self._history) >= _MIN_FRAMES:
            ordered = sorted(self._history)
            self.least = ordered[len(ordered) * _LOUD_END // 100] * self._ratio

    def fold_all(self, energies: Sequence[float]) -> None:
        if self.enabled:
            for energy in energies:
                self.fold(energy)
