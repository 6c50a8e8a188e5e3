"""What the agent sends the carrier, read: audio into the playout buffer, clears, marks, and
everything wrong with it counted (plain code: the call's receive loop feeds it)."""

from __future__ import annotations

import base64
import binascii
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from turnscope.capture import tally
from turnscope.capture.source import SourceNote
from turnscope.capture.telephony.codec import LINE_RATE, NotAudio
from turnscope.capture.telephony.dialects import Dialect
from turnscope.capture.telephony.playout import Chunk, Playout
from turnscope.errors import ParseError, ParseProblem
from turnscope.jsonio import loads
from turnscope.reasons import Findings

CLEAR_STORM = 10  # this many clears within a second is a storm (the agent is misbehaving)
MAX_TRACED = 400  # agent messages kept in the trace (counts cover the rest)
BAD_CODEC_SHARE = 0.2  # of media messages not audio in the codec: the channel is not trusted


@dataclass
class AgentLog:
    """What the agent sent, counted and (the first MAX_TRACED) traced with arrival times."""

    media: int = 0
    samples: int = 0
    marks: int = 0
    unknown: dict[str, int] = field(default_factory=dict)
    not_json: int = 0
    refused: dict[str, int] = field(default_factory=dict)  # past jsonio's limits, by problem
    bad_base64: int = 0
    bad_payloads: dict[str, int] = field(default_factory=dict)
    not_audio: set[NotAudio] = field(default_factory=set)  # the kinds of bad_payloads
    first_problem_ms: dict[str, float] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)
    clears: list[dict[str, Any]] = field(default_factory=list)
    storm_at_ms: float | None = None
    marks_echoed: list[dict[str, Any]] = field(default_factory=list)
    # Each traced media entry beside its chunk: the playout may place a chunk again after it
    # was traced (a burst read after a hold-up, ``Playout._early``).
    placed: list[tuple[dict[str, Any], Chunk]] = field(default_factory=list, repr=False)

    def traced(self) -> list[dict[str, Any]]:
        """The trace, each media entry's ``plays_ms`` where its chunk finally played."""
        for entry, chunk in self.placed:
            entry["plays_ms"] = round(chunk.start / 8, 1)
        return self.trace

    def problem(self, kind: str, at_ms: float) -> None:
        self.first_problem_ms.setdefault(kind, round(at_ms, 1))

    def keep(self, entry: dict[str, Any]) -> bool:
        """Trace ``entry`` while the trace has room; whether it did."""
        if len(self.trace) < MAX_TRACED:
            self.trace.append(entry)
            return True
        return False


