"""The carriers' media-stream messages: what the carrier sends the agent (built here, for
turnscope's carrier side) and what the agent sends back (parsed here), per dialect.

One message shape (``connected``/``start``/``media``/``dtmf``/``stop`` one way, audio, ``mark``
and ``clear`` the other); a dialect only names the events and fields (../shared/contracts/
telephony.md has the facts). Both directions are here, so the reference agent's phone edge and
turnscope's carrier side read and write the same messages.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from turnscope.capture.telephony.codec import Codec, CodecName
from turnscope.jsonio import loads

DialectName = Literal["twilio", "telnyx", "plivo", "exotel"]
DIALECTS: tuple[DialectName, ...] = ("twilio", "telnyx", "plivo", "exotel")
AgentKind = Literal["media", "clear", "mark", "unknown"]
CarrierKind = Literal["connected", "start", "media", "dtmf", "mark", "stop", "unknown"]
DTMF_DIGITS = "0123456789*#"
_TELNYX_CODEC: dict[str, CodecName] = {"PCMU": "mulaw", "PCMA": "alaw"}


@dataclass(frozen=True)
class CallIds:
    """The ids a carrier gives a stream (JSON strings, as every carrier sends them)."""

    stream: str
    call: str
    account: str


@dataclass(frozen=True)
class AgentMessage:
    """One message from the agent: audio (``payload``, base64), ``clear``, or a ``mark``."""

    kind: AgentKind
    event: str
    payload: str | None = None
    name: str | None = None


@dataclass(frozen=True)
class CarrierMessage:
    """One message from the carrier, as the agent side reads it."""

    kind: CarrierKind
    event: str
    payload: str | None = None
    digit: str | None = None
    name: str | None = None
    ids: CallIds | None = None
    params: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Dialect:
    """One carrier's names for the shared message shape."""

    name: DialectName
    codec: Codec
    sequence_as_str: bool
    camel: bool  # streamSid / callSid (Twilio, Plivo) or stream_sid / call_sid
    connected: dict[str, Any] | None

    # -- carrier -> agent (turnscope's carrier side builds these) ----------------------------

    @property
    def stream_key(self) -> str:
        return {
            "twilio": "streamSid",
            "telnyx": "stream_id",
            "plivo": "streamId",
            "exotel": "stream_sid",
        }[self.name]

    def _head(self, event: str, seq: int, ids: CallIds) -> dict[str, Any]:
        key = "sequenceNumber" if self.camel else "sequence_number"
        return {
            "event": event,
            key: str(seq) if self.sequence_as_str else seq,
            self.stream_key: ids.stream,
        }

    def opening(self, ids: CallIds, params: dict[str, str]) -> list[dict[str, Any]]:
        """The messages before the first media: ``connected`` (not Plivo) and ``start``."""
        start = self._head("start", 1, ids)
        if self.name == "twilio":
            start["start"] = {
                "streamSid": ids.stream,
                "accountSid": ids.account,
                "callSid": ids.call,
                "tracks": ["inbound"],
                "customParameters": dict(params),
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000, "channels": 1},
            }
        elif self.name == "telnyx":
            encoding = "PCMA" if self.codec.name == "alaw" else "PCMU"
            start["start"] = {
                "call_control_id": ids.call,
                "account_id": ids.account,
                "from": params.get("from", ""),
                "to": params.get("to", ""),
                "custom_parameters": dict(params),
                "media_format": {"encoding": encoding, "sample_rate": 8000, "channels": 1},
            }
        elif self.name == "plivo":
            start["sequenceNumber"] = 0
            start["start"] = {
                "streamId": ids.stream,
                "callId": ids.call,
                "accountId": ids.account,
                "tracks": ["inbound"],
                "mediaFormat": {"encoding": "audio/x-mulaw", "sampleRate": 8000},
            }
            start["extra_headers"] = json.dumps(params)
        else:
            start["start"] = {
                "stream_sid": ids.stream,
                "call_sid": ids.call,
                "account_sid": ids.account,
                "from": params.get("from", ""),
                "to": params.get("to", ""),
                "custom_parameters": dict(params),
                "media_format": {
                    "encoding": "base64",
                    "sample_rate": "8000",
                    "bit_rate": "128kbps",
                },
            }
        return [self.connected, start] if self.connected is not None else [start]

    def media(self, seq: int, ids: CallIds, chunk: int, timestamp_ms: int, payload: str) -> dict:
        msg = self._head("media", seq, ids)
        chunk_v: Any = str(chunk) if self.name in ("twilio", "telnyx") else chunk
        media: dict[str, Any] = {
            "chunk": chunk_v,
            "timestamp": str(timestamp_ms),
            "payload": payload,
        }
        if self.name != "exotel":
            media = {"track": "inbound", **media}
        msg["media"] = media
        return msg

    def dtmf(self, seq: int, ids: CallIds, digit: str, duration_ms: int) -> dict[str, Any]:
        msg = self._head("dtmf", seq, ids)
        if self.name == "twilio":
            msg["dtmf"] = {"track": "inbound_track", "digit": digit}
        elif self.name == "exotel":
            msg["dtmf"] = {"duration": str(duration_ms), "digit": digit}
        else:
            msg["dtmf"] = {"digit": digit}
        return msg

    def stop(self, seq: int, ids: CallIds) -> dict[str, Any]:
        msg = self._head("stop", seq, ids)
        if self.name == "twilio":
            msg["stop"] = {"accountSid": ids.account, "callSid": ids.call}
        elif self.name == "telnyx":
            msg["stop"] = {"call_control_id": ids.call}
        elif self.name == "exotel":
            msg["stop"] = {"call_sid": ids.call, "account_sid": ids.account, "reason": "callended"}
        return msg

    def played(self, seq: int, ids: CallIds, name: str) -> dict[str, Any]:
        """The carrier's echo of the agent's mark once the audio before it has played."""
        if self.name == "plivo":
            return {**self._head("playedStream", seq, ids), "name": name}
        return {**self._head("mark", seq, ids), "mark": {"name": name}}

    def cleared(self, seq: int, ids: CallIds) -> dict[str, Any] | None:
        """What the carrier answers a clear with (Plivo only)."""
        return self._head("clearedAudio", seq, ids) if self.name == "plivo" else None

    def parse_agent(self, msg: dict[str, Any]) -> AgentMessage:
        event = str(msg.get("event", ""))
        media, clear, mark = (
            ("playAudio", "clearAudio", "checkpoint")
            if self.name == "plivo"
            else ("media", "clear", "mark")
        )
        if event == media:
            body = msg.get("media")
            payload = body.get("payload") if isinstance(body, dict) else None
            return AgentMessage(
                "media", event, payload=payload if isinstance(payload, str) else None
            )
        if event == clear:
            return AgentMessage("clear", event)
        if event == mark:
            body = msg.get("mark")
            name = (
                msg.get("name")
                if self.name == "plivo"
                else (body or {}).get("name")
                if isinstance(body, dict)
                else None
            )
            return AgentMessage("mark", event, name=None if name is None else str(name))
        return AgentMessage("unknown", event)

    # -- agent -> carrier (the reference agent's phone edge builds these) ---------------------

    def _agent_ids(self, ids: CallIds) -> dict[str, Any]:
        return {} if self.name == "telnyx" else {self.stream_key: ids.stream}

    def agent_media(self, ids: CallIds, payload: str) -> dict[str, Any]:
        if self.name == "plivo":
            media = {"contentType": "audio/x-mulaw", "sampleRate": 8000, "payload": payload}
            return {"event": "playAudio", "media": media, **self._agent_ids(ids)}
        return {"event": "media", **self._agent_ids(ids), "media": {"payload": payload}}

    def agent_clear(self, ids: CallIds) -> dict[str, Any]:
        event = "clearAudio" if self.name == "plivo" else "clear"
        return {"event": event, **self._agent_ids(ids)}

    def agent_mark(self, ids: CallIds, name: str) -> dict[str, Any]:
        if self.name == "plivo":
            return {"event": "checkpoint", **self._agent_ids(ids), "name": name}
        return {"event": "mark", **self._agent_ids(ids), "mark": {"name": name}}

    def parse_carrier(self, msg: dict[str, Any]) -> CarrierMessage:
        event = str(msg.get("event", ""))
        if event in ("connected", "stop"):
            return CarrierMessage(event, event)  # type: ignore[arg-type]
        if event == "start":
            ids, params = start_ids(msg)
            return CarrierMessage("start", event, ids=ids, params=params)
        if event == "media":
            body = msg.get("media")
            payload = body.get("payload") if isinstance(body, dict) else None
            return CarrierMessage(
                "media", event, payload=payload if isinstance(payload, str) else None
            )
        if event == "dtmf":
            body = msg.get("dtmf")
            digit = body.get("digit") if isinstance(body, dict) else None
            return CarrierMessage("dtmf", event, digit=None if digit is None else str(digit))
        if event in ("mark", "playedStream"):
            body = msg.get("mark")
            name = body.get("name") if isinstance(body, dict) else msg.get("name")
            return CarrierMessage("mark", event, name=None if name is None else str(name))
        return CarrierMessage("unknown", event)


