"""Boundary refinement: move a VAD frame boundary to where the speech envelope really starts/ends.

webrtcvad decides per 10-30 ms frame and needs a few voiced frames before it commits, so its
boundaries are quantised and late. Within the neighbourhood of a VAD boundary, the first/last
point where a short RMS envelope rises above a threshold is a much better estimate. The threshold
is relative to the utterance's own peak (so it means "audible relative to this speech") but never
below the channel's noise floor plus a margin (so noise does not extend the boundary).
``SpanRefiner`` applies this to the endpointer's utterances, its final spans and its live guesses;
where the noise, not the speech, sets the threshold, a turn's end then follows the speech's
spectral shape past it (tail.py), and its start back before it (head.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from turnscope.asr.head import spectral_start
from turnscope.asr.settings import RefineSettings
from turnscope.asr.silence_start import from_silence
from turnscope.asr.tail import spectral_end
from turnscope.capture.frames import SAMPLE_RATE

HOP = SAMPLE_RATE // 1000  # 1 ms
_FLOOR_DB = -120.0
_WEAK_SPAN_MAX = SAMPLE_RATE * 600 // 1000  # longer than any breath
_BREATH_REACH = SAMPLE_RATE * 300 // 1000  # how far past an onset a breath's speech may start
_Envelope = Callable[[int, int], np.ndarray]  # (lo, hi) -> pcm_envelope_db(audio, window, lo, hi)


def envelope_db(
    audio: np.ndarray, window_ms: float, lo: int = 0, hi: int | None = None
) -> np.ndarray:
    """RMS envelope in dBFS, one value per 1 ms hop, each the RMS of the window centred there.

    ``env[k]`` describes the audio around sample ``lo + k * HOP``; only ``[lo, hi)`` is
    computed (the windows still see the samples around it), so refining a boundary costs the
    same however long the utterance is.
    """
    n = len(audio)
    hi = n if hi is None else min(hi, n)
    lo = max(0, lo)
    if hi <= lo:
        return np.zeros(0)
    win = max(1, int(round(window_ms * SAMPLE_RATE / 1000)))
    half = win // 2
    a, b = max(0, lo - half), min(n, hi - half + win)
    x = audio[a:b].astype(np.float64)
    csum = np.concatenate([[0.0], np.cumsum(x * x)])
    centres = np.arange(lo, hi, HOP)
    left = np.clip(centres - half, a, b) - a
    right = np.clip(centres - half + win, a, b) - a
    energy = (csum[right] - csum[left]) / win
    return 10.0 * np.log10(np.maximum(energy, 1e-12))


def pcm_envelope_db(
    pcm: np.ndarray, window_ms: float, lo: int = 0, hi: int | None = None
) -> np.ndarray:
    """``envelope_db(to_float32(pcm), window_ms, lo, hi)`` for int16 PCM, bit for bit, cheaper.

    An int16 sample is k / 2**15 in float audio, so every square is k**2 / 2**30 and every
    running sum of squares an integer over 2**30 below 2**53: envelope_db's float running sums
    are exact, and so are its window sums. Summing the integers in int64 gives the same window
    energies; dividing by ``win * 2**30`` rounds once, as envelope_db's ``/ win`` does. A value
    thus depends only on the audio and its hop's centre, never on ``lo`` or ``hi``.
    """
    n = len(pcm)
    hi = n if hi is None else min(hi, n)
    lo = max(0, lo)
    if hi <= lo:
        return np.zeros(0)
    win = max(1, int(round(window_ms * SAMPLE_RATE / 1000)))
    last_hop = HOP * ((hi - lo - 1) // HOP)  # offset of the last centre from the first
    first = lo - win // 2  # left edge of the first window, may be before the audio
    a, b = max(0, first), min(n, first + last_hop + win)  # the samples the windows see
    # run[j] = sum of squares of the audio in [first, first + j), windows clamped to [0, n): zeros
    # before ``a``, the total after ``b``. Every window's sums are then one strided slice.
    pre = a - first
    run = np.empty(last_hop + win + 1, dtype=np.int64)
    run[: pre + 1] = 0
    np.add.accumulate(np.square(pcm[a:b], dtype=np.int64), out=run[pre + 1 : pre + 1 + b - a])
    run[pre + 1 + b - a :] = run[pre + b - a]
    left = run[: last_hop + 1 : HOP]
    right = run[win : win + last_hop + 1 : HOP]
    energy = (right - left) / float(win * 2**30)  # exact divisor: one rounding
    np.maximum(energy, 1e-12, out=energy)
    np.log10(energy, out=energy)
    energy *= 10.0
    return energy


def energy_db(mean_square: float) -> float:
    """Mean square of float audio in [-1, 1] to dBFS."""
    return 10.0 * math.log10(mean_square) if mean_square > 1e-12 else _FLOOR_DB


@dataclass(frozen=True)
class Background:
    """A channel's background as refinement reads it: its typical level and its loud end."""

    median_db: float
    upper_db: float


