"""A stock pipecat bot for turnscope's interop tests (runs in .venv-pipecat; no turnscope import).

    .venv-pipecat/bin/python tests/interop/pipecat_bot.py --port 7860 [knobs]

What a pipecat user would write, minus the cloud services: pipecat's development runner
(`pipecat.runner.run`, `-t webrtc`, always on 127.0.0.1) serves the SmallWebRTC `POST /api/offer`;
each call is a pipeline

    transport.input() -> VADProcessor(SileroVADAnalyzer) -> UserTurnProcessor -> CannedReplies
        -> EspeakTTSService -> transport.output() -> OutputTap

run by a PipelineWorker. pipecat decides the turns (Silero VAD, a VAD start strategy, a speech
timeout stop strategy) and handles barge-ins (interruptions, on by default). Instead of STT + LLM
+ TTS, `CannedReplies` answers each caller turn, `--latency-ms` after pipecat's
UserStoppedSpeakingFrame, with a canned line that `EspeakTTSService` (a pipecat TTSService) speaks
with espeak-ng; pipecat's own interruption handling cuts it off.

Ground truth (`--truth-log FILE`, JSON lines, flushed line by line): each reply's first and last
voiced sample as really handed to aiortc, on `time.monotonic()` (the clock turnscope's call
clock starts from, shared by every process on the machine). The stamps come from the output
track itself: pipecat's RawAudioTrack hands one 10 ms chunk per `recv()` to aiortc's sender
(paced by the wall clock) and keeps the rest in a queue; the bot wraps that queue so every
chunk taken from it is stamped, and attributes chunks to replies by counting the audio each
reply puts in (replies are padded to whole 40 ms transport chunks, so the count is exact).
pipecat's BotStarted/StoppedSpeakingFrame are logged too (`bot_started_speaking`,
`bot_stopped_speaking`), for comparison: they are the output transport's own notion of speech.

Records: {"event": "reply", "index", "kind", "text", "silent", "start_monotonic",
"end_monotonic", "interrupted", "cause", "audio_ms", "played_ms", "off_pace_ms", "session"}:
start is when the reply's first (voiced) sample was handed to aiortc, end one sample period
past the last voiced sample handed over; audio_ms is the reply's voiced length, played_ms how
much of it went out, off_pace_ms the most a chunk left before or after its place on the reply's
10 ms pacing (a stall in the bot's loop, or the burst that catches up after one);
interrupted says it was cut short, cause by what ("interruption": pipecat's barge-in handling,
"disconnect": the call ended). "reply_dropped" is a reply discarded before any of it played.
"user_started_speaking", "user_stopped_speaking" (pipecat's turn decisions, as the reply logic
receives them), "interruption", "client_connected", "client_disconnected",
"bot_started_speaking", "bot_stopped_speaking", "offer_refused" and "die" carry "monotonic"; a
"config" record comes first. "session" is the peer connection's id.

Knobs (`--help`): --latency-ms (pipecat's user-stopped-speaking to the reply's first sample);
--greeting/--no-greeting (a first line when the client connects); --reply order (asks for the
order number, answers "not caught" to an answer under 0.8 s, then ships tomorrow, then goodbye);
--reply short (one sentence,
1.6 s), long (four sentences, 400 ms apart, 8.2 s), double (two replies 700 ms apart:
--double-pause-ms);
--ignore-barge-ins (interruptions off: the caller's speech does not cut the bot, and a caller turn
begun while it talks is dropped) and with it --answer-barge-ins (that turn is answered "Yes, go
ahead." once the bot has finished, after the latency); --mode normal, mute (never speaks: only the
track's idle silence), silence (every line replaced by digital silence of its length, logged as
replies with "silent": true), nonstop (talks from the connection on, one long line looped back to
back; a barge-in stops it and it resumes after the caller's turn), die-after (os._exit
--die-after-s after the first client connects), refuse (POST /api/offer answers HTTP 500);
--vad-start-secs/--vad-stop-secs/--vad-confidence/--vad-min-volume (Silero VADParams, defaults
below) and --user-speech-timeout (the stop strategy's wait, pipecat's 0.6 s); --reply-clips
FILE.json (recorded replies, below).

--reply-clips FILE.json: a JSON list of {"wav": path, "speech_start_s", "speech_end_s"} (the
clip's annotated speech extent, seconds into the file); every reply (the greeting stays
espeak-ng) plays the next clip whole, cycling, room tone and all, resampled to the output rate.
The whole clip counts as the reply's audio (start/end are its first/last sample), and the record
adds "clip" (the path), "clip_ms", "speech_start_ms" and "speech_end_ms" (the speech's offsets
inside the clip): the speech the caller hears starts at start_monotonic + speech_start_ms.

Measured against turnscope's agent turns on loopback (2026-12-01): after removing the constant
one-way delay (108-111 ms, mostly aiortc's receive jitter buffer), reply starts and ends agree to
2.6 ms median, 3.3 ms p95, 3.8 ms max (20 boundaries, 5 calls); a reply that starts within the
first second of the call is placed up to 23 ms early by the caller (its one-way delay is not yet
the steady one). BotStartedSpeakingFrame comes 1-18 ms before the first sample leaves,
BotStoppedSpeakingFrame within -4..+17 ms of the last one, and 12-46 ms before it on an
interruption (the frame in flight still plays).

Prints exactly one line to stdout, `pipecat bot ready on http://127.0.0.1:PORT/api/offer`, once
the server accepts connections; everything else (pipecat's and uvicorn's logs, the runner's
banner) goes to stderr. Runs until SIGTERM/SIGINT, which also end live calls (the runner's
server would otherwise wait for every call to end before exiting).

Offline: no STUN (no ICE servers), host candidates restricted to 127.0.0.1, onnxruntime
telemetry off before the Silero session exists, HF_HUB_OFFLINE=1, pipecat's own tracing and
metrics off (``--otlp URL`` turns tracing and metrics on: pipecat's conversation, turn and tts
spans, the bot's own end_of_turn and llm spans, exported by the OpenTelemetry SDK's
OTLPSpanExporter to URL); the runner binds 127.0.0.1 only.
"""

