"""A stock pipecat telephony bot for turnscope's interop tests (runs in .venv-pipecat; no
turnscope import).

    .venv-pipecat/bin/python tests/interop/pipecat_phone_bot.py --port 7861 [knobs]

What a pipecat user writes for a phone line, minus the carrier account and the cloud services:
its own FastAPI app, served by uvicorn on 127.0.0.1 only, answers the carrier's media-stream
websocket at ``/ws``; ``parse_telephony_websocket`` reads the carrier's first two messages and
says which carrier it is (Twilio, Telnyx, Plivo or Exotel); the bot builds that carrier's
serializer by hand with ``auto_hang_up=False`` (no REST hang-up, no credentials; Exotel's has no
such switch) and runs, per call,

    transport.input() -> DTMFTap -> VADProcessor(SileroVADAnalyzer) -> UserTurnProcessor
        -> CannedReplies -> EspeakTTSService -> transport.output() -> OutputTap

on a ``FastAPIWebsocketTransport`` (audio in and out, no WAV header) with the pipeline's audio
at 8 kHz both ways (``--in-rate 16000`` has pipecat resample the caller to 16 kHz for Silero
instead). The pipeline pieces, the canned lines and the knobs are tests/interop/pipecat_bot.py's
(the SmallWebRTC bot), loaded from that file; here the speech is rendered at 8 kHz (the line's
rate: pipecat's serializers then pass it through untouched) and the ground truth is the
carrier's playout.

Ground truth (``--truth-log FILE``, JSON lines, flushed line by line): each reply's first and
one-past-last voiced sample **as the carrier plays them**, on ``time.monotonic()`` (the clock
turnscope's call clock starts from). The bot wraps the websocket's ``send_text`` and stamps
every message as it goes out; it models the carrier's playout buffer the way turnscope's
carrier side does: a media chunk plays from max(its send time, the end of the audio queued
before it), and a ``clear`` (``clearAudio`` on Plivo) sent at c drops everything that would have
played after c. pipecat cuts audio into 40 ms chunks (``audio_out_10ms_chunks`` 4) and sends
each as one media message (320 bytes of mu-law, 640 of PCM16 on Exotel); replies are padded to
whole chunks, so the chunks are attributed to replies by counting samples (a message that does
not fit is logged as ``unattributed_audio``).

Records: {"event": "reply", "index", "kind", "text", "silent", "start_monotonic",
"end_monotonic", "interrupted", "cause", "audio_ms", "played_ms", "first_sent_monotonic",
"session"}: start is when the reply's first voiced sample plays at the carrier, end one sample
period past the last voiced sample played; first_sent_monotonic is when its first chunk left;
interrupted says it was cut short, cause by what ("interruption": a clear, "disconnect": the
call ended). "reply_dropped" is a reply discarded before any of it played. "clear" (each clear
the bot sent), "dtmf" (each key the bot received, with "digit"), "user_started_speaking",
"user_stopped_speaking" (pipecat's turn decisions), "interruption", "bot_started_speaking",
"bot_stopped_speaking", "client_connected" / "client_disconnected" (with "dialect", the
detected carrier, and "call_id"), "refused" and "die" carry "monotonic"; a "config" record
comes first. "session" is the stream id the carrier gave (turnscope's ``call.ids.stream``).

Measured against turnscope's agent turns (2026-12-01, Twilio, Telnyx and Exotel, 6 calls a run,
17 reply boundaries each way, 4 runs): no one-way delay to remove (the bot's stamps and
turnscope's arrival times are the same clock, microseconds apart on loopback); starts agree to
1.4-1.8 ms median (turnscope 1.5 ms early), p95 <= 3.9 ms, max 5.8; ends to 2.8-3.2 ms median
(turnscope 3 ms late), p95 <= 7.6 ms, max 9.9. Every media message is one 40 ms chunk; pipecat
runs one chunk (~40 ms) ahead of the playout, so a clear drops 40-75 ms of queued audio, and no
chunk followed a clear. pipecat sends a clear on **every** caller turn start (VAD start with
interruptions on), talking or not. Silero at 8 kHz decides the caller started ~120-145 ms into
its speech; with --in-rate 16000 (pipecat resamples the line) ~160-185 ms.

Knobs (``--help``): pipecat_bot.py's (--latency-ms, --greeting/--no-greeting, --reply
short|long|double, --ignore-barge-ins, --answer-barge-ins, --mode, --die-after-s, --vad-*,
--user-speech-timeout, --voice, --reply-clips: recorded replies, resampled to the line's
8 kHz), where --mode refuse rejects the websocket upgrade (HTTP 403)
and die-after is os._exit --die-after-s after the first call connects (every call ends at once,
no close frame); plus --port and --in-rate (8000 or 16000: Silero takes either).

--otlp URL (pipecat_bot.py's flag, its set-up shared: ``pb._setup_tracing``) turns pipecat's
tracing and metrics on, exported by the OpenTelemetry SDK's OTLPSpanExporter to URL: pipecat's
conversation and turn spans, its traced TTS's tts span (with metrics.ttfb), the bot's own
end_of_turn and llm spans, and an stt span from ``CannedSTT``, an STT service through pipecat's
``@traced_stt`` base behaviour that hears nothing and finalizes a canned transcript
--stt-delay-ms (80) after each VAD stop (its TTFS is 0, so the turn decision waits for nothing
more; without --otlp it is not in the pipeline). A call's spans are named by the carrier's
stream sid (``conversation.id``, the ``session`` of the truth log; ``conversation_id`` of
pipecat's PipelineWorker) and call sid (``call.id`` on the conversation span): ids turnscope's
carrier side makes up per call, so a load of concurrent calls keeps each call's spans apart.

Prints exactly one line to stdout, ``pipecat phone bot ready on ws://127.0.0.1:PORT/ws``, once
the server accepts connections; pipecat's and uvicorn's logs go to stderr. Runs until
SIGTERM/SIGINT, which first cancel the live calls (uvicorn would otherwise wait for them).

Offline: the serializers never hang up through a carrier's REST API (``auto_hang_up=False``),
nothing reads a .env (the dev runner is never used; pipecat_bot.py's import of it is made with
python-dotenv disabled), onnxruntime telemetry off, HF_HUB_OFFLINE=1, pipecat's tracing off
unless --otlp names a (loopback) receiver, and the server binds 127.0.0.1 only.
"""

