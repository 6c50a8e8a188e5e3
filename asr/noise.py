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
# A frame under this mean square (-100 dBFS: most samples exact zeros) is digital silence: a
# call's first packets, lost audio filled in, a muted line. It is no floor for the noise around
# it: a block's floor is its quietest frame of sound, 0 only when the block is all silence.
SILENT = 1e-10
# Sound after a block of digital silence whose block holds at least half sound, and whose frames'
# median keeps within this of their quietest (the caller's noise beds and line noise: 3-6 dB;
# speech, espeak-ng's included: 12-50 dB), is a noise floor of its own coming on: a line
# switching its noise on, minutes of silence before a noisy line. Its floor replaces the zeros.
_STEADY = 10 ** (8.0 / 10)


class NoiseGate:
    """webrtcvad's decisions, minus frames too quiet against the noise floor.

    The floor is minimum statistics: the quietest frame of each block of frames, over a few
    seconds, tracks the noise floor even while webrtcvad calls noise "speech". Blocks are aligned
    to the stream, so chunk sizes do not matter. Digital silence (``SILENT``) counts only in a
    block of nothing else: 20 ms of zeros before a noisy line's first packet would otherwise
    hold the floor at zero for the whole window, and the line's noise would pass as speech.
    A steady noise that comes on after a block of digital silence is a floor of its own from its
    first block on (``rose``): the silence's zeros leave the window.
    """

    def __init__(self, gate_db: float, frame_ms: int, window_ms: int) -> None:
        self.enabled = gate_db > 0
        self.ratio = 10 ** (gate_db / 10)
        self.block_frames = max(1, _BLOCK_MS // frame_ms)
        self._block_mins: deque[float] = deque(maxlen=max(1, window_ms // _BLOCK_MS))
        self._block_min = _INF
        self._block_n = 0
        self._older_min = _INF  # min(self._block_mins), kept as blocks complete
        self._fresh = False  # the last block was digital silence
        self._fresh_levels: list[float] = []  # the energies of the block after it
        self._blocks = 0  # blocks complete
        # (frame index, floor): where a steady noise came on after digital silence, the latest
        self.rose: tuple[int, float] | None = None

    def gate(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """The flags of frames at least the gate above the floor (all of them before the first
        block is complete: see ``gate_first_block``)."""
        ratio, gated, block_frames = self.ratio, self.enabled, self.block_frames
        voiced: list[bool] = []
        i, n = 0, len(energies)
        while i < n:  # one block at a time: a block's end may change the floor
            take = block_frames - self._block_n
            if not i and take >= n:  # the usual batch: inside one block
                part, part_flags, take = energies, flags, n
            else:
                take = min(take, n - i)
                part, part_flags = energies[i : i + take], flags[i : i + take]
            block_min, older = self._block_min, self._older_min
            known = gated and older < _INF
            for energy, flag in zip(part, part_flags, strict=True):
                if energy < block_min and energy >= SILENT:
                    block_min = energy
                if flag and known:
                    flag = energy >= (block_min if block_min < older else older) * ratio
                voiced.append(flag)
            self._advance(part, block_min)
            i += take
        return voiced

    def _advance(self, part: Sequence[float], block_min: float) -> None:
        """The block in progress grown by ``part`` (its quietest frame of sound now
        ``block_min``), filed when complete."""
        if self._fresh:
            self._fresh_levels.extend(part)
        self._block_min = block_min
        self._block_n += len(part)
        if self._block_n >= self.block_frames:
            self._end_block(block_min)
            self._block_min, self._block_n = _INF, 0
            self._blocks += 1

    def _end_block(self, block_min: float) -> None:
        """File a finished block's floor (0 for digital silence); a steady noise coming on after
        digital silence drops the silence's zeros."""
        mins = self._block_mins
        fresh, levels = self._fresh, self._fresh_levels
        self._fresh_levels = []
        if block_min >= _INF:
            mins.append(0.0)
            self._fresh = True
        elif fresh and _steady(levels):
            kept = [m for m in mins if m > 0]
            mins.clear()
            mins.extend(kept)
            mins.append(block_min)
            first = next(k for k, e in enumerate(levels) if e >= SILENT)
            self.rose = (self._blocks * self.block_frames + first, block_min)
            self._fresh = False
        else:
            mins.append(block_min)
            # Sound too brief to judge keeps the block after it judged as the first.
            self._fresh = fresh and 2 * sum(e >= SILENT for e in levels) < len(levels)
        self._older_min = min(mins)

    def gate_first_block(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """``gate`` for the stream's first frames, the first block gated against its own quietest
        frame: no floor is known before it, and a call that opens mid-speech would otherwise be
        gated against that speech, one in noise would take the noise for speech."""
        k = min(len(energies), self.block_frames)
        floor = _quietest(energies[:k])
        threshold = floor * self.ratio
        voiced = [f and e >= threshold for e, f in zip(energies[:k], flags[:k], strict=True)]
        self._advance(energies[:k], floor if floor > 0 else _INF)
        return voiced + self.gate(energies[k:], flags[k:])

    def track(self, energies: list[float]) -> None:
        """``gate``'s floor bookkeeping alone, block by block, for frames nobody gates."""
        i, n = 0, len(energies)
        while i < n:
            take = min(n - i, self.block_frames - self._block_n)
            part = energies[i : i + take]
            sound = [e for e in part if e >= SILENT]
            self._advance(part, min(self._block_min, *sound) if sound else self._block_min)
            i += take


def _steady(levels: list[float]) -> bool:
    """A block at least half sound whose median frame keeps within ``_STEADY`` of its quietest."""
    sound = sorted(e for e in levels if e >= SILENT)
    return 2 * len(sound) >= len(levels) > 0 and sound[len(sound) // 2] <= sound[0] * _STEADY


def _quietest(energies: Sequence[float]) -> float:
    """The quietest frame of sound (``SILENT`` and over); 0 when all are digital silence."""
    return min((e for e in energies if e >= SILENT), default=0.0)


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


def past_rise(
    gate: NoiseGate, spans: list[list[int]], energies: list[float], start: int, flen: int, need: int
) -> list[list[int]]:
    """An utterance's spans (sample indices; ``energies`` its frames' from sample ``start``)
    without the leading ones a noise coming on after digital silence made: spans that began in
    the noise's first block, before its floor was known, with fewer than ``need`` frames (the
    endpointer's start rule) the gate over that floor (a click of typing is one or two).
    """
    if gate.rose is None or not gate.enabled or not spans:
        return spans
    at, floor = gate.rose[0] * flen, gate.rose[1] * gate.ratio
    known = at + gate.block_frames * flen
    k = 0
    while k < len(spans) and at <= spans[k][0] < known:
        a, b = (spans[k][0] - start) // flen, -(-(spans[k][1] - start) // flen)
        if sum(e >= floor for e in energies[max(a, 0) : b]) >= need:
            break
        k += 1
    return spans[k:]
