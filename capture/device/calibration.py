"""Calibration: how late a sound device's loopback returns a marker, by its own stream times.

A short chirp is played on an output at a known DAC time and found, by cross-correlation, in an
input that hears that output (a sink's monitor, a loopback cable, the caller side of a stereo
mixer), whose blocks carry ADC times. If PortAudio's times were complete the marker would come
back at the time it left; what is left over (``correction_ms``: converter and driver latency the
times do not include) is subtracted from captured audio. The chirp sweeps 10-20 kHz when the
device rate allows, above the 16 kHz pipeline's band, so nothing downstream (the reference
agent's ears included) ever hears it. Several markers: the median is applied, the spread shows
whether the path is stable.

The same marker train opens every device call, calibrated or not: it is the call's *ring*, how a
reference agent on sound devices (device_agent.py) knows a call has started (``RingDetector``).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from turnscope.capture.clock import CallClock
from turnscope.capture.device.defaults import REPEATS
from turnscope.capture.device.input import Block, InputCapture
from turnscope.capture.device.io import Device
from turnscope.capture.device.playback import DeviceClip, DevicePlayer
from turnscope.capture.device.stream import settle
from turnscope.errors import CalibrationError

MARKER_MS = 40
SPACING_S = 0.3
WINDOW_S = 0.15  # a marker is looked for this far either side of where the stream times put it
MIN_MATCH = 0.5  # normalised correlation a found marker must reach
MAX_SPREAD_MS = 5.0


def marker(rate: int) -> np.ndarray:
    """The chirp at ``rate`` (the same continuous signal at any rate)."""
    n = round(rate * MARKER_MS / 1000)
    t = np.arange(n) / rate
    hi = min(20000.0, 0.45 * rate)
    lo = 10000.0 if hi >= 14000 else 300.0  # out of the 16 kHz band only if the rate allows
    duration = n / rate
    phase = 2 * np.pi * (lo * t + (hi - lo) * t * t / (2 * duration))
    return (0.5 * np.hanning(n) * np.sin(phase)).astype(np.float32)


@dataclass
class Calibration:
    """Per marker: arrival minus departure by the stream times (the residual the times miss),
    and callback-to-callback time (the round trip an app counting samples would see)."""

    output: str
    input: str
    rate: int
    residuals_ms: list[float] = field(default_factory=list)
    round_trips_ms: list[float] = field(default_factory=list)
    played: int = 0

    @property
    def correction_ms(self) -> float:
        return statistics.median(self.residuals_ms)

    @property
    def spread_ms(self) -> float:
        return max(self.residuals_ms) - min(self.residuals_ms)

    @property
    def round_trip_ms(self) -> float:
        return statistics.median(self.round_trips_ms)

    def to_dict(self) -> dict[str, Any]:
        return {
            "output": self.output,
            "input": self.input,
            "rate": self.rate,
            "markers_played": self.played,
            "markers_found": len(self.residuals_ms),
            "correction_ms": round(self.correction_ms, 2),
            "spread_ms": round(self.spread_ms, 2),
            "residuals_ms": [round(r, 2) for r in self.residuals_ms],
            "round_trip_ms": round(self.round_trip_ms, 1),
            "round_trips_ms": [round(r, 1) for r in self.round_trips_ms],
        }


class LoopbackTap:
    """Keeps one channel of an input's anchored blocks while a calibration runs."""

    def __init__(self, rate: int, channel: int = 0) -> None:
        self.rate = rate
        self.channel = channel
        self.blocks: list[tuple[np.ndarray, float, float]] = []  # (mono, t, arrived)

    def __call__(self, block: Block) -> None:
        if block.t is not None:
            self.blocks.append((block.pcm[:, self.channel].copy(), block.t, block.arrived))


def _correlate(signal: np.ndarray, template: np.ndarray) -> np.ndarray:
    """Valid-mode cross-correlation by FFT."""
    size = len(signal) + len(template)
    nfft = 1 << (size - 1).bit_length()
    spec = np.fft.rfft(signal, nfft) * np.conj(np.fft.rfft(template, nfft))
    return np.fft.irfft(spec, nfft)[: len(signal) - len(template) + 1]


def locate(tap: LoopbackTap, sent_at: float) -> tuple[float, float] | None:
    """(ADC time, callback time) where the marker that left at ``sent_at`` came back, or None."""
    if not tap.blocks:
        return None
    template = marker(tap.rate)
    signal = np.concatenate([b[0] for b in tap.blocks])
    times = np.concatenate([b[1] + np.arange(len(b[0])) / tap.rate for b in tap.blocks])
    arrivals = np.concatenate([np.full(len(b[0]), b[2]) for b in tap.blocks])
    lo = int(np.searchsorted(times, sent_at - WINDOW_S))
    hi = int(np.searchsorted(times, sent_at + WINDOW_S)) + len(template)
    segment = signal[lo:hi]
    if len(segment) < len(template) * 2:
        return None
    corr = _correlate(segment, template)
    p = int(np.argmax(corr))
    energy = float(np.linalg.norm(segment[p : p + len(template)]) * np.linalg.norm(template))
    if energy <= 0 or corr[p] / energy < MIN_MATCH:
        return None
    delta = 0.0
    if 0 < p < len(corr) - 1:  # parabolic peak interpolation: sub-sample time
        a, b, c = corr[p - 1], corr[p], corr[p + 1]
        denom = a - 2 * b + c
        delta = 0.5 * (a - c) / denom if denom else 0.0
    return float(times[lo + p] + delta / tap.rate), float(arrivals[lo + p + len(template) - 1])