def threshold_db(peak_db: float, noise: Background | None, p: RefineSettings) -> float:
    """The envelope level that counts as speech for this utterance on this channel: audible
    against the speech itself, clear of the typical background, and clear of the background's
    own loud moments (room tone and codec noise swing well above their median; steady noise
    does not)."""
    t = peak_db - p.below_peak_db
    if noise is not None:
        t = max(t, noise.median_db + p.noise_margin_db)
        if p.upper_margin_db > 0:
            # ... but never closer to the speech's peak than headroom_db: against loud steady
            # noise the quiet ends of words are under the noise's loud moments, and still speech.
            t = max(t, min(noise.upper_db + p.upper_margin_db, peak_db - p.headroom_db))
    return t


def refine_start(env: np.ndarray, coarse: int, thresh: float, p: RefineSettings) -> int:
    """Refined onset (in env hops) near the VAD onset hop ``coarse``.

    Anchor at the first hop at/after ``coarse`` above the threshold, then walk back across the
    speech (tolerating dips up to max_dip_ms) to the earliest hop above it.
    """
    n = len(env)
    if n == 0:
        return coarse
    lo = max(0, coarse - p.search_ms)
    hi = min(n - 1, coarse + p.search_ms)
    above = _first_above(env[coarse : hi + 1], thresh) if coarse < n else None
    if above is None:
        # Nothing above the threshold after the VAD onset: maybe the onset was before it.
        before = env[lo : min(coarse, n)]
        back = _first_above(before[::-1], thresh)
        if back is None:
            return coarse
        anchor = lo + len(before) - 1 - back
    else:
        anchor = coarse + above
    return anchor - walk(env[lo:anchor][::-1], thresh, p.max_dip_ms)


def refine_end(env: np.ndarray, coarse: int, thresh: float, p: RefineSettings) -> int:
    """Refined offset (in env hops, exclusive) near the VAD offset hop ``coarse``."""
    n = len(env)
    if n == 0:
        return coarse
    lo = max(0, coarse - p.search_ms)
    hi = min(n - 1, coarse + p.search_ms)
    before = env[lo : min(coarse, n)]
    back = _first_above(before[::-1], thresh)
    if back is None:
        after = _first_above(env[min(coarse, n - 1) : hi + 1], thresh)
        if after is None:
            return coarse
        anchor = min(coarse, n - 1) + after
    else:
        anchor = lo + len(before) - 1 - back
    return anchor + walk(env[anchor + 1 : hi + 1], thresh, p.max_dip_ms) + 1


def skip_weak_lead(
    env: np.ndarray,
    onset: int,
    thresh: float,
    strong: float,
    max_dip: float,
    blip: tuple[int, int] = (0, 0),
    weak_min: int = 0,
) -> int:
    """The onset moved past sound that is not speech: a run of envelope above ``thresh``, cut
    off from what follows by a pause longer than ``max_dip``, that lasts ``weak_min`` hops or
    more and never comes within reach of the speech's level (``strong``), or that is a burst of
    at most ``blip[0]`` hops followed by a pause of at least ``blip[1]`` (a lip smack, the
    loudest moment of a breath). Returns the start of the first run that is speech (``onset``
    if none is)."""
    i, n = onset, len(env)
    while 0 <= i < n:
        end = i + walk(env[i + 1 :], thresh, max_dip) + 1
        top = float(env[i:end].max())
        nxt = _first_above(env[end:], thresh)
        if nxt is None:  # the last run in reach: nothing after it to move the onset to
            return i if top >= strong else onset
        short = blip[0] > 0 and end - i <= blip[0] and nxt >= blip[1]
        weak = top < strong and end - i >= weak_min
        if not short and not weak:
            return i
        i = end + nxt
    return onset


# The scans below usually stop within a few dozen hops of where they start, so they read the
# envelope as plain floats a short chunk at a time: converting all of it, or testing it element
# by element as numpy scalars, costs several times more. Comparisons are the same IEEE doubles.
_CHUNK = 32


def _first_above(levels: np.ndarray, thresh: float) -> int | None:
    """Index of the first level at or above ``thresh``, if any."""
    for start in range(0, len(levels), _CHUNK):
        for i, level in enumerate(levels[start : start + _CHUNK].tolist(), start):
            if level >= thresh:
                return i
    return None


