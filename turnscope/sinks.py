"""Pipeline sinks that every run uses: the channel recorder, the event log, the verifier."""

from __future__ import annotations

import contextlib
import wave
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from turnscope.actors.caller.into_agent import warn_into_no_speech
from turnscope.actors.caller.own_line import warn_own_line, warn_unheard
from turnscope.asr.assembly import Heard
from turnscope.asr.events import (
    EndOfTurn,
    SpeechEvent,
    SpeechStart,
    SpeechStop,
    StartMoved,
    StreamGap,
)
from turnscope.asr.settings import Settings
from turnscope.capture.frames import AGENT, CHANNELS, SAMPLE_RATE, PcmFrame
from turnscope.capture.source import SourceInfo
from turnscope.errors import OutputError
from turnscope.pipeline import PipelineResult, Sink, TurnUpdate
from turnscope.scoring.contract import Contract
from turnscope.scoring.outcome import verify


class ChannelRecorder(Sink):
    """Writes each channel to ``DIR/<channel>.wav`` (16 kHz, 16-bit) as frames arrive.

    The stdlib wave writer patches the header after every write, so whatever was captured is
    a readable file even if the process dies mid-call. Gaps are written as silence so both
    files stay aligned on the call clock. When the disk will not take more (or the file goes
    away), recording stops, ``failure`` says so with how much was kept, and ``on_failure`` is
    called (the run stops its source: nothing more could be kept).
    """

    def __init__(self, directory: str | Path, on_failure: Callable[[str], None] | None = None):
        self.directory = Path(directory)
        self.paths = {ch: self.directory / f"{ch}.wav" for ch in CHANNELS}
        self.on_failure = on_failure
        self.failure: str | None = None
        self._files: dict[str, wave.Wave_write] = {}
        self._written = dict.fromkeys(CHANNELS, 0)
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            for ch, path in self.paths.items():
                w = wave.open(str(path), "wb")  # noqa: SIM115 (open for the whole call)
                w.setnchannels(1)
                w.setsampwidth(2)
                w.setframerate(SAMPLE_RATE)
                self._files[ch] = w
            self._inodes = {ch: path.stat().st_ino for ch, path in self.paths.items()}
        except OSError as exc:
            self._abandon()
            raise OutputError(exc) from None

    def on_frame(self, frame: PcmFrame) -> None:
        w = self._files.get(frame.channel)
        if w is None:
            return
        pcm = frame.pcm
        done = self._written[frame.channel]
        try:
            if frame.start > done:
                w.writeframes(np.zeros(frame.start - done, dtype=np.int16).tobytes())
            elif frame.start < done:
                pcm = pcm[done - frame.start :]
            if len(pcm):
                w.writeframes(pcm.astype("<i2", copy=False).tobytes())
        except OSError as exc:
            self._fail(frame.channel, exc)
            return
        self._written[frame.channel] = max(done, frame.end)

    def _fail(self, channel: str, exc: OSError) -> None:
        path = self.paths[channel]
        kept = min(self._written.values()) / SAMPLE_RATE
        self.failure = (
            f"recording stopped at {kept:.1f} s: {OutputError(exc, path)}; the audio up to "
            "there is kept"
        )
        self._abandon()
        if self.on_failure is not None:
            self.on_failure(self.failure)

    def _abandon(self) -> None:
        """Close what can be closed without raising (the header of each file says how much it
        holds)."""
        for w in self._files.values():
            with contextlib.suppress(OSError, AttributeError):
                w.close()
        self._files.clear()

    def lost(self) -> list[str]:
        """The channel files no longer in the folder as written (the folder or the file was
        removed, or replaced, during the run): what they held is gone."""
        gone = []
        for ch, path in self.paths.items():
            try:
                same = path.stat().st_ino == self._inodes[ch]
            except OSError:
                same = False
            if not same:
                gone.append(path.name)
        return gone

    def samples(self, channel: str) -> int:
        return self._written[channel]

    def close(self) -> None:
        """Pad the shorter channel so both files have the call's length, then close."""
        longest = max(self._written.values())
        try:
            for ch, w in self._files.items():
                if self._written[ch] < longest:
                    w.writeframes(np.zeros(longest - self._written[ch], dtype=np.int16).tobytes())
                    self._written[ch] = longest
                w.close()
        except OSError as exc:
            self._fail(ch, exc)
        self._files.clear()

    def on_audio_end(self) -> None:
        self.close()  # complete now: the report's audio can be encoded while ASR finishes

    def on_finish(self, result: PipelineResult) -> None:
        self.close()