async def ring(player: DevicePlayer, repeats: int = REPEATS) -> list[DeviceClip]:
    """Play the marker train; return once the last marker can have come back."""
    first = time.monotonic() + player.lead_ms / 1000 + 0.05
    out_marker = marker(player.rate)
    clips = [player.play_raw(out_marker, first + i * SPACING_S) for i in range(repeats)]
    await asyncio.wait_for(asyncio.gather(*(c.done for c in clips)), repeats * SPACING_S + 5)
    last = max(c.ended_t or 0.0 for c in clips)
    await asyncio.sleep(max(0.0, last + WINDOW_S + 0.1 - time.monotonic()))
    return clips


async def measure(
    player: DevicePlayer, tap: LoopbackTap, input_name: str, *, repeats: int = REPEATS
) -> Calibration:
    """Play ``repeats`` markers on ``player`` and find them in ``tap``."""
    result = Calibration(player.name, input_name, player.rate, played=repeats)
    clips = await ring(player, repeats)
    for clip in clips:
        if clip.started_t is None or clip.handed_at is None:
            continue
        found = locate(tap, clip.started_t)
        if found is not None:
            result.residuals_ms.append((found[0] - clip.started_t) * 1000)
            result.round_trips_ms.append((found[1] - clip.handed_at) * 1000)
    if len(result.residuals_ms) < max(1, repeats // 2 + 1):
        raise CalibrationError(
            f"the marker played on {player.name!r} did not come back in {input_name!r} "
            f"({len(result.residuals_ms)} of {repeats} found); the input must hear that output "
            "(its monitor or a loopback cable)"
        )
    if result.spread_ms > MAX_SPREAD_MS:
        raise CalibrationError(
            f"the loopback {player.name!r} -> {input_name!r} is not stable "
            f"(markers came back {result.spread_ms:.1f} ms apart)"
        )
    return result


async def measure_via_loopback(
    player: DevicePlayer, loopback: Device, rate: int, *, repeats: int = REPEATS
) -> Calibration:
    """Measure a running, settled ``player`` through a mono input that hears it (opened, settled
    and closed here): a call's --loopback-in."""
    capture = InputCapture(loopback, rate, 1, option="--loopback-in")
    tap = LoopbackTap(rate)
    capture.listeners.append(tap)
    try:
        capture.open()
        await settle([capture])
        return await measure(player, tap, loopback.name, repeats=repeats)
    finally:
        capture.close()


async def calibrate_devices(
    output: Device,
    loopback: Device,
    *,
    out_rate: int,
    in_rate: int,
    channel: int = 0,
    channels: int = 1,
    repeats: int = REPEATS,
) -> Calibration:
    """`turnscope calibrate`: open both devices, settle, measure, close."""
    player = DevicePlayer(output, out_rate, option="--out", clock=CallClock())
    capture = InputCapture(loopback, in_rate, channels, option="--in")
    tap = LoopbackTap(in_rate, channel)
    capture.listeners.append(tap)
    try:
        # The output runs first: an input monitoring an idle PulseAudio sink reports times that
        # are hundreds of ms off for seconds.
        player.open()
        await settle([player])
        capture.open()
        await settle([capture])
        return await measure(player, tap, loopback.name, repeats=repeats)
    finally:
        capture.close()
        player.close()


class RingDetector:
    """Hears a call's ring (the marker train) in an input's blocks, by normalised correlation.

    ``push`` returns True when a ring has ended: markers were heard and none for ``quiet_s``.
    """

    def __init__(self, rate: int, quiet_s: float = SPACING_S + 0.15) -> None:
        self.rate = rate
        self.quiet_s = quiet_s
        self.template = marker(rate)
        self.heard: list[float] = []  # monotonic times of markers heard in the current ring
        self._norm = float(np.linalg.norm(self.template))
        self._tail = np.zeros(0, np.float32)
        self._tail_t = 0.0

    def push(self, mono: np.ndarray, t: float) -> bool:
        n = len(self.template)
        signal = np.concatenate([self._tail, mono])
        start_t = t - len(self._tail) / self.rate
        self._tail = signal[-(n - 1) :] if len(signal) >= n else signal
        if len(signal) >= n and float(np.max(np.abs(signal))) > 1e-4:
            corr = _correlate(signal, self.template)
            power = np.concatenate([[0.0], np.cumsum(signal.astype(np.float64) ** 2)])
            window = np.sqrt(np.maximum(power[n:] - power[:-n], 1e-12))
            score = corr / (window * self._norm)
            p = int(np.argmax(score))
            if score[p] >= MIN_MATCH:
                at = start_t + p / self.rate
                if not self.heard or at - self.heard[-1] > SPACING_S / 2:
                    self.heard.append(at)
        end = t + len(mono) / self.rate
        if self.heard and end - self.heard[-1] > self.quiet_s:
            self.heard = []
            return True
        return False


def calibration_record(calibration: Calibration | None, why_not: str | None) -> dict[str, Any]:
    """What a result records about calibration: the measurement, or why there is none."""
    if calibration is not None:
        return {"applied": True, **calibration.to_dict()}
    return {"applied": False, "reason": why_not}
