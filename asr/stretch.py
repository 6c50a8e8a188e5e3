"""The background of the stretch of audio an utterance sits in, when it is not the channel's.

A recorded prompt played into a channel that is otherwise digital silence (an IVR's or a bot's
recordings, room tone kept) brings its own floor: the channel steps up from its floor onto the
recording's room tone, the speech rises out of that, and the channel steps down again after the
room tone that follows it. Judged against the channel's floor, the room tone is "speech" from its
first sample; judged against its own, it is background (ARCHITECTURE.md: room tone is not speech).

``find_stretch`` looks for that shape in an utterance's audio at turn close: a step up from the
silence around it (or down to it) onto a steady plateau well above that silence, held for
``_PLATEAU_MS`` without coming near the speech's level. Levels are read on pre-emphasised audio
(the first difference: a room's tone is mostly rumble, which it takes 20-30 dB off, while speech
keeps its formants and fricatives): the speech's spectral shape, not a fixed margin. Audio that
opens straight onto speech (a neural voice, espeak-ng) or sits on the channel's own noise (a line,
a bed of room tone) has no such plateau: ``find_stretch`` returns None and refinement stays the
channel-floor one (refine.SpanRefiner). ``stretch_spans`` refines the utterance's spans against
the stretch's own background instead. Live boundary guesses are not changed: this runs at turn
close only, where the whole utterance and the room tone after it are in hand.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from turnscope.asr.refine import (
    HOP,
    Background,
    envelope_db,
    merge_touching,
    refine_end,
    refine_start,
    skip_weak_lead,
    threshold_db,
    walk,
)
from turnscope.asr.settings import RefineSettings
from turnscope.capture.frames import SAMPLE_RATE

_EMPHASIS = 0.95  # pre-emphasis: y[n] = x[n] - 0.95 x[n-1]
_STEP_DB = 20.0  # a plateau this far above the floor around it (median) is a floor of its own
_FLOOR_DB = 6.0  # frames within this of the utterance's quietest frame are that floor
_REACH_MS = 1000  # the steps: past the pre-roll (350 ms) and an end of turn (600 ms) of silence
_EDGE = 3  # frames of that floor before the step up (after the step down): a step, not a dip
# Recorded prompts carry 265-290 ms of room tone before the speech and 200-430 ms after (issue
# 28); a word's weak ending or a telephone filter's residue next to digital silence is shorter
# (measured: at 150 ms, 4 of the synthetic corpus's utterances were taken for a stretch; at 200,
# none).
_PLATEAU_MS = 200
_STEADY_DB = 20.0  # room tone holds its level: the plateau's 10th-90th percentile spread, full band
_BELOW_SPEECH_DB = 20.0  # the plateau stays this far under the speech's peak (pre-emphasised)
_RISE_MS = 100  # a live rise is seen this long into the speech, at most (room_tone_start.py)
_RISE_FROM_DB = 6.0  # the speech's start: where it first stands this far over the room tone
# A last sound after a closure (``last_sound``; env hops are 1 ms): how far after the end it may
# start, how far over the tone's threshold it stands, how long it lasts (a click is 1-30 ms).
_CLOSURE_MS = 150
_OVER_TONE_DB = 10.0
_LAST_SOUND_MS = 50
_FADE_MS = 10  # a codec's last frame into digital silence (Opus: -87 dBFS): no part of the tone
# A recording stored through a codec (an Opus file) fades out of its tone over 100-300 ms (-77 to
# -100 dBFS), then dithers by the last bit between exact zeros: the tone ends where that fade
# starts, which is looked for this far back, the frames after it this far under the tone.
_FADE_REACH_MS = 500
_FADE_UNDER_DB = 10.0
# A tone found behind a fade is a room's: mostly rumble, pre-emphasis takes this much off it
# (9-13 dB through Opus); a word's last fricative keeps its level (espeak's "ships" on a
# telephone band, 180-220 ms of "s", then 40-80 ms of decay into silence: 0 dB).
_RUMBLE_DB = 5.0
_FADE_DEPTH_DB = 55.0  # under the ceiling (65 dB under the speech's peak): no recording's tone
# A fade is into silence: a floor under this is digital silence or a codec's rendering of it
# (Opus at 16 kbit/s: -104 to -112 dBFS), never a room's; over a bed of room tone (a recording
# laid on another's) the frames after a tone are that bed, not a fade.
_SILENCE_DB = -90.0
_CUT_MS = 20  # a cut's click: the frame it falls in, and the envelope's window past it


@dataclass(frozen=True)
class Stretch:
    """An utterance's own background, read on its pre-emphasised audio: a start is judged on
    the tone before the speech, an end on the tone after it."""

    audio: np.ndarray  # pre-emphasised float audio of the utterance
    # dBFS of the emphasised audio, per VAD frame of the plateau a start / an end is judged on:
    # each its own side's (a recording's tone after its speech may stand several dB over the one
    # before it)
    head_background: Background
    tail_background: Background
    head: int | None  # sample index (into the utterance audio) of the step up, if found
    tail: int | None  # sample index of the step down (exclusive), if found


def emphasised(pcm: np.ndarray) -> np.ndarray:
    """First-difference pre-emphasis of int16 PCM, as float audio."""
    x = pcm.astype(np.float64) / 32768.0
    out = np.empty_like(x)
    if len(x):
        out[0] = x[0]
        out[1:] = x[1:] - _EMPHASIS * x[:-1]
    return out


def _frame_db(x: np.ndarray, flen: int, n: int) -> np.ndarray:
    ms = np.square(x[: n * flen]).reshape(n, flen).mean(axis=1)
    return 10.0 * np.log10(np.maximum(ms, 1e-12))


def _level_db(pcm: np.ndarray, flen: int, a: int, b: int) -> np.ndarray:
    """Per-frame variance of frames [a, b) in dBFS: a DC offset (or one a file's DC removal
    left in its digital silence) is no level."""
    x = pcm[a * flen : b * flen].reshape(b - a, flen).astype(np.int64)
    s1 = x.sum(axis=1)
    variance = (np.einsum("ij,ij->i", x, x) - s1 * s1 / flen) / (flen * 2.0**30)  # exact sums
    return 10.0 * np.log10(np.maximum(variance, 1e-12))


def _floor_db(levels: np.ndarray) -> float:
    """The silence's level among frame ``levels``: the quietest pair of neighbouring frames' louder
    one. Digital silence is exact zeros; a low-rate Opus file's silence alternates -104 and -112
    dBFS by 10 ms frame (its 20 ms frames), which the quietest frame alone would split."""
    if len(levels) < 2:
        return float(levels.min()) if len(levels) else -120.0
    return float(np.maximum(levels[:-1], levels[1:]).min())


def find_stretch(pcm: np.ndarray, flen: int, loudest: float) -> Stretch | None:
    """The utterance's own background if its audio steps up from (or down to) a floor of
    silence onto a steady plateau that is not speech; None when it sits on the channel's
    background. The steps are looked for within ``_REACH_MS`` of the audio's ends (most
    utterances are over there: the whole of it is read only for a candidate). ``loudest``: the
    mean square of the utterance's loudest frame."""
    n = len(pcm) // flen
    plateau = max(1, _PLATEAU_MS * SAMPLE_RATE // 1000 // flen)
    reach = min(n, _REACH_MS * SAMPLE_RATE // 1000 // flen)
    if n < 2 * plateau:
        return None
    ends = (_level_db(pcm, flen, 0, reach), _level_db(pcm, flen, n - reach, n))
    # Each side's own silence: a codec renders it at another level after a reply than before
    # (Opus at 10 kbit/s: -109/-120 dBFS before, -102/-108 after).
    floor, tail_floor = _floor_db(ends[0]), _floor_db(ends[1])
    ceiling = 10.0 * np.log10(max(loudest, 1e-12)) - _BELOW_SPEECH_DB / 2
    up = np.flatnonzero(ends[0] >= floor + _FLOOR_DB)
    down = np.flatnonzero(ends[1] >= tail_floor + _FLOOR_DB)
    first = int(up[0]) if len(up) else reach
    last = n - reach + int(down[-1]) if len(down) else n - reach - 1
    at_head = first >= _EDGE and _steady(ends[0][first : first + plateau], plateau, floor, ceiling)
    end, faded = _tone_end(ends[1], last - (n - reach), flen, tail_floor, ceiling)
    tone_last = n - reach + end
    at_tail = tone_last >= n - reach and last < n - _EDGE
    if not (at_head or at_tail):
        return None
    full = _level_db(pcm, flen, 0, n)
    audio = emphasised(pcm)
    emph = _frame_db(audio, flen, n)
    peak = float(emph.max())
    pieces: list[Background] = []
    head, tail = None, None
    head_tone, tone = slice(first, first + plateau), slice(tone_last + 1 - plateau, tone_last + 1)
    rumble = not faded or np.median(emph[tone]) <= np.median(full[tone]) - _RUMBLE_DB
    # However far under the speech a tone is, it is the stretch's background. (A tone over 50 dB
    # under the speech's peak pre-emphasised, 40 full-band, was once left to the channel-floor
    # refinement, as under its threshold: through Opus at 10 kbit/s a tone 54 / 46 dB under was
    # taken whole by it, a start 247 ms early; one side's tone 0.5 dB over that line and the other
    # side's under it judged an end on the louder one, 20 ms early.)
    if at_head and _under_speech(emph[head_tone], peak):
        pieces.append(_plateau_background(_extent(full, emph, first, 1, floor, peak)))
        head = first * flen
    if at_tail and rumble and _under_speech(emph[tone], peak):
        pieces.append(_plateau_background(_extent(full, emph, tone_last, -1, tail_floor, peak)))
        tail = (tone_last + 1 + _FADE_MS * SAMPLE_RATE // 1000 // flen) * flen
    if not pieces:
        return None
    # Each side's own level, the smaller swing of the two: a tone that swings wider on one side
    # (a decay into it, a breath) would raise that side's threshold over a quiet last sound.
    swing = min(b.upper_db - b.median_db for b in pieces)
    head_bg, tail_bg = (
        Background(b.median_db, b.median_db + swing) for b in (pieces[0], pieces[-1])
    )
    return Stretch(audio, head_bg, tail_bg, head, tail)


def _tone_end(
    levels: np.ndarray, last: int, flen: int, floor: float, ceiling: float
) -> tuple[int, bool]:
    """The last frame of the steady tone that ends at or before frame ``last`` (the last frame
    over the floor) of ``levels`` (-1 when there is none), and whether a fade was walked back
    over to it. The tone is judged short of its last frame: a codec fades into the silence there
    (Opus in a call: -75, -87, then -112 dBFS, the last frame over the floor), which widened its
    spread. A longer fade into silence (an Opus file's: 100-300 ms from -77 to -95 dBFS, then
    the last bit's dither) is walked back over to a tone ``_FADE_UNDER_DB`` over every frame
    after it; at a low rate that fade is steady itself, and is told from a tone by its depth
    under the speech (``_FADE_DEPTH_DB`` under ``ceiling``)."""
    plateau = max(1, _PLATEAU_MS * SAMPLE_RATE // 1000 // flen)
    k = last - _FADE_MS * SAMPLE_RATE // 1000 // flen
    reach = _FADE_REACH_MS * SAMPLE_RATE // 1000 // flen if floor <= _SILENCE_DB else 1
    for end in range(k, max(plateau - 1, k - reach), -1):
        tone = levels[end + 1 - plateau : end + 1]
        if not _steady(tone, plateau, floor, ceiling):
            continue
        median = float(np.median(tone))
        if median < ceiling - _FADE_DEPTH_DB:
            continue
        if end == k or float(levels[end + 1 : last + 1].max()) <= median - _FADE_UNDER_DB:
            return end, end != k
    return -1, False


def last_sound(env: np.ndarray, end: int, thresh: float, strong: float, max_dip: float) -> int:
    """``end`` moved past a sentence's last sound that the VAD left out (in env hops): a final
    fricative after a stop's closure ("...than he was": 120 ms of closure, then 190 ms of "s" 12
    dB under the speech's peak, pre-emphasised, where webrtcvad flagged no frame; whether it
    flagged one depended on where the reply fell on its 10 ms grid: the end 313 ms early in one
    call of six). The sound starts within ``_CLOSURE_MS``, stands ``_OVER_TONE_DB`` over the
    tone's threshold, lasts ``_LAST_SOUND_MS`` over it and comes within reach of the speech's
    level (``strong``): a click or a breath in the tone after the speech does not."""
    reach = env[end : end + _CLOSURE_MS]
    over = np.flatnonzero(reach >= thresh + _OVER_TONE_DB)
    if not len(over):
        return end
    start = end + int(over[0])
    stop = start + walk(env[start + 1 :], thresh, max_dip) + 1
    if stop - start < _LAST_SOUND_MS or float(env[start:stop].max()) < strong:
        return end
    return stop


def _plateau_background(levels: np.ndarray) -> Background:
    """The background of a plateau's emphasised frame levels (dB)."""
    levels = np.sort(levels)
    median = float(levels[len(levels) // 2])
    # The plateau's loud end as far above its median as its quiet end is below: a breath or a
    # click inside the room tone would pull a plain upper percentile up to the speech's edges.
    low = float(levels[len(levels) // 10])
    return Background(median, median + max(3.0, median - low))


def rise_start(pcm: np.ndarray, flen: int, head: int, rise: int, window_ms: float) -> int | None:
    """Where the speech that rises at sample ``rise`` out of the plateau the audio (``pcm``)
    stepped up to at ``head`` begins (the live start: ``room_tone_start``): walking back from the
    rise while the pre-emphasised envelope stays ``_RISE_FROM_DB`` over the plateau's median.
    None when the opening is shorter than a plateau. Local to the rise: a click or a breath
    in the room tone further back does not move it."""
    a, b = head // flen, rise // flen
    if (b - a) * flen < _PLATEAU_MS * SAMPLE_RATE // 1000:
        return None
    audio = emphasised(pcm)
    quiet = b - _RISE_MS * SAMPLE_RATE // 1000 // flen  # the speech's first frames, under the rise
    median = float(np.median(_frame_db(audio[a * flen :], flen, quiet - a)))
    lo = head + _RISE_MS * HOP
    env = envelope_db(audio, window_ms, lo, rise + HOP)
    i = len(env) - 1
    while i > 0 and env[i - 1] > median + _RISE_FROM_DB:
        i -= 1
    return lo + i * HOP


def _steady(seg: np.ndarray, plateau: int, floor: float, ceiling: float) -> bool:
    """``seg`` (full-band frame levels) is a whole plateau, well above the floor, steady, and
    under ``ceiling`` (half the emphasised margin under the speech's full-band peak: a cheap
    first test, the emphasised one decides)."""
    if len(seg) != plateau:
        return False
    o = np.sort(seg)  # nearest-rank percentiles: one sort, no interpolation
    k = len(o)
    return bool(
        o[-1] <= ceiling
        and o[k // 2] >= floor + _STEP_DB
        and o[0] >= floor + _FLOOR_DB
        and o[k * 9 // 10] - o[k // 10] <= _STEADY_DB
    )


def _under_speech(emph: np.ndarray, peak: float) -> bool:
    """Whether a plateau's pre-emphasised levels are well under the speech's peak."""
    return float(emph.max()) <= peak - _BELOW_SPEECH_DB


def _extent(
    full: np.ndarray, emph: np.ndarray, start: int, step: int, floor: float, peak: float
) -> np.ndarray:
    """The plateau's emphasised frame levels, walking from ``start`` by ``step`` until the
    speech's level (or the floor of silence around it)."""
    i = start
    while (
        0 <= i < len(full) and full[i] >= floor + _FLOOR_DB and emph[i] <= peak - _BELOW_SPEECH_DB
    ):
        i += step
    return emph[start:i] if step > 0 else emph[i + 1 : start + 1]


def stretch_spans(
    stretch: Stretch, base: int, spans: list[list[int]], p: RefineSettings
) -> list[list[int]]:
    """``spans`` (call-clock samples; the utterance audio starts at ``base``) refined against the
    stretch's own background on its pre-emphasised envelope, searching ``stretch_search_ms``
    either way (the room tone the VAD took for speech may run 430 ms past the speech). Spans
    with nothing above the background are dropped; a lead cut off from the speech by a pause
    and never within ``stretch_weak_db`` of its peak (a breath or a click at the start of the
    recording) is skipped. Ordered, and merged where refinement closed a pause."""
    env = envelope_db(stretch.audio, p.window_ms)
    lo = (stretch.head or 0) // HOP
    # The room tone's last moments before the step down are left out: a recording cut off in
    # its tone clicks there (pre-emphasised, 17 dB over the tone), and the turn ended at the click
    hi = len(env) if stretch.tail is None else min(len(env), stretch.tail // HOP - _CUT_MS)
    if hi <= lo:
        return spans
    inside = env[lo:hi]
    peak = float(inside.max())
    thresh = threshold_db(peak, stretch.head_background, p)  # a start's, on the tone before
    tail_thresh = threshold_db(peak, stretch.tail_background, p)  # an end's, on the tone after
    wide = p.model_copy(update={"search_ms": p.stretch_search_ms})
    out: list[list[int]] = []
    for s, e in spans:
        a, b = max(0, (s - base) // HOP - lo), min(hi - lo, -(-(e - base) // HOP) - lo)
        if b <= a or float(inside[a:b].max()) < min(thresh, tail_thresh):
            continue  # room tone the VAD took for speech
        hs = refine_start(inside, a, thresh, wide)
        if p.weak_db > 0:
            blip = (p.blip_ms, p.blip_gap_ms)
            hs = skip_weak_lead(
                inside, hs, thresh, peak - p.weak_db, p.max_dip_ms, blip, p.weak_min_ms
            )
        if p.stretch_weak_db > 0:
            hs = skip_weak_lead(inside, hs, thresh, peak - p.stretch_weak_db, p.blip_gap_ms)
        he = refine_end(inside, b, tail_thresh, wide)
        he = last_sound(inside, he, tail_thresh, peak - p.stretch_weak_db, p.max_dip_ms)
        rs = max(base + (lo + hs) * HOP, out[-1][1] if out else base)
        out.append([rs, max(rs, base + (lo + he) * HOP)])
    return merge_touching(out) or spans