from __future__ import annotations

import os
import sys

# Run as a script, Python puts this folder first on sys.path, and the test-side launcher next to
# this file (tests/interop/pipecat.py) would shadow the real pipecat package.
_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _HERE]

# Before anything imports onnxruntime, huggingface or pipecat.
os.environ["ORT_DISABLE_TELEMETRY"] = "1"
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_HUB_DISABLE_TELEMETRY"] = "1"
os.environ["DO_NOT_TRACK"] = "1"
# No STUN/TURN whatever the environment says (the runner reads PIPECAT_ICE_SERVERS).
os.environ["PIPECAT_ICE_SERVERS"] = ""
# pipecat's runner calls load_dotenv(override=True) on import, which finds a .env in any folder
# above the installed pipecat (.venv-pipecat's parents: the repo, its parents) and lets it
# override the environment; the bot's environment is the launcher's alone.
os.environ["PYTHON_DOTENV_DISABLED"] = "1"
# The one line on stdout is ours; pipecat's runner prints its banner with print().
_STDOUT = sys.stdout
sys.stdout = sys.stderr

import argparse  # noqa: E402
import asyncio  # noqa: E402
import collections  # noqa: E402
import contextlib  # noqa: E402
import json  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402
import time  # noqa: E402
from collections.abc import AsyncGenerator  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import onnxruntime  # noqa: E402

onnxruntime.disable_telemetry_events()

# aioice never offers 127.0.0.1 as a host candidate and otherwise offers every interface's
# address; it looks them up through this module function when gathering, so restricting it keeps
# every candidate (and so every packet) on loopback. Same approach as turnscope's loopback-only
# calls, done here without importing turnscope.
import aioice.ice  # noqa: E402

aioice.ice.get_host_addresses = lambda use_ipv4=True, use_ipv6=True: ["127.0.0.1"]

import soxr  # noqa: E402
from fastapi import Request  # noqa: E402
from fastapi.responses import JSONResponse  # noqa: E402
from pipecat.audio.vad.silero import SileroVADAnalyzer  # noqa: E402
from pipecat.audio.vad.vad_analyzer import VADParams  # noqa: E402
from pipecat.frames.frames import (  # noqa: E402
    BotStartedSpeakingFrame,
    BotStoppedSpeakingFrame,
    Frame,
    InterruptionFrame,
    TTSAudioRawFrame,
    TTSSpeakFrame,
    UserStartedSpeakingFrame,
    UserStoppedSpeakingFrame,
)
from pipecat.pipeline.pipeline import Pipeline  # noqa: E402
from pipecat.pipeline.worker import PipelineParams, PipelineWorker  # noqa: E402
from pipecat.processors.audio.vad_processor import VADProcessor  # noqa: E402
from pipecat.processors.frame_processor import FrameDirection, FrameProcessor  # noqa: E402
from pipecat.runner import run as pipecat_runner  # noqa: E402
from pipecat.runner.types import SmallWebRTCRunnerArguments  # noqa: E402
from pipecat.services.settings import TTSSettings  # noqa: E402
from pipecat.services.tts_service import TTSService  # noqa: E402
from pipecat.transports.base_transport import TransportParams  # noqa: E402
from pipecat.transports.smallwebrtc.transport import SmallWebRTCTransport  # noqa: E402
from pipecat.turns.user_start import VADUserTurnStartStrategy  # noqa: E402
from pipecat.turns.user_stop import SpeechTimeoutUserTurnStopStrategy  # noqa: E402
from pipecat.turns.user_turn_processor import UserTurnProcessor  # noqa: E402
from pipecat.turns.user_turn_strategies import UserTurnStrategies  # noqa: E402
from pipecat.workers.runner import WorkerRunner  # noqa: E402

READY = "pipecat bot ready on http://127.0.0.1:{port}/api/offer"
OUT_RATE = 24000  # PipelineParams' default output rate; the SmallWebRTC track runs at it
IN_RATE = 16000  # Silero wants 16 kHz (PipelineParams' default input rate)
CHUNK_MS = 10  # RawAudioTrack hands aiortc 10 ms per recv()
TRANSPORT_CHUNKS = 4  # TransportParams.audio_out_10ms_chunks (default): 40 ms per write
VOICE = "en-gb"
SENTENCE_PAUSE_MS = 400
DOUBLE_PAUSE_MS = 700
# From pushing a TTSSpeakFrame to its first sample leaving the track: the frame's way through
# the TTS service and the output transport, then the wait for the track's next 10 ms tick
# (measured 4-9 ms, median 6.5). Taken off --latency-ms so the knob is what the truth log shows.
PIPELINE_MS = 6.0

GREETING = "Hello, thanks for calling. How can I help you today?"
SHORT = "Sure, I can help with that."
LONG = (
    "Let me explain how it works.",
    "First, I look up your account.",
    "Then I check your recent orders.",
    "Finally, I send you a summary by email.",
)
DOUBLE = ("Okay, let me check that for you.", "Alright, it is all done now.")
GO_AHEAD = "Yes, go ahead."
# --reply order: an order-status dialogue that asks a question a script need not foresee and
# branches on the answer (canned, no STT: an answer of at least ORDER_ANSWER_S counts as given).
ORDER_ASK = "Sure, I can check that. Can I have your order number please?"
ORDER_AGAIN = "Sorry, I did not catch that. Can I have your order number please?"
ORDER_FOUND = "Thank you. Your order ships tomorrow morning. Is there anything else?"
ORDER_BYE = "You are welcome. Goodbye."
ORDER_ANSWER_S = 0.8
# One long line without pauses, looped back to back for the whole call in --mode nonstop.
NONSTOP = " ".join(
    (
        "Our refund policy gives you thirty days to send any item back for a full refund.",
        "The item should be unused and in its original packaging, with the receipt.",
        "Once it reaches our warehouse we check it and refund the price to your card.",
    )
)

