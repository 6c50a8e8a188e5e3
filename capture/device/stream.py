"""A PortAudio stream bridged into asyncio. The audio callback runs on PortAudio's thread and must
never block: it copies the block, stamps it with its stream clock and hands it to the event loop
with ``loop.call_soon_threadsafe``; everything else happens on the loop. Over- and underflows are
counted from the callback's status flags, and a stream that stops by itself (a device unplugged,
its sound server gone) is noticed, so nothing fails silently.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from turnscope.capture.device.clock import StreamClock
from turnscope.capture.device.io import LIST_HINT, Device, Kind, portaudio
from turnscope.errors import CallSetupError, SetupFailure

XRUN_FLAGS = ("input_overflow", "input_underflow", "output_underflow", "output_overflow")
BLOCK_MS = 20
# Suggested buffer latency. Timing does not depend on it (the stream times include it), but an
# output callback that waits for the GIL (a transcriber in the same process, a busy 2-core
# machine) must not run the buffer dry: at PulseAudio's 'high' (40 ms) that happened several
# times a call; at 80 ms only when the whole machine stalled for a few hundred ms. Inputs stay
# at 'high': larger input buffers made PulseAudio's input times wander by tens of ms.
LATENCY = {"output": 0.08, "input": "high"}


class DeviceStream:
    """One input or output stream on one device; subclasses implement ``_callback``."""

    kind: Kind

    def __init__(self, device: Device, rate: int, channels: int, *, option: str) -> None:
        self.device = device
        self.rate = rate
        self.channels = channels
        self.option = option  # the command-line option that named the device (for messages)
        self.blocksize = rate * BLOCK_MS // 1000
        self.clock = StreamClock(rate)
        self.xruns: Counter[str] = Counter()
        self.callbacks = 0
        self.last_callback: float | None = None
        self.max_gap_s = 0.0  # longest time between two callbacks once running (starvation)
        self._delay = [0.0, 0]  # sum and count of |block time - callback time| (buffer delay)
        self.opened_at: float | None = None
        self.on_ended: Callable[[DeviceStream], None] | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stream: Any = None
        self._closing = False
        self._n = 0  # device-rate index of the next block's first sample

    @property
    def name(self) -> str:
        return self.device.name

    def open(self) -> None:
        """Open and start the stream (CallSetupError naming the device if that fails)."""
        sd = portaudio()
        self._loop = asyncio.get_running_loop()
        cls = sd.InputStream if self.kind == "input" else sd.OutputStream
        try:
            self._stream = cls(
                device=self.device.index,
                samplerate=self.rate,
                blocksize=self.blocksize,
                channels=self.channels,
                dtype="float32",
                latency=LATENCY[self.kind],
                dither_off=True,  # silence stays digital silence
                callback=self._callback,
                finished_callback=self._finished,
            )
            latency = float(self._stream.latency)
            self.clock.set_bounds(self.kind, self.blocksize / self.rate, latency)
            self._stream.start()
        except Exception as exc:
            self.close()
            raise CallSetupError(
                f"{self.option} {self.name!r}: could not start the {self.kind} stream "
                f"({str(exc).strip()}); is the device in use or gone? ({LIST_HINT})",
                SetupFailure.DEVICE,
            ) from None
        self.opened_at = self._loop.time()
        self.sync_clock()

    def sync_clock(self) -> None:
        """Measure PortAudio's time base against time.monotonic(): its stream time read between
        two monotonic reads (the tightest of a few tries). Called from the event loop."""
        stream = self._stream
        if stream is None or self._closing:
            return
        best: tuple[float, float] | None = None
        for _ in range(5):
            before = time.monotonic()
            try:
                pa = float(stream.time)
            except Exception:
                return
            after = time.monotonic()
            if pa <= 0:
                return  # this host API keeps no stream time
            if best is None or after - before < best[1]:
                best = ((before + after) / 2 - pa, after - before)
        if best is not None and best[1] < 0.002:
            self.clock.set_offset(best[0])

    def _callback(self, *args: Any) -> None:  # pragma: no cover - subclasses
        raise NotImplementedError

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        """Run ``fn(*args)`` on the event loop (from the audio thread)."""
        loop = self._loop
        if loop is None or self._closing:
            return
        with contextlib.suppress(RuntimeError):  # the loop already closed: the call is over
            loop.call_soon_threadsafe(fn, *args)

    def _tick(self, now: float) -> None:
        """Bookkeeping for every callback (audio thread)."""
        if self.last_callback is not None and self.callbacks > 50:
            self.max_gap_s = max(self.max_gap_s, now - self.last_callback)
        self.callbacks += 1
        self.last_callback = now

    def _buffered(self, t: float | None, now: float) -> None:
        """How far the block's converter time is from the callback (audio thread)."""
        if t is not None:
            self._delay[0] += abs(t - now)
            self._delay[1] += 1

    def reset_stats(self) -> None:
        """Describe the call from here on, not the start-up (event loop)."""
        self._delay = [0.0, 0]
        self.clock.max_drift_ms = 0.0

    @property
    def buffer_delay_ms(self) -> float | None:
        """Mean time between a block's converter time and its callback: what placing audio by
        callback arrival (instead of stream times) would get wrong."""
        total, n = self._delay
        return round(total / n * 1000, 1) if n else None

    def _count(self, status: Any) -> None:
        xrun = False
        for flag in XRUN_FLAGS:
            if getattr(status, flag, False):
                self.xruns[flag] += 1
                xrun = True
        if xrun:
            self.clock.forget()  # samples were dropped or delayed: the anchor may move

    def _finished(self) -> None:
        # PortAudio calls this when the stream stops, also on its own after a device error.
        if not self._closing:
            self._post(self._ended)

    def _ended(self) -> None:
        if not self._closing and self.on_ended is not None:
            self.on_ended(self)

    def problem(self, now: float, timeout_s: float) -> str | None:
        """Why this stream is dead, or None while it delivers callbacks."""
        if self._closing or self.opened_at is None:
            return None
        active = self._stream is not None and self._stream.active
        last = self.last_callback if self.last_callback is not None else self.opened_at
        if not active:
            return "its stream stopped"
        if now - last > timeout_s:
            return f"no audio callbacks for {now - last:.1f} s"
        return None

    def close(self) -> None:
        self._closing = True
        if self._stream is not None:
            with contextlib.suppress(Exception):
                self._stream.abort()
            with contextlib.suppress(Exception):
                self._stream.close()

    def describe(self) -> dict[str, Any]:
        return {
            "device": self.device.to_dict(),
            "option": self.option,
            "kind": self.kind,
            "rate": self.rate,
            "channels": self.channels,
            "blocksize": self.blocksize,
            "callbacks": self.callbacks,
            "max_callback_gap_ms": round(self.max_gap_s * 1000, 1),
            "buffer_delay_ms": self.buffer_delay_ms,
            "xruns": dict(self.xruns),
            "latency_s": None if self._stream is None else self._stream.latency,
        }