class Inbound:
    """The agent's messages as the carrier reads them; ``on_text`` returns the marks that are
    due at once (a clear echoes every pending one)."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.codec = dialect.codec
        self.playout = Playout()
        self.log = AgentLog()
        self.cleared = False  # a clear came in (the carrier may answer it)
        self._recent_clears: deque[float] = deque()

    def not_json(self, at_ms: float) -> None:
        self.log.not_json += 1
        self.log.problem("not_json", at_ms)

    def on_text(self, text: str, pos: int, at_ms: float, now: float) -> list[str]:
        """One text message arriving at line sample ``pos`` (``at_ms``, loop time ``now``).
        Whatever it holds, the receive loop goes on: a message turnscope fails on is counted
        (and degrades the run), never the end of the loop and of the evidence after it."""
        try:
            return self._read(text, pos, at_ms, now)
        except Exception as exc:  # one message must not end the call's capture
            tally.count(self.log.refused, f"turnscope failed on it ({type(exc).__name__})")
            self.log.problem("refused", at_ms)
            return []

    def _read(self, text: str, pos: int, at_ms: float, now: float) -> list[str]:
        try:
            data = loads(text)
        except ParseError as exc:
            if exc.problem is not ParseProblem.INVALID:
                # too deep, too large, a number that does not fit: counted, and the receive
                # loop goes on with the next message
                tally.count(self.log.refused, exc.problem.value)
                self.log.problem("refused", at_ms)
                return []
            data = None
        if not isinstance(data, dict):
            self.not_json(at_ms)
            return []
        m = self.dialect.parse_agent(data)
        if m.kind == "media":
            self._on_media(m.payload, pos, at_ms)
        elif m.kind == "clear":
            return self._on_clear(pos, at_ms, now)
        elif m.kind == "mark":
            self.log.marks += 1
            due = self.playout.mark(pos, m.name or "")
            self.log.keep({"event": "mark", "name": (m.name or "")[:200], "at_ms": round(at_ms, 1),
                           "due_ms": round(due * 1000 / LINE_RATE, 1)})  # fmt: skip
        else:
            tally.count(self.log.unknown, m.event)
            self.log.problem("unknown", at_ms)
        return []

    def _on_media(self, payload: str | None, pos: int, at_ms: float) -> None:
        log = self.log
        log.media += 1
        try:
            raw = base64.b64decode(payload or "", validate=True)
        except (binascii.Error, ValueError):
            log.bad_base64 += 1
            log.problem("bad_base64", at_ms)
            return
        found = self.codec.diagnose(raw)
        if found is not None:
            kind, problem = found
            log.not_audio.add(kind)
            log.bad_payloads[problem] = log.bad_payloads.get(problem, 0) + 1
            log.problem("bad_payload", at_ms)
            if not raw:
                return
        pcm = self.codec.decode(raw)
        chunk = self.playout.push(pos, pcm)
        log.samples += len(pcm)
        entry = {"event": "media", "at_ms": round(at_ms, 1), "ms": round(len(pcm) / 8, 1),
                 "plays_ms": round(chunk.start / 8, 1)}  # fmt: skip
        if log.keep(entry):
            log.placed.append((entry, chunk))

    def _on_clear(self, pos: int, at_ms: float, now: float) -> list[str]:
        names = self.playout.clear(pos)
        dropped = self.playout.clears[-1].dropped
        self.log.clears.append(
            {"at_ms": round(at_ms, 1), "dropped_ms": round(dropped * 1000 / LINE_RATE, 1)}
        )
        self.log.keep({"event": "clear", "at_ms": round(at_ms, 1)})
        self.cleared = True
        recent = self._recent_clears
        recent.append(now)
        while recent and now - recent[0] > 1.0:
            recent.popleft()
        if len(recent) >= CLEAR_STORM and self.log.storm_at_ms is None:
            self.log.storm_at_ms = round(at_ms, 1)
        return names

    def problems(self) -> Findings:
        """What makes the agent channel untrustworthy (degraded) and what to warn about."""
        log, p = self.log, self.playout
        found = Findings()
        at = log.first_problem_ms
        if log.not_json:
            found.degrade(
                SourceNote.NOT_JSON,
                f"the agent sent {log.not_json} message(s) that are not JSON objects "
                f"(first at {at['not_json'] / 1000:.1f} s)",
            )
        if log.refused:
            found.degrade(
                SourceNote.REFUSED_MESSAGES,
                f"the agent sent {sum(log.refused.values())} message(s) turnscope refused to "
                f"read: {tally.summary(log.refused)} (first at {at['refused'] / 1000:.1f} s)",
            )
        if log.unknown:
            found.degrade(
                SourceNote.UNKNOWN_EVENTS,
                f"the agent sent events the {self.dialect.name} protocol does not have: "
                f"{tally.summary(log.unknown)} (first at {at['unknown'] / 1000:.1f} s)",
            )
        if log.bad_base64:
            found.degrade(
                SourceNote.BAD_BASE64,
                f"{log.bad_base64} agent media message(s) had a payload that is not base64 "
                f"(first at {at['bad_base64'] / 1000:.1f} s; that audio is lost)",
            )
        bad = sum(log.bad_payloads.values())
        if bad and (bad >= BAD_CODEC_SHARE * max(1, log.media) or log.not_audio - {NotAudio.NOISE}):
            kinds = "; ".join(f"{k} x{v}" for k, v in log.bad_payloads.items())
            found.degrade(
                SourceNote.NOT_AUDIO,
                f"{bad} of {log.media} agent media payloads are not {self.codec.name} audio at "
                f"8 kHz ({kinds}; first at {at['bad_payload'] / 1000:.1f} s)",
            )
        if log.storm_at_ms is not None:
            found.degrade(
                SourceNote.CLEAR_STORM,
                f"a clear storm: the agent sent {CLEAR_STORM} or more clears within a second "
                f"(from {log.storm_at_ms / 1000:.1f} s; {len(log.clears)} in all)",
            )
        if log.media == 0:
            found.degrade(SourceNote.NO_AGENT_AUDIO, "the agent sent no audio on the websocket")
        if p.underruns:
            found.warn(
                SourceNote.AGENT_UNDERRUN,
                f"the agent's audio ran out {p.underruns} time(s) mid-speech (it sent slower "
                "than real time; the caller heard gaps)",
            )
        return found