def walk(levels: np.ndarray, thresh: float, max_dip: float) -> int:
    """How many steps away from an anchor above ``thresh`` the speech reaches along ``levels``
    (the hops after the anchor, in walking order), crossing dips of at most ``max_dip`` hops."""
    reach = 0
    dip = 0
    for start in range(0, len(levels), _CHUNK):
        for step, level in enumerate(levels[start : start + _CHUNK].tolist(), start + 1):
            if level >= thresh:
                reach, dip = step, 0
            else:
                dip += 1
                if dip > max_dip:
                    return reach
    return reach


class SpanRefiner:
    """Moves the VAD boundaries of an utterance onto its envelope, for the endpointer.

    Audio comes as the endpointer keeps it: int16 runs of VAD frames with one energy (mean
    square) per frame, boundaries as call-clock sample indices. Only the envelope around the
    boundaries and the loudest frame is computed, so a boundary costs the same however long the
    utterance is.
    """

    def __init__(self, refine: RefineSettings, frame_ms: int) -> None:
        self._params = refine
        self._window_ms = refine.window_ms
        self._flen = SAMPLE_RATE * frame_ms // 1000
        reach_ms = refine.search_ms + 2 * int(refine.max_dip_ms)  # a search plus a dip each side
        self._tail_frames = reach_ms // frame_ms + 2
        self._radius = (reach_ms + 10) * HOP
        self._breath_reach = _BREATH_REACH if refine.weak_db > 0 else 0

    def spans(
        self,
        pcm: np.ndarray,
        base: int,
        spans: list[list[int]],
        energies: list[float],
        noise: Background | None,
    ) -> list[list[int]]:
        """``spans`` of the utterance whose audio ``pcm`` starts at sample ``base`` (one energy
        per frame), refined: ordered, and merged where refinement closed a pause."""
        peak_window = self._peak_window(energies)
        searched = [
            self._search_window(edge - base, start=k == 0)
            for span in spans
            for k, edge in enumerate(span)
        ]
        envelope = self._envelope(pcm, [peak_window, *searched])
        peak = self._peak_db(envelope, peak_window)
        thresh = threshold_db(peak, noise, self._params)
        strong = peak - self._params.weak_db
        out: list[list[int]] = []
        prev_end = base
        for s, e in spans:
            rs = base + self._refine_at(envelope, s - base, thresh, strong, start=True)
            re_ = base + self._refine_at(envelope, e - base, thresh, strong, start=False)
            rs = max(rs, prev_end)
            re_ = max(re_, rs)
            out.append([rs, re_])
            prev_end = re_
        if self._params.weak_db > 0:
            out = self._drop_weak_lead(envelope, base, out, thresh, strong)
        p = self._params
        if p.tail_band_db > 0 and out and thresh > peak - p.below_peak_db:  # noise-bound end
            end = spectral_end(pcm, out[-1][1] - base, spans[-1][1] - base, p.tail_band_db,
                               p.tail_below_db)  # fmt: skip
            out[-1][1] = out[-1][1] if end is None else base + end
        # A start only under steady loud noise (its median sets the threshold): a background
        # that merely swings loud now and then (speech remnants, a codec) moved a clean reply's
        # start 15 ms and tiny.en then heard "30-day" as "13-day"
        if (
            p.head_band_db > 0
            and out
            and noise
            and noise.median_db + p.noise_margin_db > peak - p.below_peak_db
        ):
            start = spectral_start(pcm, out[0][0] - base, p.head_band_db, p.tail_below_db)
            out[0][0] = out[0][0] if start is None else base + start
        return merge_touching(out)

    def _drop_weak_lead(
        self, envelope: _Envelope, base: int, spans: list[list[int]], thresh: float, strong: float
    ) -> list[list[int]]:
        """``spans`` without leading spans that never come within weak_db of the speech's peak
        (a breath the VAD heard as a span of its own before the first word)."""
        while len(spans) > 1 and spans[0][1] - spans[0][0] <= _WEAK_SPAN_MAX:
            env = envelope(spans[0][0] - base, spans[0][1] - base)
            if len(env) and float(env.max()) >= strong:
                break
            spans = spans[1:]
        return spans

    def live(
        self,
        runs: list[np.ndarray],
        energies: list[float],
        end: int,
        sample: int,
        noise: Background | None,
        *,
        start: bool,
    ) -> int:
        """Best estimate of the boundary at ``sample`` from the audio of an open utterance so far
        (``runs`` of frames ending at sample ``end``, one energy per frame); the final one comes
        with the utterance, refined against its whole envelope (``spans``)."""
        tail = self._tail(runs)
        pcm = tail.reshape(-1)
        base = end - len(pcm)
        sample = max(0, sample - base)
        peak_window = self._peak_window(energies[-len(tail) :])
        envelope = self._envelope(pcm, [peak_window, self._search_window(sample, start=start)])
        peak = self._peak_db(envelope, peak_window)
        thresh = threshold_db(peak, noise, self._params)
        strong = peak - self._params.weak_db
        refined = base + self._refine_at(envelope, sample, thresh, strong, start=start)
        return min(max(refined, base), end)

    def _tail(self, runs: list[np.ndarray]) -> np.ndarray:
        """The last frames of ``runs`` a live boundary can be moved across (all if fewer), as
        (n, frame length)."""
        kept, frames = [], 0
        for run in reversed(runs):
            kept.append(run)
            frames += len(run)
            if frames >= self._tail_frames:
                break
        tail = kept[0] if len(kept) == 1 else np.concatenate(kept[::-1])
        return tail[-self._tail_frames :]

    def _peak_window(self, energies: list[float]) -> tuple[int, int] | None:
        """Samples around the loudest VAD frame (the first, as np.argmax), where the peak is."""
        if not energies:
            return None
        k = energies.index(max(energies))
        return (k - 1) * self._flen, (k + 2) * self._flen

    def _search_window(self, sample: int, *, start: bool = False) -> tuple[int, int]:
        """Samples whose envelope _refine_at reads to refine a boundary at ``sample``: an onset's
        reaches further on, past a breath to the speech it comes before."""
        reach = self._radius + (self._breath_reach if start else 0)
        return max(0, sample - self._radius), sample + reach

    def _peak_db(self, envelope: _Envelope, window: tuple[int, int] | None) -> float:
        """Peak of the envelope, looked for around the loudest VAD frame only."""
        env = envelope(*window) if window else np.zeros(0)
        return float(env.max()) if len(env) else _FLOOR_DB

    def _refine_at(
        self, envelope: _Envelope, sample: int, thresh: float, strong: float, *, start: bool
    ) -> int:
        """Refine one boundary (a sample index into the enveloped audio) on its local envelope."""
        lo, hi = self._search_window(sample, start=start)
        env = envelope(lo, hi)
        coarse = (sample - lo) // HOP
        p = self._params
        if start:
            hop = refine_start(env, coarse, thresh, p)
            if p.weak_db > 0:
                blip = (p.blip_ms, p.blip_gap_ms)
                hop = skip_weak_lead(env, hop, thresh, strong, p.max_dip_ms, blip, p.weak_min_ms)
                hop = from_silence(env, hop, thresh, p.weak_min_ms, int(self._window_ms // 2))
        else:
            # Ends keep their weak tails: a final consonant's release after its closure is as
            # weak as a breath and as cut off (measured: skipping them cost the telephone-band
            # corpus its p90).
            hop = refine_end(env, coarse, thresh, p)
        return lo + hop * HOP

    def _envelope(self, pcm: np.ndarray, windows: list[tuple[int, int] | None]) -> _Envelope:
        """pcm_envelope_db of ``pcm`` over any of ``windows``, computed once per overlapping run
        of them: the windows of one utterance overlap, and a value depends only on the audio and
        its hop's centre, so slices of the wider envelope hold the very same values."""
        n, window_ms = len(pcm), self._window_ms
        runs: list[list[int]] = []
        for lo, hi in sorted((max(0, w[0]), min(w[1], n)) for w in windows if w):
            if hi <= lo:
                continue
            if runs and lo <= runs[-1][1] and (lo - runs[-1][0]) % HOP == 0:
                runs[-1][1] = max(runs[-1][1], hi)
            else:
                runs.append([lo, hi])
        envs = [(lo, hi, pcm_envelope_db(pcm, window_ms, lo, hi)) for lo, hi in runs]

        def envelope(lo: int, hi: int) -> np.ndarray:
            lo, hi = max(0, lo), min(hi, n)
            for run_lo, run_hi, env in envs:
                if run_lo <= lo < hi <= run_hi and (lo - run_lo) % HOP == 0:
                    first = (lo - run_lo) // HOP
                    return env[first : first - (-(hi - lo) // HOP)]
            return pcm_envelope_db(pcm, window_ms, lo, hi)  # not asked for up front

        return envelope


def merge_touching(spans: list[list[int]]) -> list[list[int]]:
    """Ordered spans with those that touch or overlap merged (refinement can close a pause)."""
    merged: list[list[int]] = []
    for span in spans:
        if merged and span[0] <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], span[1])
        else:
            merged.append(span)
    return merged