from __future__ import annotations

import os
import sys

# Run as a script, Python puts this folder first on sys.path, and the test-side launcher next to
# this file (tests/interop/pipecat.py) would shadow the real pipecat package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

# Before anything imports onnxruntime, huggingface or pipecat (pipecat_bot.py sets them too).
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["DO_NOT_TRACK"] = "1"
os.environ["PYTHON_DOTENV_DISABLED"] = "1"
# The one line on stdout is ours.
_STDOUT = sys.stdout
sys.stdout = sys.stderr

import argparse  # noqa: E402
import asyncio  # noqa: E402
import base64  # noqa: E402
import collections  # noqa: E402
import importlib.util  # noqa: E402
import json  # noqa: E402
import socket  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any  # noqa: E402


def _load_pipecat_bot() -> ModuleType:
    """tests/interop/pipecat_bot.py as a module (by path: this folder is off sys.path)."""
    path = os.path.join(_HERE, "pipecat_bot.py")
    spec = importlib.util.spec_from_file_location("pipecat_bot", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["pipecat_bot"] = module
    spec.loader.exec_module(module)
    return module


pb = _load_pipecat_bot()
sys.stdout = sys.stderr  # (pipecat_bot.py swaps it too; ours is _STDOUT)

import uvicorn  # noqa: E402
from fastapi import FastAPI, WebSocket  # noqa: E402
from pipecat.frames.frames import (  # noqa: E402
    Frame,
    InputDTMFFrame,
    TranscriptionFrame,
    VADUserStartedSpeakingFrame,
    VADUserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.worker import PipelineParams, PipelineWorker  # noqa: E402
from pipecat.processors.audio.vad_processor import VADProcessor  # noqa: E402
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor  # noqa: E402
from pipecat.runner.utils import parse_telephony_websocket  # noqa: E402
from pipecat.serializers.exotel import ExotelFrameSerializer  # noqa: E402
from pipecat.serializers.plivo import PlivoFrameSerializer  # noqa: E402
from pipecat.serializers.telnyx import TelnyxFrameSerializer  # noqa: E402
from pipecat.serializers.twilio import TwilioFrameSerializer  # noqa: E402
from pipecat.services.stt_service import STTService  # noqa: E402
from pipecat.transports.websocket.fastapi import (  # noqa: E402
    FastAPIWebsocketParams,
    FastAPIWebsocketTransport,
)
from pipecat.turns.user_start import VADUserTurnStartStrategy  # noqa: E402
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy  # noqa: E402
from pipecat.turns.user_turn_processor import UserTurnProcessor  # noqa: E402
from pipecat.turns.user_turn_strategies import UserTurnStrategies  # noqa: E402
from pipecat.utils.time import time_now_iso8601  # noqa: E402
from pipecat.workers.runner import WorkerRunner  # noqa: E402

READY = "pipecat phone bot ready on ws://127.0.0.1:{port}/ws"
RATE = 8000  # the line's rate, and the pipeline's output rate (the serializers pass it through)
# pipecat_bot.py renders speech at its OUT_RATE (a module global read at call time): the line's.
pb.OUT_RATE = RATE
# From pushing a TTSSpeakFrame to its first chunk leaving on the websocket (measured 2-5 ms; no
# track tick to wait for here). Taken off --latency-ms, as in pipecat_bot.py.
pb.PIPELINE_MS = 3.0
MEDIA_EVENTS = ("media", "playAudio")  # playAudio: Plivo
CLEAR_EVENTS = ("clear", "clearAudio")  # clearAudio: Plivo
# After a clear, a chunk pipecat was already writing may still go out; a cut reply is written
# up once this long has passed and everything attributed to it has played.
SETTLE_S = 0.2
# --otlp: a cloud STT's final transcript comes this long after the VAD's stop (well inside
# --user-speech-timeout, so the turn decision waits for nothing more than without an STT).
STT_DELAY_MS = 80.0
CALLER_WORDS = "(the caller's words)"  # the canned STT hears no words: it stands for the timing


def build_parser() -> argparse.ArgumentParser:
    p = pb.build_parser()
    p.description = "A stock pipecat telephony-websocket bot with canned espeak-ng replies."
    p.add_argument("--port", type=int, default=7861)
    p.add_argument(
        "--in-rate",
        type=int,
        choices=[8000, 16000],
        default=8000,
        help="the pipeline's input rate (Silero runs at 8 or 16 kHz; 8000: the line as it is)",
    )
    p.add_argument(
        "--stt-delay-ms",
        type=float,
        default=STT_DELAY_MS,
        help="with --otlp: from pipecat's VAD stop to the canned STT's final transcript (its "
        "stt span's end)",
    )
    return p


# --------------------------------------------------------------------------------------------
# The carrier's playout, modelled from the bot's side


@dataclass
class Segment:
    """Reply audio in one media message: where in the reply, when it plays at the carrier."""

    offset: int  # first sample of the reply in it
    samples: int
    start: float  # monotonic: when it starts playing at the carrier
    played: int  # samples of it that play (fewer if a clear cut it)


@dataclass
class PhoneReply:
    index: int
    kind: str
    speech: Any  # pipecat_bot.Speech at RATE
    silent: bool
    total: int  # samples of the reply's (padded) audio
    added: int = 0  # samples sent so far
    segments: list[Segment] = field(default_factory=list)
    start: float | None = None  # when its first chunk starts playing (CannedReplies reads it)
    first_sent: float | None = None
    cut: bool = False
    finished: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class CarrierLedger:
    """Stamps what the bot sends on the websocket and plays it out as the carrier does.

    The same interface as pipecat_bot.ReplyLedger (CannedReplies and OutputTap use it):
    replies are begun in the order their TTSSpeakFrames are pushed, and pipecat writes their
    audio in that order, so each media message is attributed to the oldest reply still owed
    audio. On a clear every unfinished reply is cut: what was queued after it is dropped; a
    chunk pipecat was still writing goes out after the clear and plays (the carrier has an empty
    buffer by then), and is counted to the cut reply unless a newer one has begun.
    """

    def __init__(self, truth: Any, session: str, dialect: str):
        self.truth = truth
        self.session = session
        self.dialect = dialect
        self.bytes_per_sample = 2 if dialect == "exotel" else 1  # PCM16 or G.711
        self.replies: list[PhoneReply] = []
        self._adding: collections.deque[PhoneReply] = collections.deque()
        self.tail = 0.0  # monotonic: where the audio queued at the carrier ends
        self.idle = asyncio.Event()
        self.idle.set()
        self.media = 0
        self.clears = 0

    # -- hooks

    def install(self, websocket: WebSocket) -> None:
        """Wrap the websocket's send_text: the serializers' JSON text frames go out there."""
        send = websocket.send_text

        async def send_text(data: str) -> None:
            await send(data)
            self.on_sent(data, time.monotonic())

        websocket.send_text = send_text  # type: ignore[method-assign]

    def on_sent(self, data: str, t: float) -> None:
        try:
            msg = json.loads(data)
        except ValueError:
            return
        event = msg.get("event") if isinstance(msg, dict) else None
        if event in MEDIA_EVENTS:
            payload = (msg.get("media") or {}).get("payload") or ""
            self._on_media(len(base64.b64decode(payload)) // self.bytes_per_sample, t)
        elif event in CLEAR_EVENTS:
            self._on_clear(t)

    # -- replies (CannedReplies' side)

    def begin(self, kind: str, speech: Any, silent: bool) -> PhoneReply:
        r = PhoneReply(len(self.replies), kind, speech, silent, total=len(speech.pcm) // 2)
        self.replies.append(r)
        self._adding.append(r)
        self.idle.clear()
        return r

    def busy(self) -> bool:
        return not self.idle.is_set()

    def on_interruption(self) -> None:
        """OutputTap's hook: nothing to do, the clear on the wire is what the carrier acts on."""

    def close(self) -> None:
        """The call is over: the carrier plays nothing more; whatever is unfinished is cut."""
        now = time.monotonic()
        self._cut_at(now)
        for r in self.replies:
            if not r.finished:
                self._finish(r, cause="disconnect")

    # -- the carrier's playout

    def _on_media(self, samples: int, t: float) -> None:
        self.media += 1
        start = max(t, self.tail)
        self.tail = start + samples / RATE
        left = samples
        while left > 0:
            while self._adding and (
                self._adding[0].added >= self._adding[0].total
                or self._adding[0].finished
                or (self._adding[0].cut and any(not r.cut for r in self._adding))
            ):
                self._adding.popleft()
            r = self._adding[0] if self._adding else None
            if r is None:
                self.truth.mark(
                    "unattributed_audio", ms=round(left * 1000 / RATE, 1), session=self.session
                )
                return
            n = min(left, r.total - r.added)
            if r.first_sent is None:
                r.first_sent = t
                r.start = start
            r.segments.append(Segment(r.added, n, start, n))
            r.added += n
            left -= n
            start += n / RATE
            if r.added >= r.total and not r.cut:
                self._later(start + 0.02, r)

    def _on_clear(self, c: float) -> None:
        self.clears += 1
        self.truth.write("clear", monotonic=c, session=self.session)
        self._cut_at(c)
        self.tail = min(self.tail, c)
        for r in self.replies:
            if not r.finished:
                r.cut = True
                self._later(c + SETTLE_S, r)

    def _cut_at(self, c: float) -> None:
        for r in self.replies:
            if r.finished:
                continue
            for s in r.segments:
                s.played = max(0, min(s.played, round((c - s.start) * RATE)))

    def _later(self, at: float, r: PhoneReply) -> None:
        loop = asyncio.get_running_loop()
        loop.call_later(max(0.0, at - time.monotonic()), self._settle, r)

    def _settle(self, r: PhoneReply) -> None:
        if r.finished:
            return
        if not r.cut and r.added < r.total:
            return  # more audio to come (a later call settles it)
        ends = [s.start + s.played / RATE for s in r.segments]
        last = max(ends, default=0.0)
        if last > time.monotonic():
            self._later(last + 0.02, r)
            return
        self._finish(r, cause="interruption" if r.cut else None)

    def _finish(self, r: PhoneReply, cause: str | None) -> None:
        r.finished = True
        voiced = r.speech.voiced
        start = end = None
        played = 0
        for s in r.segments:
            v = max(0, min(s.played, voiced - s.offset))
            if v <= 0:
                continue
            played += v
            start = s.start if start is None else min(start, s.start)
            end = max(end or 0.0, s.start + v / RATE)
        if start is None:
            self.truth.write(
                "reply_dropped",
                index=r.index,
                kind=r.kind,
                text=r.speech.text,
                cause=cause or "interruption",
                session=self.session,
                monotonic=time.monotonic(),
            )
        else:
            cut = played < voiced
            self.truth.write(
                "reply",
                index=r.index,
                kind=r.kind,
                text=r.speech.text,
                silent=r.silent,
                start_monotonic=start,
                end_monotonic=end,
                interrupted=cut,
                cause=cause if cut else None,
                audio_ms=round(voiced * 1000 / RATE, 1),
                played_ms=round(played * 1000 / RATE, 1),
                first_sent_monotonic=r.first_sent,
                session=self.session,
                **(r.speech.clip or {}),
            )
        r.done.set()
        if all(x.finished for x in self.replies):
            self.idle.set()


class DTMFTap(FrameProcessor):
    """Right after transport.input(): every key the caller pressed, as pipecat decoded it."""

    def __init__(self, truth: Any, session: str):
        super().__init__()
        self.truth = truth
        self.session = session

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, InputDTMFFrame):
            self.truth.mark("dtmf", digit=str(frame.button.value), session=self.session)
        await self.push_frame(frame, direction)


class CannedSTT(STTService):
    """With --otlp: an STT service through pipecat's traced base class (its ``stt`` span runs
    from the caller's speech start to the final transcript), which hears nothing and finalizes
    a canned transcript --stt-delay-ms after each VAD stop. Its TTFS is 0: the turn strategy
    adds no wait for it."""

    def __init__(self, delay_ms: float):
        super().__init__(ttfs_p99_latency=0.0)
        self._delay_s = delay_ms / 1000
        self._pending: asyncio.Task | None = None

    async def run_stt(self, audio: bytes):
        return
        yield  # an async generator that yields nothing

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, VADUserStartedSpeakingFrame):
            await self._drop_pending()
        elif isinstance(frame, VADUserStoppedSpeakingFrame):
            await self._drop_pending()
            self._pending = self.create_task(self._final())

    async def _drop_pending(self) -> None:
        if self._pending is not None and not self._pending.done():
            await self.cancel_task(self._pending)
        self._pending = None

    async def _final(self) -> None:
        await asyncio.sleep(self._delay_s)
        await self._handle_transcription(CALLER_WORDS, is_final=True)

    async def _handle_transcription(self, transcript: str, is_final: bool) -> None:
        """What pipecat's STT services mark ``@traced_stt`` (the span itself is driven by the
        frames it pushes)."""
        frame = TranscriptionFrame(transcript, "", time_now_iso8601(), finalized=is_final)
        await self.push_frame(frame)


# --------------------------------------------------------------------------------------------
# The bot


ARGS: argparse.Namespace
TRUTH: Any  # pipecat_bot.TruthLog
WORKERS: set[PipelineWorker] = set()
_first_connect = threading.Event()
app = FastAPI()


def serializer(kind: str, cd: Any) -> Any:
    """The carrier's serializer, built by hand: no REST hang-up, so no account is needed."""
    if kind == "twilio":
        return TwilioFrameSerializer(
            stream_sid=cd.stream_id,
            call_sid=cd.call_id,
            params=TwilioFrameSerializer.InputParams(auto_hang_up=False),
        )
    if kind == "telnyx":
        return TelnyxFrameSerializer(
            stream_id=cd.stream_id,
            outbound_encoding=cd.outbound_encoding or "PCMU",
            inbound_encoding="PCMU",
            call_control_id=cd.call_id,
            params=TelnyxFrameSerializer.InputParams(auto_hang_up=False),
        )
    if kind == "plivo":
        return PlivoFrameSerializer(
            stream_id=cd.stream_id,
            call_id=cd.call_id,
            params=PlivoFrameSerializer.InputParams(auto_hang_up=False),
        )
    if kind == "exotel":
        return ExotelFrameSerializer(stream_sid=cd.stream_id, call_sid=cd.call_id)
    return None


@app.websocket("/ws")
async def ws(websocket: WebSocket):
    args = ARGS
    if args.mode == "refuse":
        TRUTH.mark("refused")
        await websocket.close(code=1008)  # before accept: the upgrade is answered HTTP 403
        return
    await websocket.accept()
    try:
        kind, cd = await parse_telephony_websocket(websocket)
    except ValueError:
        return  # closed before the carrier's first messages
    session = str(cd.stream_id or "")
    ser = serializer(kind, cd)
    if ser is None:
        TRUTH.mark("unknown_carrier", dialect=kind, session=session)
        await websocket.close(code=1003)
        return
    ledger = CarrierLedger(TRUTH, session, kind)
    ledger.install(websocket)  # before the transport: its client sends through this
    transport = FastAPIWebsocketTransport(
        websocket=websocket,
        params=FastAPIWebsocketParams(
            audio_in_enabled=True,
            audio_out_enabled=True,
            add_wav_header=False,
            serializer=ser,
        ),
    )
    vad = pb.SileroVADAnalyzer(
        params=pb.VADParams(
            confidence=args.vad_confidence,
            start_secs=args.vad_start_secs,
            stop_secs=args.vad_stop_secs,
            min_volume=args.vad_min_volume,
        )
    )
    turns = UserTurnProcessor(
        user_turn_strategies=UserTurnStrategies(
            start=[VADUserTurnStartStrategy(enable_interruptions=not args.ignore_barge_ins)],
            stop=[
                SpeechTimeoutUserTurnStopStrategy(
                    user_speech_timeout=args.user_speech_timeout, wait_for_transcript=False
                )
            ],
        )
    )
    tts = pb.EspeakTTSService(pb.SPEECHES, args.voice, silent=args.mode == "silence")
    replies = pb.CannedReplies(args, tts, TRUTH)
    tap = pb.OutputTap(TRUTH)
    replies.ledger = ledger
    tap.ledger = ledger
    stt = [CannedSTT(args.stt_delay_ms)] if args.otlp else []
    pipeline = Pipeline(
        [
            transport.input(),
            DTMFTap(TRUTH, session),
            VADProcessor(vad_analyzer=vad),
            *stt,
            turns,
            replies,
            tts,
            transport.output(),
            tap,
        ]
    )
    worker = PipelineWorker(
        pipeline,
        params=PipelineParams(
            audio_in_sample_rate=args.in_rate,
            audio_out_sample_rate=RATE,
            enable_metrics=bool(args.otlp),
        ),
        # --otlp: pipecat's tracing, the call's spans named by the carrier's stream sid (the
        # conversation.id of its conversation, turn and the bot's own spans) and call sid (call.id
        # on its conversation span)
        enable_tracing=bool(args.otlp),
        enable_turn_tracking=bool(args.otlp),
        conversation_id=session if args.otlp else None,
        additional_span_attributes={"call.id": str(cd.call_id)} if args.otlp else None,
        idle_timeout_secs=None,
    )
    WORKERS.add(worker)

    @transport.event_handler("on_client_connected")
    async def on_client_connected(transport, client):
        TRUTH.mark("client_connected", dialect=kind, call_id=cd.call_id, session=session)
        if args.mode == "die-after" and not _first_connect.is_set():
            _first_connect.set()
            asyncio.get_running_loop().call_later(args.die_after_s, _die)
        await replies.on_connected()

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport, client):
        TRUTH.mark("client_disconnected", dialect=kind, session=session)
        ledger.close()
        await worker.cancel()  # pipecat does not stop the pipeline by itself

    runner = WorkerRunner(handle_sigint=False, handle_sigterm=False)
    try:
        await runner.add_workers(worker)
        await runner.run()
    finally:
        WORKERS.discard(worker)
        ledger.close()


def _setup_tracing(url: str) -> None:
    """pipecat_bot.py's tracing set-up (the SDK's OTLP/HTTP exporter to ``url``, the traced
    TTS), and the canned STT traced as ``@traced_stt`` would at class definition."""
    from pipecat.utils.tracing.service_decorators import traced_stt

    pb._setup_tracing(url)
    traced_stt(CannedSTT._handle_transcription).__set_name__(CannedSTT, "_handle_transcription")


def _die() -> None:
    TRUTH.mark("die")
    os._exit(3)


def _end_calls() -> None:
    for worker in list(WORKERS):
        asyncio.get_running_loop().create_task(worker.cancel(reason="the bot is shutting down"))


class Server(uvicorn.Server):
    """uvicorn, ending the live calls first on SIGTERM/SIGINT (its graceful shutdown waits for
    every websocket handler, and a pipecat pipeline runs until cancelled)."""

    def handle_exit(self, sig, frame) -> None:
        with_loop = getattr(self, "loop", None)
        if with_loop is not None:
            with_loop.call_soon_threadsafe(_end_calls)
        super().handle_exit(sig, frame)


async def serve(port: int) -> None:
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
        timeout_graceful_shutdown=5,
    )
    server = Server(config)
    server.loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(server.serve())
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    if server.started:
        print(READY.format(port=port), file=_STDOUT, flush=True)
    await task


def main() -> None:
    global ARGS, TRUTH
    ARGS = build_parser().parse_args()
    pb.ARGS = ARGS  # the pipeline pieces loaded from pipecat_bot.py read its module's ARGS
    if ARGS.answer_barge_ins and not ARGS.ignore_barge_ins:
        raise SystemExit("pipecat_phone_bot: --answer-barge-ins needs --ignore-barge-ins")
    TRUTH = pb.TruthLog(ARGS.truth_log)
    TRUTH.mark("config", **{k: str(v) for k, v in vars(ARGS).items()})
    pb._prepare_speech(ARGS)  # every canned line, at RATE
    if ARGS.otlp:
        _setup_tracing(ARGS.otlp)
    # Make sure nothing else listens there (uvicorn would fail later, less clearly).
    with socket.socket() as s:
        s.bind(("127.0.0.1", ARGS.port))
    asyncio.run(serve(ARGS.port))


if __name__ == "__main__":
    main()
