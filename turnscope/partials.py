"""Partial transcripts of the agent's running utterance, for a caller that reacts to the agent's
words while it still speaks (a scenario's ``barge_in_on`` / ``backchannel_on``).

A sink, added only for such a scenario. It keeps the agent channel's last seconds of audio and,
while the caller waits for a phrase and the agent's utterance is open, decodes the utterance so
far (its last ``asr.partial.MAX_AUDIO_MS``) every ``EVERY_MS`` of the agent's audio on the
process's ASR worker (``Batcher.partial``: after any finished utterance waiting, so live turns
keep their latency, and with every other call's partials in one batch; the audio is taken when
the worker takes the request, so a wait never decodes stale audio). Each result goes to
``caller.partial``; never into turns or the transcript (partials are not evidence: finals are).
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from turnscope.actors.caller.phrase import Partial
from turnscope.asr.batching import batcher
from turnscope.asr.events import EndOfTurn, SpeechEvent, SpeechStart, SpeechStop
from turnscope.asr.partial import MAX_AUDIO_MS, PartialRequest, PartialText
from turnscope.asr.settings import AsrSettings
from turnscope.capture.frames import AGENT, SAMPLE_RATE, PcmFrame, samples_to_ms, to_float32
from turnscope.pipeline import Sink
from turnscope.scoring.stats import median

# A new partial once the agent has said this much more: a phrase is found at most this long
# (plus a decode, ~150-250 ms on tiny.en) after the audio holding it arrived.
EVERY_MS = 300


@dataclass
class PartialStats:
    """What the partials cost and how late they came (benchmarks/partials.py)."""

    decoded: int = 0
    delays_ms: list[float] = field(default_factory=list)  # audio end -> at the caller
    waits_ms: list[float] = field(default_factory=list)  # due -> taken by the worker

    def to_dict(self) -> dict[str, Any]:
        delay, wait = median(self.delays_ms), median(self.waits_ms)
        return {
            "decoded": self.decoded,
            "delay_ms_median": None if delay is None else round(delay, 1),
            "delay_ms_max": round(max(self.delays_ms), 1) if self.delays_ms else None,
            "wait_ms_median": None if wait is None else round(wait, 1),
        }


class AgentPartials(Sink):
    """Feeds ``caller.partial`` with partial transcripts while ``caller.wants_partials()``."""

    def __init__(self, caller: Any, asr: AsrSettings, clock: Any, every_ms: int = EVERY_MS):
        self.caller = caller
        self.asr = asr
        self.clock = clock  # the call clock: when a partial reached the caller
        self.every_ms = every_ms
        self.stats = PartialStats()
        self._frames: deque[PcmFrame] = deque()
        self._end = 0  # samples: the end of the agent audio so far
        self._start_ms: float | None = None  # the open utterance's start
        self._voiced_until_ms = 0.0  # the end of its latest voiced stretch (inf while voiced)
        self._upto_ms = 0.0  # the end of the audio the latest partial decoded
        self._in_flight = False
        self._asked = (0.0, 0.0)  # the requested utterance's start, when the worker took it

    def on_frame(self, frame: PcmFrame) -> None:
        if frame.channel != AGENT:
            return
        self._frames.append(frame)
        self._end = max(self._end, frame.end)
        keep_from = self._end - (MAX_AUDIO_MS + self.asr.pad_ms) * SAMPLE_RATE // 1000
        while self._frames and self._frames[0].end < keep_from:
            self._frames.popleft()
        self._maybe_decode()

    def on_event(self, event: SpeechEvent) -> None:
        if event.channel != AGENT:
            return
        if isinstance(event, SpeechStart):
            if event.first_in_utterance:
                self._start_ms = self._upto_ms = event.at_ms
            self._voiced_until_ms = float("inf")
        elif isinstance(event, SpeechStop):
            self._voiced_until_ms = event.at_ms
        elif isinstance(event, EndOfTurn):
            self._start_ms = None

    def _maybe_decode(self) -> None:
        if self._start_ms is None or self._in_flight or not self.caller.wants_partials():
            return
        now_ms = samples_to_ms(self._end)
        # Due: enough new audio, and the agent spoke in it (a pause decodes nothing new).
        if now_ms - self._upto_ms < self.every_ms or self._voiced_until_ms <= self._upto_ms:
            return
        self._in_flight = True
        due_ms = self.clock.now_ms()
        future = batcher().partial(self._request, self.asr)
        future.add_done_callback(lambda f: self._decoded(f, due_ms))

    def _request(self) -> PartialRequest | None:
        """The utterance so far, as the worker takes it (None: no longer wanted)."""
        if self._start_ms is None or not self.caller.wants_partials():
            return None
        now_ms = samples_to_ms(self._end)
        from_ms = max(self._start_ms - self.asr.pad_ms, now_ms - MAX_AUDIO_MS)
        self._upto_ms = now_ms
        self._asked = (self._start_ms, self.clock.now_ms())
        return PartialRequest(self._audio(round(from_ms * SAMPLE_RATE / 1000), self._end),
                              from_ms, now_ms)  # fmt: skip

    def _audio(self, first: int, end: int) -> np.ndarray:
        """The agent's audio from sample ``first`` to ``end`` (silence where none came)."""
        out = np.zeros(max(0, end - first), np.float32)
        for f in self._frames:
            a, b = max(f.start, first), min(f.end, end)
            if a < b:
                out[a - first : b - first] = to_float32(f.pcm[a - f.start : b - f.start])
        return out

    def _decoded(self, future: asyncio.Future[PartialText], due_ms: float) -> None:
        self._in_flight = False
        if future.cancelled() or future.exception() is not None:
            return  # not wanted any more, or a dead worker: the next final transcription says
        p = future.result()
        start_ms, taken_ms = self._asked
        heard_ms = self.clock.now_ms()
        self.stats.decoded += 1
        self.stats.delays_ms.append(heard_ms - p.upto_ms)
        self.stats.waits_ms.append(taken_ms - due_ms)
        words = tuple((w.text, w.start_ms, w.end_ms) for w in p.words)
        self.caller.partial(Partial(start_ms, p.upto_ms, p.text, words, heard_ms))
