"""A channel's noise, as the endpointer hears it: the gates and the background level.

``NoiseGate`` vetoes webrtcvad's "speech" on frames not ``energy_gate_db`` above the noise floor,
tracked by minimum statistics. ``BackgroundGate`` vetoes it on frames not ``background_gate_db``
above the loud end of the channel's recent silence (a background that swings, as room tone and
codec noise do, is far above its floor half the time). ``NoiseLevel`` is what boundary
refinement reads: the median and the 90th percentile of the recent frames the endpointer judged
silence (``loud_moments.LoudMoments`` judges a closed span against its loud end). Energies are
mean squares per frame, in float audio units.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Protocol

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
# call's first packets, an agent track offset into a call, lost audio filled in, a muted line.
SILENT = 1e-10
# A run of digital silence shorter than this inside sound is a hole (lost or late packets filled
# with zeros: 20 ms each, a burst a few of them), not the channel's floor: were its zeros the
# floor, a noise would pass the gate as speech for the window's length (a caller's channel on
# 12 dB street noise with 3% of its 20 ms packets zeroed: false starts 8-12 s in, none without).
_HOLE_MS = 100
# A codec's first frames of a sound ramp up to it (Opus: one frame at -93 dBFS, then a lost
# packet, before a -50 dBFS street noise): no part of a noise coming on's floor. After such a
# ramp the noise may fill only part of its first frame (coming on 6 ms into it: 9-13 dB under).
_RAMP_MS = 30
_RAMP_LEVEL = 1e-8  # -80 dBFS: a ramp's frames are under it (Opus: -93), a word's are not
# Sound after digital silence whose frames' median keeps within this of their quietest is a
# noise floor coming on (the caller's noise beds and line noise: 3-6 dB; speech, espeak-ng's
# included: 12-50 dB).
_STEADY = 10 ** (8.0 / 10)
# After the channel's first sound, a steady sound after digital silence is a noise coming on only
# this far under the loudest frame heard so far: a hummed "mm-hmm" is as steady, but 5-13 dB
# under a sentence's loudest frame; an office bed at 15 dB SNR is 25 dB under it, at 10 dB 20.
_UNDER_HEARD = 10 ** (-18.0 / 10)


class ForgetsSilence(Protocol):
    """What follows the gate's floor: told when a noise came on after digital silence."""

    def forget_silence(self) -> None: ...


