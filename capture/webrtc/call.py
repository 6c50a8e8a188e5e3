"""A live WebRTC call as a pipeline source: the caller's track out, the agent's track in.

One clock: sample 0 is the first media event of the call. Caller audio is stamped with the
position it was sent at (exact: the track paces itself on that clock). Agent audio is placed where
it reached us (the caller's ear): the first frame is anchored at its arrival, later frames follow
their RTP timestamps, so a pts jump is lost audio (a gap) and a lasting rise in arrival delay
(e.g. a jitter buffer grown after loss) is re-anchored and reported, never silently absorbed.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from aiortc import RTCPeerConnection
from aiortc.mediastreams import MediaStreamTrack

from turnscope.capture import tally
from turnscope.capture.call_source import CallEnd, CallSource
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import AGENT, CALLER, PcmFrame
from turnscope.capture.player import MAX_LATE_REPORTED, sent_too_late
from turnscope.capture.source import SourceInfo, SourceNote
from turnscope.capture.urls import public_url
from turnscope.capture.webrtc.gaps import MAX_LOST_REPORTED, rtp_stats, split_gaps, where_lost
from turnscope.capture.webrtc.jitter import HOLD_MS, PLAYOUT_MS, AudioJitterBuffer, tolerate_loss
from turnscope.capture.webrtc.opus import sending_codec
from turnscope.capture.webrtc.quiet import QUIET_MS, Behind, QuietFill
from turnscope.capture.webrtc.receiver import (
    ANCHOR_WINDOW_MS,
    Placer,
    ReceiveStats,
    placement_notes,
    receive_track,
)
from turnscope.capture.webrtc.rtvi import Rtvi
from turnscope.capture.webrtc.signaling import (
    Signaling,
    SignalingSession,
    negotiate,
    rtc_configuration,
    use_loopback_only,
)
from turnscope.capture.webrtc.track import PlaybackTrack
from turnscope.errors import CallSetupError, ParseError, ParseProblem, SetupFailure
from turnscope.jsonio import loads

WEBRTC_TIMING = "caller: send time on the call clock; agent: arrival, placed by RTP timestamps"

MAX_LOGGED_MESSAGES = 200
PAUSE_PACE_S = 0.02  # how often the agent's pause is looked for (webrtc/quiet.py)
TICK_LATE_S = 0.01  # a tick this late: the loop was held up, packets may lie unread (jitter.py)


@dataclass
class CallOptions:
    """How to reach the agent."""

    url: str
    signaling: Signaling = "smallwebrtc"
    headers: dict[str, str] = field(default_factory=dict, repr=False)  # never written out
    ice_servers: list[str] = field(default_factory=list)
    loopback_only: bool = False
    connect_timeout_s: float = 10.0
    media_timeout_s: float = 5.0  # no agent audio frames for this long: the call is dead
    max_duration_s: float = 300.0

    @property
    def transport(self) -> str:
        return "webrtc"


class WebRTCCall(CallSource):
    """Places the call and yields both channels as PcmFrames (the ``Source`` protocol)."""

    def __init__(self, options: CallOptions) -> None:
        super().__init__()
        self.options = options
        self.clock = CallClock()
        self.info = SourceInfo(
            transport="webrtc",
            timing_evidence=WEBRTC_TIMING,
            description=f"WebRTC call to {public_url(options.url)} ({options.signaling})",
            realtime=True,
            generated=(CALLER,),
        )
        self.caller_track = PlaybackTrack(
            self.clock, on_sent=self._caller_sent, codec=lambda: sending_codec(self.pc)
        )
        self.stats = ReceiveStats()
        self._placer = Placer(AGENT, self._agent_placed, self.stats)
        self._quiet = QuietFill(AGENT)
        self._behind = Behind()  # from a second into the agent's audio (its start is held)
        self._pacer: asyncio.TimerHandle | None = None
        self.session: SignalingSession | None = None
        self.pc: RTCPeerConnection | None = None
        self.connect_ms: float | None = None
        self._receiver: asyncio.Task | None = None
        self._buffer: AudioJitterBuffer | None = None  # the receive buffer, once connected
        self._timer: asyncio.Task | None = None
        self.messages = 0
        self.message_log: list[dict[str, Any]] = []
        self.round_trips_ms: list[float] = []
        self._rtt_task: asyncio.Task | None = None
        self.rtvi = Rtvi(now_ms=lambda: self.clock.now_ms() if self.clock.origin else 0.0)
        # Live, before the call's own record replaces them: the live view splits each reply's
        # latency as it is printed.
        self.info.details["rtvi"] = {"events": self.rtvi.events}
        self.info.details["round_trips_ms"] = self.round_trips_ms

    # -- set-up ------------------------------------------------------------------------------

    async def connect(self) -> None:
        """Signal, connect ICE/DTLS and start receiving; CallSetupError on any failure."""
        loop = asyncio.get_running_loop()
        self.ended = loop.create_future()
        if self.options.loopback_only:
            use_loopback_only()
        self.pc = RTCPeerConnection(rtc_configuration(self.options.ice_servers))
        transceiver = self.pc.addTransceiver(self.caller_track, direction="sendrecv")
        # A lost packet costs only itself, not the rest of the call's placement (jitter.py).
        self._buffer = tolerate_loss(transceiver.receiver, prefetch=0, hold_ms=HOLD_MS)
        self.info.details["loss_tolerant_jitter_buffer"] = self._buffer is not None
        self.info.details["reorder_wait_ms"] = 0.0 if self._buffer is None else self._buffer.hold_ms
        # A data channel, as pipecat's own client opens one: agents can report their resolved
        # outcome on it ({"type": "outcome", ...}) for the fixture's outcome dimensions.
        channel = self.pc.createDataChannel("turnscope")
        self._watch_channel(channel)

        @channel.on("open")
        def on_open() -> None:
            # What pipecat's own clients say first; an agent without RTVI ignores it.
            self.rtvi.start(channel.send)

        connected = loop.create_future()

        @self.pc.on("datachannel")
        def on_datachannel(channel) -> None:  # type: ignore[no-untyped-def]
            self._watch_channel(channel)

        @self.pc.on("track")
        def on_track(track: MediaStreamTrack) -> None:
            if track.kind == "audio" and self._receiver is None:
                self._receiver = asyncio.ensure_future(self._receive(track))

        @self.pc.on("connectionstatechange")
        async def on_state() -> None:
            state = self.pc.connectionState if self.pc else "closed"
            if state == "connected" and not connected.done():
                connected.set_result(state)
            elif state in ("failed", "closed"):
                if not connected.done():
                    connected.set_result(state)  # a result, not an exception: set-up may be over
                elif not self._closed:
                    self._finish(f"the connection {state} before the caller hung up",
                                 degraded=True, kind=CallEnd.CONNECTION_LOST)  # fmt: skip

        t0 = time.monotonic()
        shown = public_url(self.options.url)
        try:
            self.session = await negotiate(
                self.pc,
                self.options.url,
                mode=self.options.signaling,
                headers=self.options.headers,
                timeout=self.options.connect_timeout_s,
            )
            state = await asyncio.wait_for(connected, self.options.connect_timeout_s)
            if state != "connected":
                raise CallSetupError(
                    f"the ICE/DTLS connection to {shown} {state}", SetupFailure.ICE_FAILED
                )
        except (asyncio.TimeoutError, TimeoutError):
            await self._close_pc()
            raise CallSetupError(
                f"no ICE connection to {shown} within "
                f"{self.options.connect_timeout_s:.0f} s (no usable candidate pair)",
                SetupFailure.TIMEOUT,
            ) from None
        except (CallSetupError, asyncio.CancelledError):
            await self._close_pc()
            raise
        self.connect_ms = (time.monotonic() - t0) * 1000
        if self.session.foreign_session:
            self.info.warn(
                SourceNote.FOREIGN_SESSION,
                "the WHIP endpoint put its session on another origin: the hang-up DELETE is not "
                "sent there (it would carry your headers); the agent ends the session when the "
                "media stops",
            )
        self.clock.start()
        self._pacer = loop.call_later(PAUSE_PACE_S, self._hear_pause)
        self._timer = asyncio.ensure_future(self._max_duration(self.options.max_duration_s))
        self._rtt_task = asyncio.ensure_future(self._watch_round_trip())

    async def _watch_round_trip(self) -> None:
        """The round trip RTCP measures, every 2 s (the latency breakdown's one-way estimate)."""
        while self.pc is not None:
            await asyncio.sleep(2.0)
            with contextlib.suppress(Exception):
                for s in (await self.pc.getStats()).values():
                    rtt = getattr(s, "roundTripTime", None)
                    if s.type == "remote-inbound-rtp" and isinstance(rtt, (int, float)):
                        self.round_trips_ms.append(round(rtt * 1000, 2))

    def _watch_channel(self, channel) -> None:  # type: ignore[no-untyped-def]
        @channel.on("message")
        def on_message(message: str | bytes) -> None:
            # An exception here would reach aiortc's SCTP transport and end the call: whatever
            # one message holds, it is counted and the channel goes on.
            try:
                self._on_message(channel.label, message)
            except Exception as exc:
                self.rtvi.refuse(f"turnscope failed on it ({type(exc).__name__})")

    def _on_message(self, label: str, message: str | bytes) -> None:
        self.messages += 1
        text = message.decode("utf-8", "replace") if isinstance(message, bytes) else message
        if len(self.message_log) < MAX_LOGGED_MESSAGES:
            self.message_log.append(
                {
                    "at_ms": round(self.clock.now_ms(), 1)
                    if self.clock.origin is not None
                    else None,
                    "channel": label,
                    "text": text[:2000],
                }
            )
        try:
            data = loads(text)
        except ParseError as exc:
            if exc.problem is not ParseProblem.INVALID:  # not JSON at all is a plain ping
                self.rtvi.refuse(exc.problem.value)
            return
        if isinstance(data, dict) and data.get("label") == "rtvi-ai":
            if self.clock.origin is not None:
                self.rtvi.heard(data, self.clock.now_ms())
        elif isinstance(data, dict) and data.get("type") == "outcome":
            outcome = data.get("outcome", {k: v for k, v in data.items() if k != "type"})
            self.info.details["reported_outcome"] = outcome

    # -- media --------------------------------------------------------------------------------

    def _caller_sent(self, pts: int, pcm: np.ndarray, at: float) -> None:
        if not self._closed:
            self._emit(PcmFrame(CALLER, pts, pcm.copy(), received_at=at))

    def _agent_placed(self, frame: PcmFrame) -> None:
        self._quiet.placed(frame)
        self._emit_agent(frame)

    def _emit_agent(self, frame: PcmFrame) -> None:
        first = self.stats.first_frame_ms  # (after the call's end ``_behind`` is stopped)
        if first is not None and frame.start_ms > first + 2 * ANCHOR_WINDOW_MS:
            self._behind.had(frame, self.clock.now_ms(), PLAYOUT_MS)
        self._emit(frame)

    def _hear_pause(self) -> None:
        """The agent's pause, heard while it sends nothing (webrtc/quiet.py); packets after a
        hole handed on once they waited for it (jitter.py), but not by a tick that ran late."""
        loop = asyncio.get_running_loop()
        late = self._pacer is not None and loop.time() - self._pacer.when() > TICK_LATE_S
        self._pacer = loop.call_later(PAUSE_PACE_S, self._hear_pause)
        buffer = self._buffer
        if buffer is not None and buffer.last_packet_at is not None:
            if not late:  # (a packet's own arrival hands on what is due: after those read)
                buffer.release()
            now = self.clock.now_ms()
            since = now - self.clock.to_ms(buffer.last_packet_at)
            frame = self._quiet.tick(self._placer, buffer.holes, now, since)
            if frame is not None:
                self._emit_agent(dataclasses.replace(frame, received_at=time.monotonic()))

    async def _receive(self, track: MediaStreamTrack) -> None:
        end = await receive_track(track, self.clock, self._placer, playout_ms=PLAYOUT_MS,
                                  media_timeout_s=self.options.media_timeout_s)  # fmt: skip
        if end == "timeout":
            self._finish(
                f"no audio from the agent for {self.options.media_timeout_s:.0f} s",
                degraded=True,
                kind=CallEnd.AGENT_SILENT,
            )
        elif not self._closed:
            self._agent_hung_up("its audio track ended")

    async def _close_transport(self) -> None:
        """WHIP DELETE, close the peer connection."""
        await self._close_pc()

    async def _close_pc(self) -> None:
        self.rtvi.stop()
        if self._rtt_task is not None:
            self._rtt_task.cancel()
        if self._timer is not None:
            self._timer.cancel()
        if self._pacer is not None:
            self._pacer.cancel()
        if self.pc is not None:
            await self._last_stats()  # before the close, whichever comes first
            if self.session is not None:
                await self.session.hangup(self.options.headers)
            await self.pc.close()
        if self._receiver is not None:
            self._receiver.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._receiver

    async def _last_stats(self) -> None:
        # Read once, when the frames run out or the connection closes: the sequence numbers'
        # count of lost packets tells loss from DTX in _describe.
        if self.pc is not None and "rtp_stats" not in self.info.details:
            with contextlib.suppress(Exception):
                self.info.details["rtp_stats"] = await asyncio.wait_for(rtp_stats(self.pc), 2.0)

    def _flush(self) -> None:
        self._behind.stopped = True  # what the end flushes is not late: the call is over
        self._placer.flush(None)

    def _describe(self) -> None:
        st = self.stats
        self.info.duration_ms = self.clock.now_ms() if self.clock.origin is not None else None
        buf = self._buffer
        holes, late = (None, 0) if buf is None else (buf.holes, buf.too_late)
        gaps = split_gaps(st, self.info.details.get("rtp_stats"), holes, late)
        if gaps.lost_frames:
            lost = (
                f"{gaps.lost_frames} agent audio frames ({gaps.lost_ms:.0f} ms) were lost in "
                "transit"
            )
            if gaps.located:
                # Where each fell is judged against the turns once they are known: a loss in
                # the agent's silence leaves the evidence whole (turnscope/lost_audio.py).
                self.info.lost = list(gaps.lost)
                self.info.warn(SourceNote.AGENT_AUDIO_LOST, f"{lost}{where_lost(gaps)}")
            else:
                self.info.degrade(SourceNote.AGENT_AUDIO_LOST, f"{lost} (where, not known)")
        late = self._quiet.late
        if late:
            # Judged with the lost packets, where it fell (turnscope/lost_audio.py).
            self.info.lost = [*self.info.lost, *late]
            self.info.warn(
                SourceNote.AGENT_AUDIO_LATE,
                f"{sum(x.lost_ms for x in late):.0f} ms of agent audio came after its pause "
                f"was heard, in {len(late)} place(s) (delayed over {QUIET_MS:.0f} ms beyond "
                "the rest): not heard there",
            )
        for code, note in placement_notes(st):
            self.info.warn(code, note)
        if st.frames == 0:
            self.info.degrade(SourceNote.NO_AGENT_AUDIO, "no audio was received from the agent")
        if self.rtvi.refused:
            self.info.warn(
                SourceNote.REFUSED_MESSAGES,
                f"the agent sent {sum(self.rtvi.refused.values())} data-channel message(s) "
                f"turnscope refused to read: {tally.summary(self.rtvi.refused)}",
            )
        lag = self.caller_track.max_lag_ms
        late = sent_too_late(lag)
        if late is not None:
            self.info.degrade(SourceNote.CALLER_AUDIO_LATE, late)
        self.info.details.update(
            {
                "url": public_url(self.options.url),
                "signaling": self.options.signaling,
                # the agent's id for this call (SmallWebRTC's pc_id): its spans carry it as
                # their conversation.id, so --otlp keeps this call's and no other's
                "session_id": self.session.pc_id if self.session else None,
                "header_names": sorted(self.options.headers),  # values are secrets: never written
                "ice_servers": [public_url(u) for u in self.options.ice_servers],
                "loopback_only": self.options.loopback_only,
                "connect_ms": None if self.connect_ms is None else round(self.connect_ms, 1),
                "caller_max_send_lag_ms": round(lag, 1),
                "caller_late_frames": self.caller_track.late_frames,
                # When the harness itself ran late (call ms, ms late), as on a phone line.
                "caller_late_at": self.caller_track.late_at[:MAX_LATE_REPORTED],
                "first_agent_frame_ms": None
                if st.first_frame_ms is None
                else round(st.first_frame_ms, 1),
                # The stream was placed this much before its first frame was read (the loop
                # read that one late: webrtc/receiver.py).
                "agent_anchor_fix_ms": st.anchor_fix_ms,
                "agent_frames": st.frames,
                "agent_lost_frames": gaps.lost_frames,
                "agent_lost_ms": round(gaps.lost_ms, 1),
                "agent_too_late_frames": gaps.too_late,  # of the lost: came after their place
                # Audio the agent never sent (DTX in its pauses): silence, not a fault.
                "agent_unsent_ms": round(gaps.unsent_ms, 1),
                # Of the agent's pauses, heard as silence while it sent nothing (webrtc/quiet.py).
                "agent_pause_heard_ms": round(self._quiet.given_ms, 1),
                # The agent channel's worst lag behind the call (from a second into its audio):
                # when the pipeline had each moment of it against when it arrived (or would).
                "agent_most_behind_ms": round(self._behind.worst_ms, 1),
                "agent_gaps": st.gaps,
                "agent_loss_by_sequence": gaps.known,  # else every gap was counted lost
                "agent_loss_located": gaps.located,  # every lost packet placed: agent_lost_at
                # Where on the call clock: each stretch of silence placed for lost packets.
                "agent_lost_at": [dataclasses.asdict(x) for x in gaps.lost[:MAX_LOST_REPORTED]],
                "agent_rate": st.sample_rate,
                "agent_channels": st.channels,
                "delay_reanchors": st.late_reanchors,
                "agent_catch_ups": st.catch_ups,  # placed late, then its silence dropped
                "end_reason": self.end_reason,
                "signaling_trace": self.session.trace if self.session else [],
                "data_channel_messages": self.messages,
                "rtvi": self.rtvi.record(),
                "round_trips_ms": self.round_trips_ms,
                "data_channel_log": self.message_log,
            }
        )
