"""One sound-device stream's clock: where each of its samples is in (monotonic) time.

Every callback PortAudio says when the block's first sample meets the converter (ADC time for
input, DAC time for output) on its own time base. That base is mapped to ``time.monotonic()``
(the event loop's clock) by reading PortAudio's stream time between two monotonic reads on the
event loop (``set_offset``), not in the callback: a callback waiting for the GIL runs late, and
an offset taken there would move with the load. Each callback gives an estimate of the *anchor*,
the monotonic time of the stream's sample 0 (block time minus its sample index over the rate).

Single estimates are not trusted. PulseAudio reports input times hundreds of ms off for the first
second or so of a stream, and PortAudio's priming callbacks carry no real time, so an anchor is
committed once six paced estimates agree. It is re-anchored only when the estimates have moved
together and stayed there: within ten callbacks after an over- or underflow (the samples really
moved), after two seconds otherwise (PulseAudio's reported delays also make excursions of 8-40 ms
that come back within a second, which must not move placed audio). Between re-anchors, samples
follow the anchor at the nominal rate, so a block is placed exactly and consecutive blocks are
contiguous. Each (re)anchor starts a new *run*; consumers place a run's first block by its time
and the rest by sample count within the run. A re-anchor is only known some callbacks after the
samples moved, so each anchor also records the sample it applies from (``time_of``): logs of
when things were played are corrected afterwards, audio already placed is not.

Estimates whose reported delay the stream's buffer cannot have are ignored: PulseAudio can report
an output delay of 0-30 ms (with 80 ms of samples buffered) for a second or two after a stream
starts before it ramps to the real one, and input delays of hundreds of ms on a 40 ms buffer.
"""

from __future__ import annotations

import statistics
from collections import deque
from typing import Any

COMMIT_AGREE = 6  # paced estimates that must agree to commit the first anchor
WINDOW = 10  # callbacks a re-anchor after an xrun looks at
LONG_WINDOW = 100  # callbacks (2 s at 20 ms) an unexplained move must hold for
# Estimates within this band agree. PulseAudio delivers input in 40 ms fragments, two callbacks
# each, and the second's time is 1-2 ms off the first's: jitter, not movement.
AGREE_S = 0.003
# A loaded machine's PulseAudio input reported times 8.6 ms apart for 10 s (CI, 3 test workers
# on 2 cores): after this long without agreement the first anchor takes the median of six paced
# estimates within RELAXED_AGREE_S (an anchor off by up to half that), and the result says so.
RELAX_AFTER_S = 2.0
RELAXED_AGREE_S = 0.012
XRUN_STEP_S = 0.005  # after an xrun, a larger move is a new anchor (a real one is a block)
REANCHOR_S = 0.008  # without one, only a move larger than this (PulseAudio's delays have a
# +-2 ms sawtooth) that also held for LONG_WINDOW within LONG_BAND_S
LONG_BAND_S = 0.004