# Silero VAD settings that catch a short "wait". pipecat's defaults (VADParams: start_secs 0.2,
# confidence 0.7, min_volume 0.6) miss about half of espeak-ng's 0.37 s "wait" (en-us) and every
# faster one: the word must hold 0.2 s of 32 ms windows that are all above the confidence AND above
# min_volume, and the volume is a 0.4 s rolling loudness smoothed with weight 0.2 per window, so
# it climbs past 0.6 only near the end of a short word (when it is detected at all, ~360 ms in).
# The confidence is not what misses it (0.5 or 0.7 make no difference); the volume gate is.
# Measured with pipecat's SileroVADAnalyzer on espeak-ng "wait" in five voices/rates (0.29-0.39
# s), 40 placements each: defaults 0-22/40 (en-us 18/40); start 0.1 s + min_volume 0.3 40/40 in
# every voice, detected ~150 ms after the word starts. Confidence stays pipecat's 0.7.
VAD_START_SECS = 0.1
VAD_STOP_SECS = 0.2
VAD_CONFIDENCE = 0.7
VAD_MIN_VOLUME = 0.3


# --------------------------------------------------------------------------------------------
# Knobs


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="A stock pipecat SmallWebRTC bot with canned espeak-ng replies.",
        allow_abbrev=False,
    )
    p.add_argument("--latency-ms", type=float, default=600.0, help="user stopped -> reply audio")
    p.add_argument("--greeting", action=argparse.BooleanOptionalAction, default=True)
    p.add_argument("--reply", choices=["short", "long", "double", "order"], default="short")
    p.add_argument("--ignore-barge-ins", action="store_true", help="interruptions off")
    p.add_argument(
        "--double-pause-ms", type=float, default=DOUBLE_PAUSE_MS, help="--reply double's pause"
    )
    p.add_argument(
        "--answer-barge-ins",
        action="store_true",
        help="with --ignore-barge-ins: a caller turn spoken during a reply is answered "
        "('Yes, go ahead.') after the bot finishes",
    )
    p.add_argument(
        "--queue-barge-in-answers",
        action="store_true",
        help="with --ignore-barge-ins: a caller turn spoken during a reply is answered "
        "('Yes, go ahead.') queued straight behind that reply, with no pause between them "
        "(as pipecat's TTS queue does when the LLM answers while the bot still talks)",
    )
    p.add_argument(
        "--mode",
        choices=["normal", "mute", "silence", "nonstop", "die-after", "refuse"],
        default="normal",
    )
    p.add_argument("--die-after-s", type=float, default=5.0)
    vad = "pipecat's VADParams (the bot's defaults catch a short 'wait'; pipecat's own: "
    p.add_argument("--vad-start-secs", type=float, default=VAD_START_SECS, help=vad + "0.2)")
    p.add_argument("--vad-stop-secs", type=float, default=VAD_STOP_SECS, help=vad + "0.2)")
    p.add_argument("--vad-confidence", type=float, default=VAD_CONFIDENCE, help=vad + "0.7)")
    p.add_argument("--vad-min-volume", type=float, default=VAD_MIN_VOLUME, help=vad + "0.6)")
    p.add_argument(
        "--user-speech-timeout",
        type=float,
        default=0.6,
        help="pipecat's SpeechTimeoutUserTurnStopStrategy wait after the VAD stop (its default)",
    )
    p.add_argument(
        "--lose-every",
        type=int,
        default=0,
        help="lose every Nth RTP packet the bot sends, on the wire (its sequence number spent, "
        "as a network that drops it spends it)",
    )
    p.add_argument(
        "--swap-every",
        type=int,
        default=0,
        help="send every Nth RTP packet the bot sends after the one that follows it (neighbours "
        "swapped on the wire)",
    )
    p.add_argument(
        "--swap-behind",
        type=int,
        default=1,
        help="with --swap-every: send it after this many packets (more than 1: that many late)",
    )
    p.add_argument("--voice", default=VOICE, help="espeak-ng voice of the bot")
    p.add_argument("--truth-log", type=Path, default=None)
    p.add_argument(
        "--reply-clips",
        type=Path,
        default=None,
        help='JSON list of {"wav", "speech_start_s", "speech_end_s"}: every reply plays the '
        "next recorded clip whole (room tone kept) instead of espeak-ng",
    )
    p.add_argument(
        "--tts-delay-ms", type=float, default=0.0, help="the TTS's time to its first audio"
    )
    p.add_argument(
        "--otlp",
        default=None,
        help="export pipecat's tracing (conversation, turn and tts spans, and the bot's own "
        "end_of_turn and llm spans) with the OpenTelemetry SDK's OTLPSpanExporter to this "
        "OTLP/HTTP base URL (http://127.0.0.1:4318)",
    )
    return p


def _runner_argv(argv: list[str]) -> list[str]:
    """The runner's arguments: always the SmallWebRTC transport, always on 127.0.0.1."""
    argv = list(argv)
    for i, a in enumerate(argv):
        host = argv[i + 1] if a == "--host" and i + 1 < len(argv) else None
        if a.startswith("--host="):
            host = a.split("=", 1)[1]
        if host is not None and host != "127.0.0.1":
            raise SystemExit("pipecat_bot: the bot serves on 127.0.0.1 only")
    if any(a == "--ice-servers" or a.startswith("--ice-servers=") for a in argv):
        raise SystemExit("pipecat_bot: no ICE servers: every candidate stays on 127.0.0.1")
    if not any(a == "--host" or a.startswith("--host=") for a in argv):
        argv += ["--host", "127.0.0.1"]
    if not any(a in ("-t", "--transport") or a.startswith("--transport=") for a in argv):
        argv += ["-t", "webrtc"]
    return argv


# --------------------------------------------------------------------------------------------
# Ground-truth log


class TruthLog:
    """JSON lines, one flushed write per record (the bot may be killed at any time)."""

    def __init__(self, path: Path | None):
        self._lock = threading.Lock()
        self._f = None
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(path, "a", encoding="utf-8")  # noqa: SIM115

    def write(self, event: str, **fields: Any) -> None:
        if self._f is None:
            return
        rec = {"event": event, **fields}
        with self._lock:
            self._f.write(json.dumps(rec) + "\n")
            self._f.flush()

    def mark(self, event: str, **fields: Any) -> None:
        self.write(event, monotonic=time.monotonic(), **fields)