def dialect(name: str, codec_name: CodecName | None = None) -> Dialect:
    """A dialect by name; ``codec_name`` only for Telnyx (mulaw, the default, or alaw)."""
    if name not in DIALECTS:
        raise ValueError(f"unknown dialect {name!r} (one of {', '.join(DIALECTS)})")
    line: CodecName = "pcm16" if name == "exotel" else codec_name or "mulaw"
    if name != "telnyx" and codec_name not in (None, line):
        raise ValueError(f"{name} streams are {line}, not {codec_name}")
    connected: dict[str, Any] | None = {
        "twilio": {"event": "connected", "protocol": "Call", "version": "1.0.0"},
        "telnyx": {"event": "connected", "version": "1.0.0"},
        "plivo": None,
        "exotel": {"event": "connected"},
    }[name]
    return Dialect(
        name,  # type: ignore[arg-type]
        Codec(line),
        sequence_as_str=name in ("twilio", "telnyx"),
        camel=name in ("twilio", "plivo"),
        connected=connected,
    )


def detect(msg: dict[str, Any]) -> Dialect | None:
    """The dialect of a ``start`` message (the rules pipecat's runner uses), or None."""
    start = msg.get("start")
    if not isinstance(start, dict):
        return None
    if msg.get("event") == "start" and "streamSid" in start and "callSid" in start:
        return dialect("twilio")
    if "stream_id" in msg and "call_control_id" in start:
        encoding = (start.get("media_format") or {}).get("encoding", "PCMU")
        return dialect("telnyx", _TELNYX_CODEC.get(str(encoding).upper(), "mulaw"))
    if "streamId" in start and "callId" in start:
        return dialect("plivo")
    if msg.get("event") == "start" and {"stream_sid", "call_sid", "account_sid"} <= start.keys():
        return dialect("exotel")
    return None


def start_ids(msg: dict[str, Any]) -> tuple[CallIds, dict[str, Any]]:
    """The stream, call and account ids of a ``start`` message and its custom parameters."""
    start = msg.get("start") or {}
    stream = (
        start.get("streamSid") or start.get("streamId") or start.get("stream_sid")
        or msg.get("stream_id") or ""
    )  # fmt: skip
    call = (
        start.get("callSid")
        or start.get("callId")
        or start.get("call_sid")
        or start.get("call_control_id")
        or ""
    )
    account = (
        start.get("accountSid")
        or start.get("accountId")
        or start.get("account_sid")
        or start.get("account_id")
        or ""
    )
    params = start.get("customParameters") or start.get("custom_parameters") or {}
    if not params and isinstance(msg.get("extra_headers"), str):
        try:
            params = loads(msg["extra_headers"])
        except ValueError:
            params = {}
    return CallIds(str(stream), str(call), str(account)), params if isinstance(params, dict) else {}