class StreamClock:
    """Anchors one stream's sample indices on the monotonic clock. Fed from its callback."""

    def __init__(self, rate: int) -> None:
        self.rate = rate
        self.anchor: float | None = None  # monotonic time of sample 0
        self.run = 0  # bumped at every (re)anchor
        self.committed_at: float | None = None  # monotonic time of the last (re)anchor
        self.reanchors: list[dict[str, float]] = []
        self.max_drift_ms = 0.0  # largest deviation of reported times not followed (noise, drift)
        self.fallback = False  # PortAudio gave no stream times: callback arrival is used
        self.relaxed = False  # the first anchor was committed within RELAXED_AGREE_S
        self._first_at: float | None = None  # monotonic time of the first usable estimate
        self.offset: float | None = None  # monotonic minus PortAudio time, once measured
        # Plausible block time minus PortAudio's current time (seconds): at least half a block
        # ahead for output, no further behind than the buffer for input (see set_bounds).
        self.ahead_bounds = (-float("inf"), float("inf"))
        self.implausible = 0  # estimates ignored for a delay outside those bounds
        self._offsets: deque[float] = deque(maxlen=50)
        self.segments: list[tuple[int, float]] = []  # (from sample n, anchor), in order
        self._estimates: deque[float] = deque(maxlen=LONG_WINDOW)
        self._ns: deque[int] = deque(maxlen=LONG_WINDOW)  # the sample index of each estimate
        self._spans: deque[tuple[float, int]] = deque(maxlen=COMMIT_AGREE)  # (now, n)
        self._xrun = False  # an over/underflow since the last anchor: the samples moved

    def observe(self, n: int, pa_time: float, pa_now: float, now: float) -> float | None:
        """One callback: ``pa_time`` is PortAudio's time of sample ``n`` (the block's first),
        ``pa_now`` its current time, ``now`` time.monotonic(). Returns the monotonic time of
        sample ``n`` on the committed anchor, or None while there is none yet."""
        if pa_now > 0 and pa_time > 0:
            lo, hi = self.ahead_bounds
            if not lo <= pa_time - pa_now <= hi:
                self.implausible += 1
                return None if self.anchor is None else self.anchor + n / self.rate
            # Until set_offset: sampled after PortAudio's, now - pa_now is the offset plus a
            # delay, so the minimum over recent callbacks approximates it.
            self._offsets.append(now - pa_now)
            offset = self.offset if self.offset is not None else min(self._offsets)
            estimate = pa_time + offset - n / self.rate
        else:
            self.fallback = True
            estimate = now - n / self.rate
        self._estimates.append(estimate)
        if self._first_at is None:
            self._first_at = now
        self._ns.append(n)
        self._spans.append((now, n))
        self._update(now)
        return None if self.anchor is None else self.anchor + n / self.rate

    def _update(self, now: float) -> None:
        est = self._estimates
        if self.anchor is None:
            if len(est) < COMMIT_AGREE:
                return
            recent = list(est)[-COMMIT_AGREE:]
            (t0, n0), (t1, n1) = self._spans[-COMMIT_AGREE], self._spans[-1]
            # Callbacks in a burst (buffer priming before the stream really runs) agree with
            # each other but not with real time: the agreeing ones must also be paced.
            paced = t1 - t0 >= 0.5 * (n1 - n0) / self.rate
            spread = max(recent) - min(recent)
            relax = self._first_at is not None and now - self._first_at >= RELAX_AFTER_S
            if paced and (spread <= AGREE_S or (relax and spread <= RELAXED_AGREE_S)):
                self.relaxed = spread > AGREE_S
                self._commit(statistics.median(recent), now, 0)
            return
        if len(est) < WINDOW:
            return
        recent = list(est)[-WINDOW:]
        middle = statistics.median(recent)
        step = middle - self.anchor
        if self._xrun and abs(step) > XRUN_STEP_S and max(recent) - min(recent) <= AGREE_S:
            # The estimates were cleared at the xrun: the window starts where the samples moved.
            self._reanchor(middle, step, now, "xrun", self._ns[0])
            return
        if self._xrun and max(recent) - min(recent) <= AGREE_S:
            self._xrun = False  # stable where it was: the xrun did not move the samples
        if len(est) == LONG_WINDOW and max(est) - min(est) <= LONG_BAND_S:
            held = statistics.median(est)
            if abs(held - self.anchor) > REANCHOR_S:
                # It moved where the window starts (or before: the clock cannot tell).
                self._reanchor(held, held - self.anchor, now, "held", self._ns[0])
                return
        self.max_drift_ms = max(self.max_drift_ms, abs(step) * 1000)

    def _reanchor(self, anchor: float, step: float, now: float, why: str, from_n: int) -> None:
        self.reanchors.append({"at": now, "step_ms": round(step * 1000, 2), "after": why})
        self._commit(anchor, now, from_n)
        self._estimates.clear()
        self._ns.clear()

    def _commit(self, anchor: float, now: float, from_n: int) -> None:
        self.segments.append((from_n, anchor))
        self.anchor = anchor
        self.run += 1
        self.committed_at = now
        self._xrun = False

    def time_of(self, n: int) -> float | None:
        """The monotonic time of sample ``n`` by what is known now (later anchors included)."""
        for from_n, anchor in reversed(self.segments):
            if n >= from_n:
                return anchor + n / self.rate
        return self.segments[0][1] + n / self.rate if self.segments else None

    def set_bounds(self, kind: str, block_s: float, latency_s: float) -> None:
        """What delay a stream of ``kind`` with this block and buffer latency can report."""
        if kind == "output":
            # The buffer holds about ``latency_s`` of samples (give or take the block being
            # written): PulseAudio's early reports of 0-30 ms on an 80 ms buffer are impossible.
            self.ahead_bounds = (max(0.5 * block_s, latency_s - 2 * block_s), float("inf"))
        else:
            self.ahead_bounds = (-(latency_s + 2 * block_s), float("inf"))

    def set_offset(self, offset: float) -> None:
        """monotonic() minus PortAudio's time, measured outside the callback."""
        self.offset = offset

    def settled(self, now: float, hold_s: float) -> bool:
        """Anchored, and unchanged for ``hold_s``."""
        return self.committed_at is not None and now - self.committed_at >= hold_s

    def unsettled(self, now: float) -> str:
        """Why the clock has not settled, for the message of a stream that never did."""
        if self.anchor is None:
            recent = list(self._estimates)[-COMMIT_AGREE:]
            if len(recent) < COMMIT_AGREE:
                return f"{len(self._estimates)} usable stream times"
            spread = (max(recent) - min(recent)) * 1000
            (t0, n0), (t1, n1) = self._spans[0], self._spans[-1]
            pace = (t1 - t0) / ((n1 - n0) / self.rate) if n1 > n0 else 0.0
            return (
                f"never anchored: its last {COMMIT_AGREE} times {spread:.1f} ms apart (agree "
                f"within {AGREE_S * 1000:.0f}), callbacks at {pace:.2f}x the audio's pace"
            )
        since = now - (self.committed_at or now)
        return f"re-anchored {len(self.reanchors)} times, the last {since:.2f} s ago"

    def forget(self) -> None:
        """An over- or underflow: samples may have moved; judge on fresh estimates, quickly."""
        self._estimates.clear()
        self._ns.clear()
        self._spans.clear()
        self._xrun = True

    def to_dict(self, since: float | None = None) -> dict[str, Any]:
        """Re-anchors (after ``since``, as offsets from it) and the drift, for the result."""
        steps = [
            {
                "at_ms": round((r["at"] - (since or 0.0)) * 1000, 1),
                "step_ms": r["step_ms"],
                "after": r["after"],
            }
            for r in self.reanchors
            if since is None or r["at"] >= since
        ]
        return {
            "reanchors": steps,
            "max_drift_ms": round(self.max_drift_ms, 2),
            "implausible_times": self.implausible,
            "first_anchor_agreed_within_ms": round(
                (RELAXED_AGREE_S if self.relaxed else AGREE_S) * 1000
            ),
            "time_source": "callback arrival (no stream times)"
            if self.fallback
            else "PortAudio stream time",
        }