class NoiseGate:
    """webrtcvad's decisions, minus frames too quiet against the noise floor.

    The floor is minimum statistics: the quietest frame of each block of frames, over a few
    seconds, tracks the noise floor even while webrtcvad calls noise "speech". Blocks are aligned
    to the stream, so chunk sizes do not matter.

    A steady noise that comes on after nothing but digital silence (``SILENT``: a line noisy
    from its first packet after the 20 ms of zeros a live caller channel opens with, or after
    minutes of a muted line) is a floor of its own from its first block: the silence's zero
    floors leave the window, where they would let the noise pass as speech for its length.
    Speech coming after digital silence is not steady and leaves the floor as it was, so a reply
    into silence is judged as before. After the channel's first sound the rule holds for a sound
    well under the loudest heard so far (a hummed "mm-hmm" after silence is as steady as a noise,
    but at a speaker's level). ``rose`` says where such a noise came on; the ``followers`` (the
    background level and gate) then forget the silence too.
    """

    def __init__(
        self,
        gate_db: float,
        frame_ms: int,
        window_ms: int,
        followers: Sequence[ForgetsSilence] = (),
    ) -> None:
        self.enabled = gate_db > 0
        self.ratio = 10 ** (gate_db / 10)
        self.block_frames = max(1, _BLOCK_MS // frame_ms)
        self._hole_frames = max(1, _HOLE_MS // frame_ms)
        self._ramp = max(1, _RAMP_MS // frame_ms)
        self._silent_run = 0  # frames of digital silence up to the newest
        self._block_mins: deque[float] = deque(maxlen=max(1, window_ms // _BLOCK_MS))
        self._block_min = _INF
        self._block_n = 0
        self._older_min = _INF  # min(self._block_mins), kept as blocks complete
        self._block: list[float] = []  # the energies of the block in progress
        self._after_silence = False  # the last complete block was all digital silence
        self._heard = False  # a complete block held sound
        self._loudest = 0.0  # the loudest frame of the complete blocks
        self._frames = 0  # frames in complete blocks
        self._followers = followers
        # (frame index, floor): where the latest steady noise came on after digital silence
        self.rose: tuple[int, float] | None = None

    def gate(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """The flags of frames at least the gate above the floor (all of them before the first
        block is complete: see ``gate_first_block``)."""
        voiced: list[bool] = []
        i, n = 0, len(energies)
        while i < n:  # a block at a time: a block's end may change the floor
            take = min(n - i, self.block_frames - self._block_n)
            if not i and take == n:  # the usual batch: inside one block
                voiced += self._gate_part(energies, flags)
            else:
                voiced += self._gate_part(energies[i : i + take], flags[i : i + take])
            i += take
        return voiced

    def _gate_part(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """``gate`` on frames inside one block."""
        ratio, gated = self.ratio, self.enabled
        block_min, older = self._block_min, self._older_min
        hole, run = self._hole, self._silent_run
        voiced = []
        for energy, flag in zip(energies, flags, strict=True):
            # _fold_floor's rule, inline: each frame is gated against the floor as it stands
            run = 0 if energy >= SILENT else run + 1
            if energy < block_min and (run == 0 or run >= hole):
                block_min = energy
            if flag and gated and older < _INF:
                flag = energy >= (block_min if block_min < older else older) * ratio
            voiced.append(flag)
        self._block_min, self._silent_run = block_min, run
        self._grow(energies)
        return voiced

    @property
    def _hole(self) -> int:
        """Frames of digital silence that make it the floor: on a line whose noise came on after
        digital silence, a hole's zeros are no floor; elsewhere (an agent's digital silence
        between words, 90 ms in a replayed excerpt) they are, from their first frame."""
        return self._hole_frames if self.rose is not None else 1

    def _fold_floor(self, energies: Sequence[float]) -> float:
        """The block's floor with ``energies`` folded in, a hole's digital silence left out."""
        floor, hole, run = self._block_min, self._hole, self._silent_run
        for energy in energies:
            run = 0 if energy >= SILENT else run + 1
            if energy < floor and (run == 0 or run >= hole):
                floor = energy
        self._silent_run = run
        return floor

    def _grow(self, energies: Sequence[float]) -> None:
        """The block in progress grown by ``energies`` (its minimum already folded in)."""
        self._block.extend(energies)
        self._block_n += len(energies)
        if self._block_n >= self.block_frames:
            self._end_block(self._block_min)

    def _end_block(self, floor: float) -> None:
        """File a complete block's floor; a steady noise after a block of digital silence
        replaces the window's floors with its own."""
        block, self._block = self._block, []
        # After the channel's first sound a steady sound after silence (a hummed "mm-hmm")
        # cannot be told from a noise coming on by its steadiness alone: by its level, too.
        ceiling = self._loudest * _UNDER_HEARD if self._heard else _INF
        first = _noise_onset(block, self._ramp, ceiling) if self._after_silence else None
        loudest = max(block, default=0.0)
        self._loudest = max(self._loudest, loudest)
        self._after_silence = bool(block) and loudest < SILENT
        self._heard = self._heard or not self._after_silence
        if first is not None:
            floor = _sound_floor(block[first:], self._ramp)
            self._rise(self._frames + first, floor)
        self._block_mins.append(floor)
        self._older_min = min(self._block_mins)
        self._frames += len(block)
        self._block_min, self._block_n = _INF, 0

    def _rise(self, frame: int, floor: float) -> None:
        self._block_mins.clear()
        self.rose = (frame, floor)
        for follower in self._followers:
            follower.forget_silence()

    def gate_first_block(self, energies: Sequence[float], flags: Sequence[bool]) -> list[bool]:
        """``gate`` for the stream's first frames, the first block gated against its own quietest
        frame: no floor is known before it, and a call that opens mid-speech would otherwise be
        gated against that speech, one in noise would take the noise for speech. Digital silence
        before a steady noise in it is no part of that floor."""
        k = min(len(energies), self.block_frames)
        block = list(energies[:k])
        first = _noise_onset(block, self._ramp)
        folded = self._fold_floor(block)  # the digital silence run at its end counted, too
        floor = _sound_floor(block[first:], self._ramp) if first else folded
        threshold = floor * self.ratio
        voiced = [f and e >= threshold for e, f in zip(block, flags[:k], strict=True)]
        if first:
            self._rise(first, floor)
        if k == self.block_frames:
            self._block = block
            self._block_n = k
            self._end_block(floor)
        else:  # a stream shorter than one block
            self._block, self._block_min, self._block_n = block, floor, k
        return voiced + self.gate(energies[k:], flags[k:])

    def track(self, energies: list[float]) -> None:
        """``gate``'s floor bookkeeping alone, block by block, for frames nobody gates."""
        i, n = 0, len(energies)
        while i < n:
            take = min(n - i, self.block_frames - self._block_n)
            part = energies[i : i + take]
            self._block_min = self._fold_floor(part)
            self._grow(part)
            i += take


def _noise_onset(energies: Sequence[float], ramp: int, ceiling: float = _INF) -> int | None:
    """Where a steady noise begins in a block that opens with digital silence or follows one:
    the first frame of sound, when the sound's median frame is sound too (``SILENT`` or over),
    keeps within ``_STEADY`` of its quietest and under ``ceiling``, and it fills at least half
    the block; else None."""
    first = next((k for k, e in enumerate(energies) if e >= SILENT), None)
    # Half the block sound, not only its rest from the first sound: a reply's first syllable
    # cut off by a barge-in (16 frames of 50, then zeros) had its quietest frame as the median
    # of what followed, was taken for a steady noise at -89 dBFS, and the zeros forgotten: the
    # agent channel's background learnt from speech alone, "a loud constant background".
    if first is None or 2 * sum(e >= SILENT for e in energies[first:]) < len(energies):
        return None
    sound = sorted(energies[first:])
    median = sound[len(sound) // 2]
    quietest = _sound_floor(energies[first:], ramp)
    # A "noise" mostly under SILENT is a codec's near-silence (Opus decoding a silent stream:
    # -109 to -111 dBFS, its first frame -96), not a noise coming on: forgetting the silence
    # would forget it too, and the background would be learnt from speech alone (-33 dBFS on
    # a clean agent channel in a CI run, its quiet consonants then gated out of its words).
    steady = SILENT <= median <= quietest * _STEADY
    return first if steady and median <= ceiling else None


def _sound_floor(energies: Sequence[float], ramp: int) -> float:
    """The quietest frame of a noise that comes on at ``energies[0]``, its codec's ramp (frames
    under ``_RAMP_LEVEL`` in its first ``ramp``, then the frame the noise came on inside when it
    is more than ``_STEADY`` under the sound's median) and its lost packets' digital silence
    left out (a live agent's ear: all in its first block; any taken for the floor, the noise
    was the caller's speech from 107-120 ms and the agent skipped its greeting). Without a ramp
    nothing is left out: a word's first frame out of digital silence is as quiet, and a word
    is no noise (a sound that opens mid-word has no ramp either: its first frames count)."""
    k = 0
    while k < min(ramp, len(energies)) and energies[k] < _RAMP_LEVEL:
        k += 1
    sound = sorted(e for e in energies[k:] if e >= SILENT)
    if k and sound and energies[k] < sound[len(sound) // 2] / _STEADY:  # sound: k < len
        k += 1  # the frame the noise came on inside
    return min((e for e in energies[k:] if e >= SILENT), default=_INF)


class NoiseLevel:
    """The median of the recent unvoiced frames, in dB: the floor refinement's threshold keeps
    above."""

    def __init__(self) -> None:
        self._history: deque[float] = deque(maxlen=_HISTORY_FRAMES)
        self._added = 0  # frames ever added: keys the cached level
        self._cache: tuple[int, float | None, float | None] = (-1, None, None)
        self._no_silence = False

    def add(self, energies: list[float]) -> None:
        if self._no_silence:
            energies = [e for e in energies if e >= SILENT]
        self._history.extend(energies)
        self._added += len(energies)

    def forget_silence(self) -> None:
        """From now on digital silence is no part of the level (a noise came on after it)."""
        self._no_silence = True
        kept = [e for e in self._history if e >= SILENT]
        self._history.clear()
        self._history.extend(kept)
        self._added += 1

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
        self._no_silence = False

    def fold(self, energy: float) -> None:
        if self._no_silence and energy < SILENT:
            return
        self._history.append(energy)
        self._n += 1
        if self._n % _RECOMPUTE == 0:
            self._recompute()

    def _recompute(self) -> None:
        if len(self._history) >= _MIN_FRAMES:
            ordered = sorted(self._history)
            self.least = ordered[len(ordered) * _LOUD_END // 100] * self._ratio

    def forget_silence(self) -> None:
        """From now on digital silence is no part of the background (a noise came on after it)."""
        self._no_silence = True
        kept = [e for e in self._history if e >= SILENT]
        self._history.clear()
        self._history.extend(kept)
        self._recompute()

    def fold_all(self, energies: Sequence[float]) -> None:
        if self.enabled:
            for energy in energies:
                self.fold(energy)


def past_rise(
    gate: NoiseGate, spans: list[list[int]], energies: list[float], start: int, flen: int, need: int
) -> list[list[int]]:
    """An utterance's spans (sample indices; ``energies`` its frames' from sample ``start``)
    without the leading ones a noise coming on after digital silence made before its floor was
    known: spans that began in the noise's first block with fewer than ``need`` frames (the
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