@dataclass
class EventLog(Sink):
    """Every endpointer event, as plain records (timeline markers, transcript, reports)."""

    records: list[dict[str, Any]] = field(default_factory=list)
    _gaps: dict[str, dict[str, Any]] = field(default_factory=dict)  # each channel's last gap

    def on_event(self, event: SpeechEvent) -> None:
        if isinstance(event, SpeechStart):
            self.records.append(
                {
                    "type": "speech_start",
                    "channel": event.channel,
                    "at_ms": round(event.at_ms, 1),
                    "decided_ms": round(event.decided_ms, 1),
                    "first_in_utterance": event.first_in_utterance,
                }
            )
        elif isinstance(event, StartMoved):
            self.records.append(
                {
                    "type": "start_moved",
                    "channel": event.channel,
                    "at_ms": round(event.at_ms, 1),
                    "decided_ms": round(event.decided_ms, 1),
                }
            )
        elif isinstance(event, SpeechStop):
            self.records.append(
                {
                    "type": "speech_stop",
                    "channel": event.channel,
                    "at_ms": round(event.at_ms, 1),
                    "decided_ms": round(event.decided_ms, 1),
                }
            )
        elif isinstance(event, EndOfTurn):
            u = event.utterance
            self.records.append(
                {
                    "type": "end_of_turn",
                    "channel": u.channel,
                    "utterance": u.key,
                    "start_ms": round(u.start_ms, 1),
                    "at_ms": round(u.end_ms, 1),
                    "decided_ms": round(u.decided_ms, 1),
                }
            )
        elif isinstance(event, StreamGap):
            start, end = round(event.start_ms, 1), round(event.end_ms, 1)
            last = self._gaps.get(event.channel)
            if last is not None and last["at_ms"] == start:
                # A pause heard as it goes on comes as gaps end to end (capture/webrtc/quiet.py)
                last["at_ms"] = end
                return
            gap = {"type": "gap", "channel": event.channel, "start_ms": start, "at_ms": end}
            self._gaps[event.channel] = gap
            self.records.append(gap)


class LiveVerifier(Sink):
    """Re-scores the dialogue with the verifier every time the turns change."""

    def __init__(self, contract: Contract):
        self.contract = contract
        self.latest: dict[str, Any] | None = None
        self.history: list[tuple[float, float]] = []  # (final_until_ms, scalar)

    def on_start(self, info: SourceInfo, settings: Settings) -> None:
        self.latest = None

    def on_update(self, update: TurnUpdate) -> None:
        dialogue = update.assembly.dialogue()
        if dialogue:
            self.latest = verify(dialogue, self.contract)
            self.history.append((update.final_until_ms, self.latest["result"]["scalar"]))


class CallerHears(Sink):
    """The agent's transcripts to the scripted caller, as they come (it reacts to the agent's
    words: conditions, branches, facts asked for)."""

    def __init__(self, caller: Any) -> None:
        self.caller = caller

    def on_transcribed(self, heard: Heard) -> None:
        if heard.channel == AGENT:
            self.caller.transcribed(heard.start_ms, heard.end_ms, heard.transcription.text)

    def on_finish(self, result: PipelineResult) -> None:
        """The caller's turns it never sent, and the lines it sent that made no turn with words,
        said among its findings (actors/caller/own_line); whether the agent ran ahead of the
        script, now that every agent turn is transcribed."""
        self.caller.judge_in_step()
        warn_own_line(self.caller.found, result.assembly.dialogue(), self.caller.records)
        warn_into_no_speech(self.caller.found, result.assembly.dialogue(), self.caller.records)
        warn_unheard(self.caller.found, result.assembly, self.caller.records, result.audio_ms)
