"""The reference agent as a WebRTC peer: one call, answered from an offer, the agent's
behaviour (AgentCore) between its receiving and sending tracks."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from aiortc import RTCPeerConnection, RTCSessionDescription
from aiortc.mediastreams import MediaStreamTrack

from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.core import AgentCore
from turnscope.actors.agent.wire import Dtx, QuietFrames, lose_every, swap_every
from turnscope.asr.endpointer import Endpointer
from turnscope.asr.settings import Settings, load_settings
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import CALLER
from turnscope.capture.webrtc.jitter import tolerate_loss
from turnscope.capture.webrtc.opus import sending_codec
from turnscope.capture.webrtc.receiver import Placer, ReceiveStats, receive_track
from turnscope.capture.webrtc.signaling import rtc_configuration
from turnscope.capture.webrtc.track import PlaybackTrack

PAUSE_FRAMES = 10  # 20 ms frames of silence before drop_in_pauses loses a packet


class AgentSession:
    """One WebRTC call with the reference agent: listens, decides, speaks, logs the truth."""

    def __init__(
        self,
        behaviour: AgentBehaviour,
        settings: Settings | None = None,
        on_end: Callable[[AgentSession], None] | None = None,
    ) -> None:
        self.behaviour = behaviour
        base = settings or load_settings()
        self.settings = base.with_overrides({"vad": {"end_of_turn_ms": behaviour.end_of_turn_ms}})
        self.clock = CallClock()
        drop = Dtx() if behaviour.dtx else None
        # How long the agent has been silent, for drop_in_pauses only (it looks at every frame).
        self.quiet = QuietFrames(drop) if behaviour.drop_in_pauses else None
        self.track = PlaybackTrack(
            self.clock, drop=self.quiet or drop, codec=lambda: sending_codec(self.pc)
        )
        self.core = AgentCore(behaviour, self.settings, self.clock, self.track, self.close)
        self.pc = RTCPeerConnection(rtc_configuration())
        self.stats = ReceiveStats()
        self.on_end = on_end
        self.closed = False

    @property
    def endpointer(self) -> Endpointer:
        return self.core.endpointer

    @property
    def events(self) -> list[dict[str, Any]]:
        return self.core.events

    # -- set-up --------------------------------------------------------------------------------

    async def answer(self, offer_sdp: str) -> str:
        """Apply the caller's offer, return our answer SDP (all candidates gathered)."""
        await self.core.prepare()
        sender = self.pc.addTrack(self.track)
        tolerate_loss(self.pc.getTransceivers()[0].receiver)

        @self.pc.on("datachannel")
        def on_datachannel(channel) -> None:  # type: ignore[no-untyped-def]
            self.core.tell = lambda kind: self._rtvi(channel, kind)

        @self.pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            if track.kind == "audio":
                self.core._tasks.append(asyncio.ensure_future(self._listen(track)))

        @self.pc.on("connectionstatechange")
        async def on_state() -> None:
            if self.pc.connectionState == "connected":
                self.core.start()
            elif self.pc.connectionState in ("failed", "closed"):
                await self.close()

        await self.pc.setRemoteDescription(RTCSessionDescription(sdp=offer_sdp, type="offer"))
        await self.pc.setLocalDescription(await self.pc.createAnswer())
        if self.behaviour.swap_every:  # first: the losses below count packets as sent
            swapped = self._log("packet_swapped")
            swap_every(sender, self.behaviour.swap_every, swapped, self.behaviour.swap_behind)
        if self.behaviour.drop_every:
            # Each loss in the agent's own log, as it happened: where the caller should place it.
            only = self._in_pause if self.behaviour.drop_in_pauses else None
            lose_every(sender, self.behaviour.drop_every, self._log("packet_lost"), only)
        return self.pc.localDescription.sdp

    def _in_pause(self) -> bool:
        """Well inside a pause: the caller speaking (a reply comes only after its end of turn,
        400 ms later), nothing playing or due, and 200 ms of silence sent since the agent's
        last sound (both well over the caller's 60 ms margin: turnscope/lost_audio.py)."""
        quiet = self.quiet.count if self.quiet is not None else 0
        return self.core.caller_voiced and self.core.idle and quiet >= PAUSE_FRAMES

    def _log(self, event: str) -> Callable[[int], None]:
        """What logs each packet the wire loses or moves: its count, when it was sent."""

        def log(count: int) -> None:
            self.core.events.append({"event": event, "n": count, "monotonic": time.monotonic()})

        return log

    @staticmethod
    def _rtvi(channel, kind: str) -> None:  # type: ignore[no-untyped-def]
        """An RTVI event to the caller, as pipecat's agents send them (no timestamp)."""
        if channel.readyState == "open":
            with contextlib.suppress(Exception):
                channel.send(json.dumps({"label": "rtvi-ai", "type": kind}))

    # -- listening ------------------------------------------------------------------------------

    async def _listen(self, track: MediaStreamTrack) -> None:
        placer = Placer(CALLER, self.core.hear, self.stats)
        await receive_track(track, self.clock, placer, media_timeout_s=30.0)
        await self.close()

    # -- ground truth and ending ---------------------------------------------------------------

    def truth(self) -> dict[str, Any]:
        """The agent's own log (see AgentCore.truth)."""
        # Where the caller's stream was placed: moved back at its start, caught up later.
        placed = {"caller_anchor_fix_ms": self.stats.anchor_fix_ms,
                  "caller_catch_ups": self.stats.catch_ups,
                  "caller_caught_up_ms": self.stats.caught_up_ms}  # fmt: skip
        return {**self.core.truth(received_frames=self.stats.frames), **placed}

    async def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        self.core.close()
        with contextlib.suppress(Exception):
            await self.pc.close()
        if self.on_end is not None:
            self.on_end(self)
