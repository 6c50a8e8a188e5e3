"""The reference agent on sound devices: ``turnscope agent --device --in DEV --out DEV``.

The same AgentCore as the WebRTC agent, fed from an input device and speaking through an output
device (DevicePlayer: each prompt starts at a planned DAC time). Sound devices have no signaling,
so a call starts when the agent hears the caller's *ring* (the marker train every device call
opens with, see calibration.py) and has heard it end; each ring starts a new session, and each
finished session's ground truth (DAC times of every prompt, as time.monotonic(), comparable
across processes) goes to ``on_session_end``. At start-up the agent calibrates its own output
against a loopback input (``agent_out`` -> ``agent_in`` by name, or ``loopback_in``) when there
is one, and applies that latency to what it hears.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.core import AgentCore
from turnscope.asr.settings import Settings, load_settings
from turnscope.capture.clock import CallClock
from turnscope.capture.device.calibration import (
    Calibration,
    CalibrationError,
    RingDetector,
    calibration_record,
    measure_via_loopback,
)
from turnscope.capture.device.call import UNCALIBRATED, loopback_for
from turnscope.capture.device.input import Block, ChannelPlacer, InputCapture
from turnscope.capture.device.io import choose_rate, find_device
from turnscope.capture.device.playback import DEFAULT_LEAD_MS, DevicePlayer
from turnscope.capture.device.stream import DeviceStream, start_streams, watch_streams
from turnscope.capture.frames import CALLER

# An input monitoring an idle PulseAudio sink reports times that are off by up to ~600 ms, and
# steady, for over a second before they jump to the right ones: hold longer than that.
INPUT_HOLD_S = 2.0


@dataclass
class DeviceAgentOptions:
    input: str
    output: str
    loopback_in: str | None = None  # None: the input named like the output, _out -> _in
    calibrate: bool = True
    rate: int | None = None
    lead_ms: float = DEFAULT_LEAD_MS
    media_timeout_s: float = 2.0


class DeviceAgent:
    """Serves the reference agent on two sound devices until ``stop()``."""

    def __init__(
        self,
        behaviour: AgentBehaviour,
        options: DeviceAgentOptions,
        settings: Settings | None = None,
        on_session_end: Callable[[dict[str, Any]], None] | None = None,
    ) -> None:
        self.behaviour = behaviour
        self.options = options
        base = settings or load_settings()
        self.settings = base.with_overrides({"vad": {"end_of_turn_ms": behaviour.end_of_turn_ms}})
        self.on_session_end = on_session_end
        out = find_device(options.output, "output", option="--out")
        inp = find_device(options.input, "input", option="--in")
        self.loopback = loopback_for(out, options.loopback_in, "--loopback-in")
        in_rate = choose_rate(inp, "input", 1, options.rate, "--in")
        self.clock = CallClock()
        self.player = DevicePlayer(
            out,
            choose_rate(out, "output", 1, options.rate, "--out"),
            option="--out",
            clock=self.clock,
            lead_ms=options.lead_ms,
        )
        self.capture = InputCapture(inp, in_rate, 1, option="--in")
        self.ring = RingDetector(in_rate)
        self.calibration: Calibration | None = None
        self.uncalibrated: str | None = None
        self.core: AgentCore | None = None
        self.placer: ChannelPlacer | None = None
        self.sessions = 0
        self.stopped = asyncio.Event()
        self.stop_reason: str | None = None
        self._clips: list[np.ndarray] = []
        self._watch: asyncio.Task | None = None

    @property
    def streams(self) -> list[DeviceStream]:
        return [self.player, self.capture]

    # -- start-up ---------------------------------------------------------------------------------

    async def start(self) -> None:
        """Synthesise the prompts, open and settle the devices, calibrate; then wait for rings."""
        prep = AgentCore(self.behaviour, self.settings, self.clock, self.player, self._hangup)
        await prep.prepare()
        self._clips = prep.clips
        await start_streams(
            self.player,
            self.capture,
            self._calibrate,
            media_timeout_s=self.options.media_timeout_s,
            input_hold_s=INPUT_HOLD_S,
            input_timeout_s=12.0,
        )
        for stream in self.streams:
            stream.on_ended = lambda s: self._gone(s, "its stream stopped")
        self.capture.listeners.append(self._heard)
        self._watch = asyncio.ensure_future(
            watch_streams(
                self.streams,
                self.options.media_timeout_s,
                self._gone,
                lambda: not self.stopped.is_set(),
            )
        )

    async def _calibrate(self) -> None:
        if not self.options.calibrate:
            self.uncalibrated = "--no-calibrate"
            return
        if self.loopback is None:
            self.uncalibrated = f"no input hears {self.player.name!r}; give one with --loopback-in"
            return
        rate = choose_rate(self.loopback, "input", 1, self.options.rate, "--loopback-in")
        try:
            self.calibration = await measure_via_loopback(self.player, self.loopback, rate)
        except CalibrationError as exc:
            self.uncalibrated = f"calibration failed: {exc}"

    @property
    def correction_s(self) -> float:
        return self.calibration.correction_ms / 1000 if self.calibration else 0.0

    # -- sessions ---------------------------------------------------------------------------------

    def _heard(self, block: Block) -> None:
        if block.t is None:
            return
        mono = block.pcm[:, 0]
        if self.ring.push(mono, block.t):
            self._new_session()
        elif self.placer is not None:
            self.placer.push(mono, block.t, block.run, block.arrived)

    def _new_session(self) -> None:
        self.end_session("a new call rang")
        self.clock = CallClock()
        self.player.call_clock = self.clock
        self.player.log = []
        self.player.max_lag_ms = 0.0
        self.player.resume()
        self.core = AgentCore(self.behaviour, self.settings, self.clock, self.player, self._hangup)
        self.core.clips = self._clips
        self.placer = ChannelPlacer(
            CALLER, self.capture.rate, self.clock, self.core.hear, correction_s=self.correction_s
        )
        self.sessions += 1
        for stream in self.streams:
            stream.reset_stats()  # describe the call, not what came before
        self.core.start()

    def _hangup(self) -> None:
        self.end_session("the agent hung up")

    def end_session(self, reason: str) -> None:
        """Finish the current call (if any) and hand over its ground truth."""
        core, placer = self.core, self.placer
        if core is None or placer is None:
            return
        self.core = self.placer = None
        core.close()
        if self.on_session_end is not None:
            self.on_session_end(self.truth(core, placer, reason))

    def truth(self, core: AgentCore, placer: ChannelPlacer, reason: str) -> dict[str, Any]:
        self.player.refresh_log()  # re-timed after any underflow the clock learned of later
        doc = core.truth(received_frames=placer.blocks)
        doc.update(
            {
                "transport": "desktop_audio",
                "end_reason": reason,
                "devices": {s.option.lstrip("-"): s.describe() for s in self.streams},
                "calibration": calibration_record(
                    self.calibration, f"{UNCALIBRATED} ({self.uncalibrated})"
                ),
                "clock": {
                    s.option.lstrip("-"): s.clock.to_dict(since=core.clock.origin)
                    for s in self.streams
                },
            }
        )
        return doc

    # -- ending -----------------------------------------------------------------------------------

    def _gone(self, stream: DeviceStream, problem: str) -> None:
        self.stop(f"{stream.option} {stream.name!r} stopped ({problem})")

    def stop(self, reason: str = "stopped") -> None:
        """End the current session and stop serving (idempotent)."""
        if self.stopped.is_set():
            return
        self.stop_reason = reason
        self.end_session(reason)
        self.stopped.set()

    def close(self) -> None:
        if self._watch is not None and self._watch is not asyncio.current_task():
            self._watch.cancel()
        for stream in self.streams:
            stream.close()