# --------------------------------------------------------------------------------------------
# Speech: espeak-ng, trimmed to its voiced extent, padded to whole transport chunks


@dataclass(frozen=True)
class Speech:
    text: str
    pcm: bytes  # int16 mono at OUT_RATE, a whole number of transport chunks
    voiced: int  # samples from the start of pcm to one past the last voiced sample
    clip: dict[str, Any] | None = None  # --reply-clips: the record's clip fields


def _espeak(text: str, voice: str) -> np.ndarray:
    """espeak-ng's audio for ``text`` as float64 mono at OUT_RATE."""
    proc = subprocess.run(
        ["espeak-ng", "-v", voice, "--stdout"],
        input=text.encode("utf-8"),
        capture_output=True,
        check=True,
    )
    # espeak-ng writes 16-bit mono WAV; on a pipe its RIFF lengths are bogus, so walk the
    # chunks up to "data" and take every byte after it.
    raw = proc.stdout
    if raw[:4] != b"RIFF" or raw[8:12] != b"WAVE":
        raise RuntimeError(f"espeak-ng wrote no WAV for {text!r}")
    pos, rate = 12, 22050
    while pos + 8 <= len(raw):
        cid, size = raw[pos : pos + 4], int.from_bytes(raw[pos + 4 : pos + 8], "little")
        if cid == b"fmt ":
            rate = int.from_bytes(raw[pos + 12 : pos + 16], "little")
        if cid == b"data":
            pos += 8
            break
        pos += 8 + size
    body = raw[pos:]
    pcm = np.frombuffer(body[: len(body) // 2 * 2], np.int16)
    x = pcm.astype(np.float64) / 32768.0
    return soxr.resample(x, rate, OUT_RATE, quality="HQ") if rate != OUT_RATE else x


def voiced_extent(x: np.ndarray, rate: int, floor_db: float = 40.0) -> tuple[int, int]:
    """First and one-past-last sample whose 5 ms window is within floor_db of the peak window."""
    w = max(1, round(0.005 * rate))
    xp = np.concatenate((np.zeros(w - 1), x, np.zeros(w - 1)))
    c = np.concatenate(([0.0], np.cumsum(xp * xp)))
    power = (c[w:] - c[:-w]) / w
    above = np.flatnonzero(power > power.max() * 10 ** (-floor_db / 10))
    if above.size == 0 or power.max() <= 0:
        return 0, 0
    return int(above[0]), int(above[-1]) - (w - 1) + 1


def render(sentences: tuple[str, ...] | list[str], voice: str, pause_ms: float) -> Speech:
    """The sentences spoken one after another with ``pause_ms`` of silence between them."""
    parts: list[np.ndarray] = []
    for i, s in enumerate(sentences):
        x = _espeak(s, voice)
        a, b = voiced_extent(x, OUT_RATE)
        if i:
            parts.append(np.zeros(round(pause_ms * OUT_RATE / 1000)))
        parts.append(x[a:b])
    x = np.concatenate(parts)
    voiced = x.size
    chunk = OUT_RATE * CHUNK_MS * TRANSPORT_CHUNKS // 1000
    x = np.concatenate((x, np.zeros((-x.size) % chunk)))
    pcm = (np.clip(x, -1.0, 1.0) * 32767).astype(np.int16).tobytes()
    return Speech(" ".join(sentences), pcm, voiced)


def load_reply_clips(path: Path) -> list[Speech]:
    """--reply-clips: each clip whole at OUT_RATE (room tone kept), its speech extent noted."""
    import soundfile

    def bad(why: str) -> SystemExit:
        return SystemExit(f"pipecat_bot: --reply-clips {path}: {why}")

    try:
        entries = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise bad(f"not a readable JSON file ({exc})") from None
    if not isinstance(entries, list) or not entries:
        raise bad('give a non-empty list of {"wav", "speech_start_s", "speech_end_s"}')
    speeches = []
    for i, e in enumerate(entries):
        try:
            wav, a, b = Path(e["wav"]), float(e["speech_start_s"]), float(e["speech_end_s"])
            audio, rate = soundfile.read(str(wav), dtype="float64", always_2d=True)
        except (KeyError, TypeError, ValueError, RuntimeError, OSError) as exc:
            raise bad(f"entry {i}: {exc!r}; each needs wav, speech_start_s, speech_end_s") from None
        x = audio.mean(axis=1)
        x = soxr.resample(x, rate, OUT_RATE, quality="VHQ") if rate != OUT_RATE else x
        if not 0 <= a < b <= x.size / OUT_RATE:
            raise bad(f"entry {i}: the speech extent {a}-{b} s is not inside {wav.name}")
        chunk = OUT_RATE * CHUNK_MS * TRANSPORT_CHUNKS // 1000
        voiced = x.size
        x = np.concatenate((x, np.zeros((-x.size) % chunk)))
        pcm = (np.clip(x, -1.0, 1.0) * 32767).astype(np.int16).tobytes()
        clip = {
            "clip": str(wav),
            "clip_ms": round(voiced * 1000 / OUT_RATE, 1),
            "speech_start_ms": round(a * 1000, 1),
            "speech_end_ms": round(b * 1000, 1),
        }
        speeches.append(Speech(f"Recorded clip {i}, {wav.stem}.", pcm, voiced, clip))
    return speeches


# --------------------------------------------------------------------------------------------
# Reply ledger: which reply each 10 ms chunk on the output track belongs to, and when it left


@dataclass
class Reply:
    index: int
    kind: str
    speech: Speech
    silent: bool
    chunks_total: int
    chunks_added: int = 0
    chunks_played: int = 0
    start: float | None = None  # when the reply's first chunk left the track
    voiced_pop: float | None = None  # when the latest chunk holding voiced samples left
    voiced_sent: int = 0  # voiced samples sent so far
    off_pace: float = 0.0  # the most a chunk left before or after its place on the reply's pacing
    cut: bool = False
    finished: bool = False
    done: asyncio.Event = field(default_factory=asyncio.Event)


class ReplyLedger:
    """Attributes the output track's audio to replies and stamps it as it leaves.

    pipecat's SmallWebRTC output writes 40 ms frames to its RawAudioTrack
    (`add_audio_bytes`, one call per frame, in order) and the track's `recv()` takes one 10 ms
    chunk per call off its queue for aiortc, paced by the wall clock, or sends silence when the
    queue is empty. Replies go in whole in the order they were begun, so the audio added is
    attributed by count; on an interruption pipecat drops what is still queued upstream of the
    track, and every reply begun before it is cut: it keeps the audio already on its way (the
    frame being written) and is finished once that has played.
    """

    def __init__(self, truth: TruthLog, session: str):
        self.truth = truth
        self.session = session
        self.replies: list[Reply] = []
        self._adding: collections.deque[Reply] = collections.deque()
        self._runs: collections.deque[list] = collections.deque()  # [reply | None, chunks left]
        self._bytes_per_chunk = OUT_RATE * CHUNK_MS // 1000 * 2
        self.idle = asyncio.Event()
        self.idle.set()
        self.installed = False

    # -- hooks on pipecat's output track

    def install(self, track: Any) -> None:
        """Wrap the track's chunk queue and its add_audio_bytes (pipecat 1.14 RawAudioTrack)."""
        queue = getattr(track, "_chunk_queue", None)
        add = getattr(track, "add_audio_bytes", None)
        if not isinstance(queue, collections.deque) or add is None:
            raise RuntimeError(
                "pipecat's SmallWebRTC output track changed (no _chunk_queue deque): the truth "
                "log cannot stamp audio; pin the version scripts/setup_pipecat.sh installs"
            )
        ledger = self

        class StampingQueue(collections.deque):
            def popleft(self):
                item = super().popleft()
                ledger._on_chunk_sent(time.monotonic())
                return item

        track._chunk_queue = StampingQueue(queue)

        def add_audio_bytes(audio_bytes: bytes):
            fut = add(audio_bytes)
            self._on_audio_added(len(audio_bytes) // self._bytes_per_chunk)
            return fut

        track.add_audio_bytes = add_audio_bytes
        self.installed = True

    # -- replies

    def begin(self, kind: str, speech: Speech, silent: bool) -> Reply:
        r = Reply(
            index=len(self.replies),
            kind=kind,
            speech=speech,
            silent=silent,
            chunks_total=len(speech.pcm) // self._bytes_per_chunk,
        )
        self.replies.append(r)
        self._adding.append(r)
        self.idle.clear()
        return r

    def busy(self) -> bool:
        return not self.idle.is_set()

    def on_interruption(self) -> None:
        """pipecat has dropped the queued audio: cut every reply begun so far."""
        cut = [r for r in self.replies if not r.finished]
        for r in cut:
            r.cut = True
        if cut:
            asyncio.get_running_loop().create_task(self._settle(cut))

    async def _settle(self, cut: list[Reply]) -> None:
        # The frame pipecat was writing when the interruption came still goes out (40 ms) after
        # the one on the track; once everything added has played, a cut reply is finished.
        await asyncio.sleep(0.15)
        while True:
            pending = [r for r in cut if not r.finished]
            for r in pending:
                if r.chunks_played >= r.chunks_added:
                    self._finish(r, interrupted=True, cause="interruption")
            if all(r.finished for r in cut):
                return
            await asyncio.sleep(0.05)

    def close(self) -> None:
        """The call is over: whatever is unfinished was cut off by the hang-up."""
        for r in self.replies:
            if not r.finished:
                r.cut = True
                self._finish(r, interrupted=True, cause="disconnect")

    def _on_audio_added(self, chunks: int) -> None:
        while self._adding and (
            self._adding[0].chunks_added >= self._adding[0].chunks_total
            or self._adding[0].finished
            or (self._adding[0].cut and any(not r.cut for r in self._adding))
        ):
            self._adding.popleft()
        r = self._adding[0] if self._adding else None
        if r is not None:
            r.chunks_added += chunks
        self._runs.append([r, chunks])

    def _on_chunk_sent(self, t: float) -> None:
        if not self._runs:
            return
        run = self._runs[0]
        r = run[0]
        run[1] -= 1
        if run[1] <= 0:
            self._runs.popleft()
        if r is None or r.finished:
            return
        if r.start is None:
            r.start = t
        spc = OUT_RATE * CHUNK_MS // 1000
        k = r.chunks_played
        # The track paces its chunks by the wall clock: one that leaves late is this loop's
        # stall, early a catch-up burst after one; the times logged are then not the audio's.
        r.off_pace = max(r.off_pace, abs(t - (r.start + k * CHUNK_MS / 1000)))
        if k * spc < r.speech.voiced:
            r.voiced_pop = t
            r.voiced_sent = min((k + 1) * spc, r.speech.voiced)
        r.chunks_played += 1
        if r.chunks_played >= r.chunks_total:
            self._finish(r, interrupted=False)

    def _finish(self, r: Reply, *, interrupted: bool, cause: str | None = None) -> None:
        r.finished = True
        if r.start is None:
            self.truth.write(
                "reply_dropped",
                index=r.index,
                kind=r.kind,
                text=r.speech.text,
                cause=cause,
                session=self.session,
                monotonic=time.monotonic(),
            )
        else:
            # A chunk's samples play from the moment it is handed over, one sample period
            # each: the end is one sample period past the last voiced sample sent.
            assert r.voiced_pop is not None
            played = r.voiced_sent
            spc = OUT_RATE * CHUNK_MS // 1000
            end = r.voiced_pop + (played - (played - 1) // spc * spc) / OUT_RATE
            cut = interrupted and played < r.speech.voiced
            self.truth.write(
                "reply",
                index=r.index,
                kind=r.kind,
                text=r.speech.text,
                silent=r.silent,
                start_monotonic=r.start,
                end_monotonic=end,
                interrupted=cut,
                cause=cause if cut else None,
                audio_ms=round(r.speech.voiced * 1000 / OUT_RATE, 1),
                played_ms=round(played * 1000 / OUT_RATE, 1),
                off_pace_ms=round(r.off_pace * 1000, 1),
                session=self.session,
                **(r.speech.clip or {}),
            )
        r.done.set()
        if all(x.finished for x in self.replies):
            self.idle.set()


# --------------------------------------------------------------------------------------------
# Pipeline pieces


class EspeakTTSService(TTSService):
    """A pipecat TTS service speaking with espeak-ng (rendered ahead of time, so it is instant).

    In silence mode every utterance is pure digital silence of the same length.
    """

    def __init__(self, speeches: dict[str, Speech], voice: str, silent: bool, **kwargs):
        super().__init__(
            push_start_frame=True,
            push_stop_frames=True,
            settings=TTSSettings(model=None, voice=voice, language=None),
            **kwargs,
        )
        self._speeches = speeches
        self._voice = voice
        self._silent = silent

    def can_generate_metrics(self) -> bool:
        return bool(ARGS.otlp)  # --otlp: its ttfb on its tts span, as a cloud TTS reports it

    def speech_for(self, text: str) -> Speech:
        key = text.strip()
        if key not in self._speeches:
            self._speeches[key] = render([key], self._voice, SENTENCE_PAUSE_MS)
        return self._speeches[key]

    async def run_tts(self, text: str, context_id: str) -> AsyncGenerator[Frame, None]:
        speech = self._speeches.get(text.strip())
        if speech is None:  # not one of the canned lines: synthesize it off the loop
            speech = await asyncio.to_thread(self.speech_for, text)
        if ARGS.tts_delay_ms > 0:  # a TTS's time to its first byte
            await asyncio.sleep(ARGS.tts_delay_ms / 1000)
        pcm = bytes(len(speech.pcm)) if self._silent else speech.pcm
        if ARGS.otlp:
            # --otlp: streamed as a cloud TTS streams (a first chunk, the rest a moment later,
            # well before the first has played): pipecat's tts span records its ttfb only
            # while the span is open, and a one-shot TTS ends it first (no ttfb on the span).
            first = 80 * self.sample_rate // 1000 * 2
            yield TTSAudioRawFrame(
                audio=pcm[:first], sample_rate=self.sample_rate, num_channels=1,
                context_id=context_id,
            )  # fmt: skip
            await asyncio.sleep(0.02)
            pcm = pcm[first:]
        yield TTSAudioRawFrame(
            audio=pcm, sample_rate=self.sample_rate, num_channels=1, context_id=context_id
        )


class CannedReplies(FrameProcessor):
    """Answers each caller turn, as pipecat decided it, with a canned line after a latency."""

    def __init__(self, args: argparse.Namespace, tts: EspeakTTSService, truth: TruthLog):
        super().__init__()
        self.args = args
        self.tts = tts
        self.truth = truth
        self.ledger: ReplyLedger | None = None
        self._task: asyncio.Task | None = None
        self._loop_task: asyncio.Task | None = None
        self._barged = False  # the current caller turn started while the bot was busy
        self._order_step = 0  # --reply order: where the dialogue is
        self._turn_started = 0.0
        self._turn_s = 0.0  # how long the caller's last turn was (pipecat's VAD)
        self._answer_after: asyncio.Task | None = None
        self._clips_played = 0  # --reply-clips: how many replies have taken a clip

    # -- frames

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        if isinstance(frame, UserStartedSpeakingFrame) and direction == FrameDirection.DOWNSTREAM:
            self.truth.mark("user_started_speaking", session=self._session())
            self._turn_started = time.monotonic()
            self._barged = self._busy()
            if not self.args.ignore_barge_ins:
                await self._cancel_reply()
        elif isinstance(frame, UserStoppedSpeakingFrame) and direction == FrameDirection.DOWNSTREAM:
            self.truth.mark("user_stopped_speaking", session=self._session())
            _span("end_of_turn", self._session())
            self._turn_s = time.monotonic() - self._turn_started
            await self._on_turn_end()
        elif isinstance(frame, InterruptionFrame) and direction == FrameDirection.DOWNSTREAM:
            self.truth.mark("interruption", session=self._session())
            await self._cancel_reply()
            if self._loop_task:
                await self.cancel_task(self._loop_task)
                self._loop_task = None
        await self.push_frame(frame, direction)

    # -- behaviour

    def _session(self) -> str:
        return self.ledger.session if self.ledger else ""

    def _busy(self) -> bool:
        pending = self._task is not None and not self._task.done()
        return pending or bool(self.ledger and self.ledger.busy()) or self._loop_task is not None

    async def _cancel_reply(self) -> None:
        if self._task is not None and not self._task.done():
            await self.cancel_task(self._task)
        self._task = None

    async def on_connected(self) -> None:
        mode = self.args.mode
        if mode == "nonstop":
            self._loop_task = self.create_task(self._nonstop())
        elif mode != "mute" and self.args.greeting:
            await self.say("greeting", GREETING)

    async def _on_turn_end(self) -> None:
        mode = self.args.mode
        if mode == "mute":
            return
        if mode == "nonstop":
            if self._loop_task is None:
                self._loop_task = self.create_task(self._nonstop(delay=True))
            return
        if self._barged and self.args.ignore_barge_ins:
            # The caller spoke while the bot talked on: by default pipecat's turn is dropped;
            # with --answer-barge-ins it gets its own reply once the bot has finished.
            if self.args.queue_barge_in_answers:
                await self.say("reply", GO_AHEAD)  # the ledger plays it right after this one
            elif self.args.answer_barge_ins:
                self._answer_after = self.create_task(self._answer_barge_in())
            return
        await self._cancel_reply()
        self._task = self.create_task(self._reply())

    async def _sleep_latency(self) -> None:
        # --otlp: the wait stands for an LLM's time to its first token (an "llm" span with
        # metrics.ttfb, as pipecat's traced LLM services report it)
        start = time.time_ns()
        await asyncio.sleep(max(0.0, (self.args.latency_ms - PIPELINE_MS) / 1000))
        _span("llm", self._session(), start, ttfb_s=(time.time_ns() - start) / 1e9)

    async def _reply(self) -> None:
        await self._sleep_latency()
        if CLIPS:
            clip = CLIPS[self._clips_played % len(CLIPS)]
            self._clips_played += 1
            await self.say("reply", clip.text)
        elif self.args.reply == "order":
            await self.say("reply", self._order_reply())
        elif self.args.reply == "short":
            await self.say("reply", SHORT)
        elif self.args.reply == "long":
            await self.say("reply", " ".join(LONG))
        else:
            first = await self.say("reply", DOUBLE[0])
            await first.done.wait()
            await asyncio.sleep(self.args.double_pause_ms / 1000)
            await self.say("reply", DOUBLE[1])

    def _order_reply(self) -> str:
        """The order dialogue's next line: ask for the number, branch on whether the answer
        sounded like one (long enough), then goodbye."""
        heard_s = self._turn_s
        if self._order_step == 0:
            self._order_step = 1
            return ORDER_ASK
        if self._order_step == 1:
            if heard_s < ORDER_ANSWER_S:
                return ORDER_AGAIN
            self._order_step = 2
            return ORDER_FOUND
        return ORDER_BYE

    async def _answer_barge_in(self) -> None:
        # Wait for the reply in progress (and any still to come) to finish, then pause.
        while True:
            if self._task is not None and not self._task.done():
                await asyncio.wait({self._task})
                continue
            assert self.ledger is not None
            await self.ledger.idle.wait()
            if self._task is None or self._task.done():
                break
        await self._sleep_latency()
        await self.say("reply", GO_AHEAD)

    async def _nonstop(self, delay: bool = False) -> None:
        if delay:
            await self._sleep_latency()
        while True:
            r = await self.say("reply", NONSTOP)
            # Queue the next round before this one runs out, so the speech never pauses.
            left = len(r.speech.pcm) / 2 / OUT_RATE - 1.0
            while r.start is None and not r.finished:
                await asyncio.sleep(0.02)
            if r.start is not None:
                await asyncio.sleep(max(0.0, r.start + left - time.monotonic()))

    async def say(self, kind: str, text: str) -> Reply:
        assert self.ledger is not None
        speech = self.tts.speech_for(text)
        reply = self.ledger.begin(kind, speech, silent=self.args.mode == "silence")
        await self.push_frame(TTSSpeakFrame(text, append_to_context=False))
        return reply


class OutputTap(FrameProcessor):
    """After the output transport: its BotStarted/StoppedSpeaking frames and interruptions."""

    def __init__(self, truth: TruthLog):
        super().__init__()
        self.truth = truth
        self.ledger: ReplyLedger | None = None

    async def process_frame(self, frame: Frame, direction: FrameDirection):
        await super().process_frame(frame, direction)
        session = self.ledger.session if self.ledger else ""
        if isinstance(frame, BotStartedSpeakingFrame):
            self.truth.mark("bot_started_speaking", session=session)
        elif isinstance(frame, BotStoppedSpeakingFrame):
            self.truth.mark("bot_stopped_speaking", session=session)
        elif isinstance(frame, InterruptionFrame) and self.ledger is not None:
            # The output transport has dropped its queued audio before passing this on.
            self.ledger.on_interruption()
        await self.push_frame(frame, direction)


# --------------------------------------------------------------------------------------------
# The bot


ARGS: argparse.Namespace
TRUTH: TruthLog
SPEECHES: dict[str, Speech] = {}
CLIPS: list[Speech] = []  # --reply-clips, in order
WORKERS: set[PipelineWorker] = set()
_first_connect = threading.Event()


def _prepare_speech(args: argparse.Namespace) -> None:
    v = args.voice
    for text in (GREETING, SHORT, GO_AHEAD, *DOUBLE):
        SPEECHES[text] = render([text], v, SENTENCE_PAUSE_MS)
    SPEECHES[" ".join(LONG)] = render(LONG, v, SENTENCE_PAUSE_MS)
    SPEECHES[NONSTOP] = render([NONSTOP], v, SENTENCE_PAUSE_MS)
    if getattr(args, "reply_clips", None) is not None:
        CLIPS[:] = load_reply_clips(args.reply_clips)
        SPEECHES.update({c.text: c for c in CLIPS})


def _wire_faults(pc: Any, lose: int, swap: int, behind: int) -> None:
    """Lose every ``lose``th RTP packet the audio sender sends and send every ``swap``th after
    the ``behind`` ones after it (0: none), each logged: the reference agent's own wire
    (actors/agent/wire.py, which needs aiortc only), loaded by its path since nothing of the
    project is installed here."""
    import importlib.util

    path = os.path.join(_HERE, "..", "..", "actors", "agent", "wire.py")
    spec = importlib.util.spec_from_file_location("reference_agent_wire", path)
    assert spec is not None and spec.loader is not None
    wire = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(wire)
    sender = next(t.sender for t in pc.getTransceivers() if t.kind == "audio")
    if swap:  # first: the losses count the packets as sent (wire.swap_every)
        wire.swap_every(sender, swap, lambda c: TRUTH.mark("packet_swapped", n=c), behind=behind)
    if lose:
        wire.lose_every(sender, lose, on_lost=lambda count: TRUTH.mark("packet_lost", n=count))


async def bot(runner_args: SmallWebRTCRunnerArguments):
    """pipecat's runner calls this for every new SmallWebRTC connection."""
    args = ARGS
    connection = runner_args.webrtc_connection
    session = getattr(connection, "pc_id", None) or runner_args.session_id or ""
    transport = SmallWebRTCTransport(
        webrtc_connection=connection,
        params=TransportParams(audio_in_enabled=True, audio_out_enabled=True),
    )
    vad = SileroVADAnalyzer(
        params=VADParams(
            confidence=args.vad_confidence,
            start_secs=args.vad_start_secs,
            stop_secs=args.vad_stop_secs,
            min_volume=args.vad_min_volume,
        )
    )
    turns = UserTurnProcessor(
        user_turn_strategies=UserTurnStrategies(
            # Interruptions on by default; --ignore-barge-ins turns them off the 1.x way (the
            # start strategy's enable_interruptions; PipelineParams.allow_interruptions is gone).
            start=[VADUserTurnStartStrategy(enable_interruptions=not args.ignore_barge_ins)],
            stop=[
                SpeechTimeoutUserTurnStopStrategy(
                    user_speech_timeout=args.user_speech_timeout, wait_for_transcript=False
                )
            ],
        )
    )
    tts = EspeakTTSService(SPEECHES, args.voice, silent=args.mode == "silence")
    replies = CannedReplies(args, tts, TRUTH)
    tap = OutputTap(TRUTH)
    pipeline = Pipeline(
        [
            transport.input(),
            VADProcessor(vad_analyzer=vad),
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
            audio_in_sample_rate=IN_RATE,
            audio_out_sample_rate=OUT_RATE,
            enable_metrics=bool(args.otlp),
        ),
        enable_tracing=bool(args.otlp),
        enable_turn_tracking=bool(args.otlp),
        conversation_id=session if args.otlp else None,
    )
    WORKERS.add(worker)

    @transport.event_handler("on_client_connected")
    async def on_client_connected(transport, client):
        TRUTH.mark("client_connected", session=session)
        if args.lose_every or args.swap_every:
            _wire_faults(connection.pc, args.lose_every, args.swap_every, args.swap_behind)
        ledger = ReplyLedger(TRUTH, session)
        ledger.install(transport._client._audio_output_track)
        replies.ledger = ledger
        tap.ledger = ledger
        if args.mode == "die-after" and not _first_connect.is_set():
            _first_connect.set()
            asyncio.get_running_loop().call_later(args.die_after_s, _die)
        await replies.on_connected()

    @transport.event_handler("on_client_disconnected")
    async def on_client_disconnected(transport, client):
        TRUTH.mark("client_disconnected", session=session)
        if replies.ledger is not None:
            replies.ledger.close()
        await worker.cancel()

    runner = WorkerRunner(handle_sigint=False, handle_sigterm=False)
    try:
        await runner.add_workers(worker)
        await runner.run()
    finally:
        WORKERS.discard(worker)
        if replies.ledger is not None:
            replies.ledger.close()


def _span(name: str, session: str, start_ns: int | None = None, ttfb_s: float | None = None):
    """With --otlp: one span of the bot's own (ending now), in the call's conversation."""
    if not ARGS.otlp:
        return
    from opentelemetry import trace

    span = trace.get_tracer("pipecat-bot").start_span(name, start_time=start_ns)
    span.set_attribute("conversation.id", session)
    if ttfb_s is not None:
        span.set_attribute("metrics.ttfb", ttfb_s)
    span.end()


def _setup_tracing(url: str) -> None:
    """pipecat's tracing with the OpenTelemetry SDK's own OTLP/HTTP exporter; the batch
    processor exports every 200 ms (its default 5 s would outlast a short call)."""
    os.environ.setdefault("OTEL_BSP_SCHEDULE_DELAY", "200")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from pipecat.utils.tracing.service_decorators import traced_tts
    from pipecat.utils.tracing.setup import setup_tracing

    setup_tracing("pipecat-bot", exporter=OTLPSpanExporter(endpoint=url.rstrip("/") + "/v1/traces"))
    # what @traced_tts on run_tts does at class definition (its descriptor's __set_name__)
    traced_tts(EspeakTTSService.run_tts).__set_name__(EspeakTTSService, "run_tts")


def _die() -> None:
    TRUTH.mark("die")
    os._exit(3)


def _install(app: Any, args: argparse.Namespace, port: int) -> None:
    """Ready line, ending live calls on SIGTERM/SIGINT, and --mode refuse, on the runner's app."""
    if args.mode == "refuse":

        @app.middleware("http")
        async def refuse(request: Request, call_next):
            if request.method == "POST" and request.url.path.endswith("/api/offer"):
                TRUTH.mark("offer_refused")
                return JSONResponse({"detail": "the bot refuses calls (--mode refuse)"}, 500)
            return await call_next(request)

    @contextlib.asynccontextmanager
    async def lifespan(_app):
        loop = asyncio.get_running_loop()
        # uvicorn's signal handlers are in place now; chain ours in front of them: the server's
        # graceful shutdown waits for every running bot, so end the calls first.
        for sig in (signal.SIGTERM, signal.SIGINT):
            previous = signal.getsignal(sig)

            def handler(signum, frame, previous=previous):
                loop.call_soon_threadsafe(_end_calls)
                if callable(previous):
                    previous(signum, frame)

            signal.signal(sig, handler)
        announce = loop.create_task(_announce(port))
        yield
        announce.cancel()

    app.router.lifespan_context = lifespan


def _end_calls() -> None:
    for worker in list(WORKERS):
        asyncio.get_running_loop().create_task(worker.cancel(reason="the bot is shutting down"))


async def _announce(port: int) -> None:
    """Print the ready line once the port takes connections (uvicorn binds after startup)."""
    while True:
        try:
            _r, w = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            await asyncio.sleep(0.02)
            continue
        w.close()
        break
    print(READY.format(port=port), file=_STDOUT, flush=True)


def main() -> None:
    global ARGS, TRUTH
    argv = _runner_argv(sys.argv[1:])
    ARGS, _rest = build_parser().parse_known_args(argv)
    if ARGS.queue_barge_in_answers and not ARGS.ignore_barge_ins:
        raise SystemExit("pipecat_bot: --queue-barge-in-answers needs --ignore-barge-ins")
    if ARGS.answer_barge_ins and not ARGS.ignore_barge_ins:
        raise SystemExit("pipecat_bot: --answer-barge-ins needs --ignore-barge-ins")
    port = next(
        (int(argv[i + 1]) for i, a in enumerate(argv) if a == "--port" and i + 1 < len(argv)),
        7860,
    )
    TRUTH = TruthLog(ARGS.truth_log)
    TRUTH.mark("config", **{k: str(v) for k, v in vars(ARGS).items()}, port=port)
    _prepare_speech(ARGS)
    if ARGS.otlp:
        _setup_tracing(ARGS.otlp)
    _install(pipecat_runner.app, ARGS, port)
    # Make sure nothing else listens there (the runner would fail later, less clearly).
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))
    sys.argv = [sys.argv[0], *argv]
    pipecat_runner.main(build_parser())


if __name__ == "__main__":
    main()