async def settle(
    streams: list[DeviceStream], *, hold_s: float = 0.5, timeout_s: float = 10.0
) -> None:
    """Wait until every stream's clock is anchored and has held still for ``hold_s``.

    PulseAudio reports wrong input times for up to ~1.5 s after a stream starts on an idle sink,
    and PortAudio primes output buffers before the stream runs; nothing is played or placed on
    the call clock before this returns. CallSetupError names a stream that never settles (a
    loaded 2-core machine once needed more than 6 s for a mixer input, hence 10 s).
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_s
    while True:
        for s in streams:
            s.sync_clock()
        now = loop.time()
        waiting = [s for s in streams if not s.clock.settled(now, hold_s)]
        if not waiting:
            return
        # PulseAudio can pause a second or more before a new stream's first real callback.
        check_alive(streams, timeout_s=5.0)
        if now > deadline:
            s = waiting[0]
            state = (
                "no callbacks"
                if s.callbacks == 0
                else f"its stream times kept moving: {s.clock.unsettled(now)}; "
                f"{s.clock.implausible} implausible"
            )
            raise CallSetupError(
                f"{s.option} {s.name!r}: the {s.kind} stream did not settle within "
                f"{timeout_s:.0f} s ({state}); is the device working? ({LIST_HINT})",
                SetupFailure.DEVICE,
            )
        await asyncio.sleep(0.05)


def check_alive(streams: list[DeviceStream], timeout_s: float = 2.0) -> None:
    """CallSetupError for a stream lost while starting (a set-up failure, not a bad
    calibration or a call that ended at 0 s)."""
    now = asyncio.get_running_loop().time()
    for stream in streams:
        problem = stream.problem(now, timeout_s)
        if problem:
            raise CallSetupError(
                f"{stream.option} {stream.name!r}: {problem} while starting "
                "(unplugged, or its sound server went away?)",
                SetupFailure.DEVICE,
            )


async def start_streams(
    output: DeviceStream,
    inp: DeviceStream,
    calibrate: Callable[[], Awaitable[None]],
    *,
    media_timeout_s: float,
    input_hold_s: float = 0.5,
    input_timeout_s: float = 10.0,
) -> None:
    """Open and settle the output, then the input (an input opened first can be starved while
    the output primes), calibrate, and check both still run; on any failure both are closed."""
    try:
        output.open()
        await settle([output])
        inp.open()
        await settle([inp], hold_s=input_hold_s, timeout_s=input_timeout_s)
        await calibrate()
        check_alive([output, inp], media_timeout_s)
    except BaseException:
        for stream in (output, inp):
            stream.close()
        raise


async def watch_streams(
    streams: list[DeviceStream],
    media_timeout_s: float,
    gone: Callable[[DeviceStream, str], None],
    running: Callable[[], bool],
) -> None:
    """While ``running()``, notice a stream that stopped or went silent (``gone(stream, why)``,
    once) and follow a step of the system clock PortAudio may use."""
    loop = asyncio.get_running_loop()
    while running():
        await asyncio.sleep(0.25)
        for stream in streams:
            stream.sync_clock()
            problem = stream.problem(loop.time(), media_timeout_s)
            if problem:
                gone(stream, problem)
                return
