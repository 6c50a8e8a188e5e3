"""A call through real sound devices as a pipeline source (transport "desktop_audio").

The scripted caller plays into an output device; the agent is recorded from an input device, or
both parties from one 2-channel input (``stereo_in``: e.g. a mixer with the caller's mic on one
side and the agent's line on the other). Placement on the call clock comes from PortAudio's
stream times (device_clock.py), not from counting samples: the caller channel is what was played,
at its DAC time; captured audio is at its ADC time minus the calibrated latency. Calibration
(calibration.py) runs before the call whenever a loopback of the caller output can be heard: the
input named like the output (``caller_out`` -> ``caller_in``), ``loopback_in``, or the caller
side of the stereo input. Without it the evidence is marked degraded. The markers are played
either way: they are the call's ring, which tells a device agent the call has started.

Start-up order matters with PulseAudio: the output runs (and its clock settles) before any input
that monitors it is opened, else the input's times are off by hundreds of ms for seconds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from turnscope.capture.call_source import CallEnd, CallSource
from turnscope.capture.clock import CallClock
from turnscope.capture.device.calibration import (
    REPEATS,
    Calibration,
    CalibrationError,
    LoopbackTap,
    calibration_record,
    measure,
    measure_via_loopback,
    ring,
)
from turnscope.capture.device.input import Block, ChannelPlacer, InputCapture
from turnscope.capture.device.io import Device, choose_rate, find_device, list_devices
from turnscope.capture.device.playback import DEFAULT_LEAD_MS, DevicePlayer
from turnscope.capture.device.stream import DeviceStream, start_streams, watch_streams
from turnscope.capture.frames import AGENT, CALLER
from turnscope.capture.source import SourceInfo, SourceNote
from turnscope.errors import InputError

DEVICE_TIMING = "PortAudio stream time (ADC/DAC)"

UNCALIBRATED = "device timing is not calibrated"


@dataclass
class DeviceCallOptions:
    """Which devices carry the call, and how."""

    caller_out: str
    agent_in: str | None = None
    stereo_in: str | None = None
    loopback_in: str | None = None  # None: the input named like caller_out, _out -> _in
    calibrate: bool = True
    rate: int | None = None  # None: 48 kHz if the devices take it, else their default
    caller_side: int = 0  # the stereo input's channel that carries the caller (0 left, 1 right)
    lead_ms: float = DEFAULT_LEAD_MS
    media_timeout_s: float = 2.0  # a stream without callbacks this long: the device is gone
    max_duration_s: float = 300.0
    repeats: int = REPEATS

    @property
    def transport(self) -> str:
        return "device"


def loopback_for(output: Device, name: str | None, kind_option: str) -> Device | None:
    """The input that hears ``output``: the one named, or by the _out -> _in convention."""
    if name is not None:
        return find_device(name, "input", option=kind_option)
    if not output.name.endswith("_out"):
        return None
    wanted = output.name[: -len("_out")] + "_in"
    return next((d for d in list_devices() if d.name == wanted and d.max_input_channels >= 1), None)


class DeviceCall(CallSource):
    """Plays the caller into one device, records the agent from another: the ``Source``."""

    def __init__(self, options: DeviceCallOptions) -> None:
        super().__init__()
        self.options = options
        self.clock = CallClock()
        o = options
        if (o.agent_in is None) == (o.stereo_in is None):
            raise InputError(
                "a device call records the agent with --agent-in DEV or --stereo-in DEV"
            )
        if o.caller_side not in (0, 1):
            raise InputError("--caller-side must be left or right")
        out = find_device(o.caller_out, "output", option="--caller-out")
        self.stereo = o.stereo_in is not None
        in_option = "--stereo-in" if self.stereo else "--agent-in"
        channels = 2 if self.stereo else 1
        inp = find_device(
            o.stereo_in or o.agent_in or "", "input", channels=channels, option=in_option
        )
        self.loopback = None if self.stereo else loopback_for(out, o.loopback_in, "--loopback-in")
        out_rate = choose_rate(out, "output", 1, o.rate, "--caller-out")
        in_rate = choose_rate(inp, "input", channels, o.rate, in_option)
        self.caller_track = DevicePlayer(
            out, out_rate, option="--caller-out", clock=self.clock, lead_ms=o.lead_ms
        )
        self.capture = InputCapture(inp, in_rate, channels, option=in_option)
        self.info = SourceInfo(
            transport="desktop_audio",
            timing_evidence=DEVICE_TIMING,
            description=f"sound devices: caller -> {out.name!r}, "
            + (
                f"both parties <- {inp.name!r} (2 channels)"
                if self.stereo
                else f"agent <- {inp.name!r}"
            ),
            realtime=True,
        )
        self.calibration: Calibration | None = None
        self.uncalibrated: str | None = None  # why not, when not
        self._agent = ChannelPlacer(AGENT, in_rate, self.clock, self._emit)
        self._caller = ChannelPlacer(
            CALLER, in_rate if self.stereo else out_rate, self.clock, self._emit
        )
        self._tasks: list[asyncio.Task] = []

    @property
    def streams(self) -> list[DeviceStream]:
        return [self.caller_track, self.capture]

    # -- set-up ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Start the devices, calibrate, start the call clock; CallSetupError on failure."""
        self.ended = asyncio.get_running_loop().create_future()
        await start_streams(
            self.caller_track,
            self.capture,
            self._calibrate,
            media_timeout_s=self.options.media_timeout_s,
        )
        for stream in self.streams:  # from here on a lost device ends the call, audio kept
            stream.on_ended = self._stream_ended
        correction = self.calibration.correction_ms / 1000 if self.calibration else 0.0
        self._agent.correction_s = correction
        if self.stereo:
            self._caller.correction_s = correction
        else:
            self.caller_track.listeners.append(self._played)
        self.capture.listeners.append(self._captured)
        for stream in self.streams:
            stream.reset_stats()  # describe the call, not the start-up
        self.clock.start()
        self._tasks = [
            asyncio.ensure_future(
                watch_streams(
                    self.streams,
                    self.options.media_timeout_s,
                    self._gone,
                    lambda: not self._closed,
                )
            ),
            asyncio.ensure_future(self._max_duration(self.options.max_duration_s)),
        ]

    async def _calibrate(self) -> None:
        """Ring (the marker train opens every call) and measure it when a loopback hears it."""
        o = self.options
        if o.calibrate and (self.stereo or self.loopback is not None):
            try:
                self.calibration = await self._measure()
            except CalibrationError as exc:
                self.uncalibrated = f"calibration failed: {exc}"
        else:
            self.uncalibrated = (
                "--no-calibrate"
                if not o.calibrate
                else f"no input hears {self.caller_track.name!r}; give one with --loopback-in"
            )
            await ring(self.caller_track, o.repeats)
        if self.uncalibrated:
            self.info.degrade(SourceNote.UNCALIBRATED, f"{UNCALIBRATED} ({self.uncalibrated})")

    async def _measure(self) -> Calibration:
        o = self.options
        if self.stereo:
            tap = LoopbackTap(self.capture.rate, o.caller_side)
            self.capture.listeners.append(tap)
            try:
                return await measure(self.caller_track, tap, self.capture.name, repeats=o.repeats)
            finally:
                self.capture.listeners.remove(tap)
        assert self.loopback is not None
        rate = choose_rate(self.loopback, "input", 1, o.rate, "--loopback-in")
        return await measure_via_loopback(self.caller_track, self.loopback, rate, repeats=o.repeats)

    # -- media --------------------------------------------------------------------------------

    def _played(self, block: Block) -> None:
        self._caller.push(block.pcm[:, 0], block.t, block.run, block.arrived)

    def _captured(self, block: Block) -> None:
        if self.stereo:
            side = self.options.caller_side
            self._caller.push(block.pcm[:, side], block.t, block.run, block.arrived)
            self._agent.push(block.pcm[:, 1 - side], block.t, block.run, block.arrived)
        else:
            self._agent.push(block.pcm[:, 0], block.t, block.run, block.arrived)

    def _gone(self, stream: DeviceStream, problem: str) -> None:
        at = self.clock.now_ms() / 1000 if self.clock.origin is not None else 0.0
        self._finish(
            f"{stream.option} {stream.name!r} stopped {at:.1f} s into the call ({problem}): "
            "the device was unplugged or its sound server went away; what was captured up to "
            "then is kept (check the device with `turnscope devices`)",
            degraded=True,
            kind=CallEnd.DEVICE_GONE,
        )

    def _stream_ended(self, stream: DeviceStream) -> None:
        self._gone(stream, "its stream stopped")

    # -- ending --------------------------------------------------------------------------------

    def _flush(self) -> None:
        for placer in (self._caller, self._agent):
            placer.flush()

    def _release(self) -> None:
        current = asyncio.current_task()
        for task in self._tasks:
            if task is not current:
                task.cancel()
        self._close_streams()

    def _close_streams(self) -> None:
        for stream in self.streams:
            stream.close()

    def _describe(self) -> None:
        self.caller_track.refresh_log()  # the caller's send log, re-timed after any xrun
        origin = self.clock.origin
        self.info.duration_ms = self.clock.now_ms() if origin is not None else None
        devices: dict[str, Any] = {s.option.lstrip("-"): s.describe() for s in self.streams}
        if self.loopback is not None:
            devices["loopback-in"] = {"device": self.loopback.to_dict()}
        for stream in self.streams:
            flags = stream.xruns
            if flags.get("input_overflow"):
                self.info.degrade(
                    SourceNote.INPUT_OVERFLOW,
                    f"{flags['input_overflow']} input overflow(s) on {stream.option} "
                    f"{stream.name!r}: some captured audio was lost",
                )
            if flags.get("output_underflow"):
                self.info.warn(
                    SourceNote.OUTPUT_UNDERFLOW,
                    f"{flags['output_underflow']} output underflow(s) on {stream.option} "
                    f"{stream.name!r}: the caller's audio had gaps",
                )
            steps = stream.clock.to_dict(since=origin)["reanchors"]
            if steps:
                largest = max(abs(s["step_ms"]) for s in steps)
                self.info.warn(
                    SourceNote.DEVICE_TIMING_MOVED,
                    f"the {stream.option} {stream.name!r} stream's timing moved {len(steps)} "
                    f"time(s) during the call (largest step {largest:.0f} ms); later audio is "
                    "placed by the new timing",
                )
        player = self.caller_track
        if player.late_starts:
            self.info.warn(
                SourceNote.LINE_LATE,
                f"{player.late_starts} caller line(s) started late (up to "
                f"{player.max_lag_ms:.0f} ms): the output buffer is longer than the "
                f"{self.options.lead_ms:.0f} ms lead",
            )
        self.info.details.update(
            {
                "devices": devices,
                "rates": {s.option.lstrip("-"): s.rate for s in self.streams},
                "blocksize": {s.option.lstrip("-"): s.blocksize for s in self.streams},
                "xruns": {s.option.lstrip("-"): dict(s.xruns) for s in self.streams},
                "calibration": self.calibration_record(),
                "clock": {
                    s.option.lstrip("-"): s.clock.to_dict(since=origin) for s in self.streams
                },
                "lead_ms": self.options.lead_ms,
                # sample 0 as time.monotonic(): compare with another process's log (an agent's)
                "clock_origin_monotonic": origin,
                "caller_channel": "captured (stereo input)" if self.stereo else "played (DAC time)",
                "end_reason": self.end_reason,
            }
        )

    def calibration_record(self) -> dict[str, Any]:
        """What the result records about calibration: the measurement, or why there is none."""
        return calibration_record(self.calibration, self.uncalibrated)
