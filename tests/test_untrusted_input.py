"""Untrusted input parsed with limits (issue 34, Deliver 1): nesting, size, item counts and
numbers that do not fit are bad input, refused before a parser recurses into them.

Files the user gives end in one line naming the file and exit 2 (the real CLI in a
subprocess); an agent's messages on every transport that break a limit are counted and said in
one bounded line, and the receive loop goes on: the reply after them is recorded and the bundle
is whole (real calls on 127.0.0.1 with the reference agent, its messages made hostile by a
patch of its sender; the offer's answer from a small HTTP server playing a hostile agent).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.phone import PhoneSession
from turnscope.actors.agent.server import AgentServer
from turnscope.actors.agent.session import AgentSession
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.errors import ParseError, ParseProblem
from turnscope.jsonio import FILE_LIMITS, loads, read_yaml

DEEP = "[" * 200_000
BUNDLE = ("caller.wav", "agent.wav", "transcript.json", "result.json", "report.html")
MAX_LINE = 400  # what "one bounded line" means here

# -- the parser -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (DEEP, ParseProblem.TOO_DEEP),
        ('{"a":' * 100_000 + "1" + "}" * 100_000, ParseProblem.TOO_DEEP),
        ("[" + ",".join(["0"] * 300_000) + "]", ParseProblem.TOO_MANY),
        ("x" * (5 * 1024 * 1024), ParseProblem.TOO_LARGE),
        ('{"t": ' + "9" * 400 + "}", ParseProblem.BAD_NUMBER),
        ('{"t": 1e400}', ParseProblem.BAD_NUMBER),
        ('{"t": NaN}', ParseProblem.BAD_NUMBER),
        ('{"t": -Infinity}', ParseProblem.BAD_NUMBER),
        ("{not json", ParseProblem.INVALID),
    ],
)
def test_a_message_past_a_limit_is_refused_before_it_is_parsed(text, problem):
    t0 = time.perf_counter()
    with pytest.raises(ParseError) as info:
        loads(text)
    assert info.value.problem is problem
    assert isinstance(info.value, ValueError)  # json's own errors are ValueErrors too
    assert len(str(info.value)) < MAX_LINE
    assert time.perf_counter() - t0 < 2.0


def test_brackets_inside_strings_are_no_structure_and_fine_documents_pass():
    inside = json.dumps({"text": "[" * 10_000, "n": [1, 2.5, -3e10, 10**300]})
    assert loads(inside)["text"] == "[" * 10_000
    assert loads("[" * 60 + "]" * 60) is not None


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ("name: x\nscript: " + "[" * 100_000, "nested more than"),
        ("- " * 100_000 + "x\n", "nested more than"),
        (  # a billion laughs: nine levels of ten aliases each
            "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
            + "".join(
                f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 10) + "]\n"
                for i in range(8)
            ),
            "aliases expanded",
        ),
        ("a: &a [*a]\n", "inside its own anchor"),
        ("a: .nan\n", "not finite"),
    ],
)
def test_yaml_past_a_limit_is_one_line_naming_the_file(tmp_path, text, words):
    path = tmp_path / "scenario.yaml"
    path.write_text(text)
    with pytest.raises(ParseError) as info:
        read_yaml(path, what="scenario file")
    assert str(path) in str(info.value) and words in str(info.value), info.value
    assert FILE_LIMITS.depth <= 200


# -- files the user gives: the real CLI ---------------------------------------------------------


def _one_line_exit_2(run_exe, path: Path, *args: str) -> str:
    proc = run_exe(*args, timeout=120)
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert "Traceback" not in text and "RecursionError" not in text
    lines = [x for x in text.splitlines() if x.strip()]
    assert len(lines) == 1 and len(lines[0]) < MAX_LINE, text
    assert str(path) in lines[0], text
    return lines[0]


@pytest.fixture
def deep_files(tmp_path) -> dict[str, Path]:
    files = {
        "deep.json": "[" * 100_000,
        "deepobj.json": '{"kind": ' * 100_000 + "1" + "}" * 100_000,
        "number.json": '{"kind": "turnscope.scorecard.v1", "n": ' + "9" * 400 + "}",
        "inf.json": '{"kind": "turnscope.scorecard.v1", "n": -Infinity}',
        "deep.yaml": "name: x\nscript: " + "[" * 100_000,
        "laughs.yaml": "name: x\nscript:\n  - caller: &a ["
        + ", ".join(["hi"] * 10)
        + "]\n"
        + "".join(
            f"  - caller: &a{i} [" + ", ".join([f"*a{i - 1}" if i else "*a"] * 10) + "]\n"
            for i in range(8)
        ),
    }
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return {name: tmp_path / name for name in files}


@pytest.mark.parametrize(
    ("command", "name", "words"),
    [
        (["score"], "deep.json", "nested more than"),
        (["score"], "number.json", "does not fit"),
        (["gate"], "deepobj.json", "scorecard file refused"),
        (["gate"], "inf.json", "not finite"),  # NaN is its "no value" (test_faults)
        (["bench"], "deep.json", "suite file refused"),
        (["synth"], "deep.yaml", "scenario file refused"),
        (["synth"], "laughs.yaml", "aliases expanded"),
    ],
)
def test_a_file_nested_too_deep_or_with_a_bad_number_is_exit_2(
    run_exe, deep_files, tmp_path, command, name, words
):
    path = deep_files[name]
    extra = ["-o", str(tmp_path / "out")] if command == ["synth"] else []
    line = _one_line_exit_2(run_exe, path, *command, str(path), *extra)
    assert words in line, line


def test_a_deep_baseline_and_a_deep_reference_are_exit_2(run_exe, deep_files, tmp_path):
    card = ROOT / "configs" / "baselines"
    cards = sorted(card.glob("*.json"))
    assert cards, "a pinned baseline scorecard ships with turnscope"
    deep = deep_files["deepobj.json"]
    _one_line_exit_2(run_exe, deep, "gate", str(cards[0]), "--baseline", str(deep))
    out = tmp_path / "replay"
    wav = ROOT / "recordings" / "refund-call.wav"
    _one_line_exit_2(run_exe, deep, "replay", str(wav), "--reference", str(deep), "-o", str(out))
    assert not (out / "caller.wav").exists()  # refused before anything was written


# -- the agent's messages: a real phone-line call -----------------------------------------------

HELLO = """\
name: phone-hello
caller: {timeout_s: 15, reply_timeout_ms: 4000, greeting_timeout_ms: 1000, hangup_after_ms: 500}
script:
  - caller: "Hello, is anybody there?"
  - agent: "Hello, yes, I am here."
"""
HOSTILE_PHONE = [
    DEEP,  # RecursionError in json: it ended the receive loop and lost the reply after it
    '{"event": "mark", "mark": {"name": "m"}, "n": ' + "9" * 400 + "}",
    '{"event": "mark", "mark": {"name": NaN}}',
    *(json.dumps({"event": f"dance-{i}\x1b[2J", "streamSid": "x"}) for i in range(3000)),
]


class AgentThread:
    """The reference agent's server (WebRTC offer and phone-line /ws) on its own loop."""

    def __init__(self, scenario_path: Path) -> None:
        sc = load_scenario(scenario_path)
        self.server = AgentServer(AgentBehaviour.from_scenario(sc))
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        self.base = asyncio.run_coroutine_threadsafe(self.server.start(), self.loop).result(60)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self.server.stop(), self.loop).result(30)
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture
def hello(tmp_path) -> Path:
    path = tmp_path / "hello.yaml"
    path.write_text(HELLO)
    return path


def _bundle(out: Path) -> dict[str, Any]:
    for name in BUNDLE:
        assert (out / name).exists(), name
    assert (out / "voice_artifact_manifest.json").exists()
    return json.loads((out / "result.json").read_text())


def test_a_hostile_phone_agent_loses_no_reply_and_is_said_in_bounded_lines(
    hello, tmp_path, cli, monkeypatch
):
    sent = PhoneSession._send

    async def hostile(self: PhoneSession, message: dict[str, Any]) -> None:
        # Just before its reply's first audio: every hostile message, then the reply.
        if message.get("event") == "media" and not getattr(self, "_hostile", False):
            self._hostile = True  # type: ignore[attr-defined]
            assert self.ws is not None
            for text in HOSTILE_PHONE:
                await self.ws.send_str(text)
        await sent(self, message)

    monkeypatch.setattr(PhoneSession, "_send", hostile)
    agent = AgentThread(hello)
    try:
        out = tmp_path / "run"
        url = agent.base.replace("http", "ws") + "/ws"
        code, stdout, stderr = cli(
            "call", url, "--transport", "twilio", "--scenario", str(hello), "-q", "-o", str(out)
        )
    finally:
        agent.stop()
    assert code == 4, (stdout, stderr)  # the agent's channel cannot be trusted: degraded
    assert "Traceback" not in stdout + stderr and "\x1b" not in stdout + stderr
    doc = _bundle(out)
    turns = json.loads((out / "transcript.json").read_text())["turns"]
    assert any(t["speaker"] == "agent" and "here" in t["text"].lower() for t in turns), turns
    refused = next(d for d in doc["degraded"] if "refused to read" in d)
    assert "nested too deep" in refused and "not finite" in refused, refused
    unknown = next(d for d in doc["degraded"] if "does not have" in d)
    assert "3000 in all" in unknown and len(unknown) < MAX_LINE, unknown
    assert "\x1b" not in json.dumps(doc, ensure_ascii=False)
    assert all(len(d) < MAX_LINE for d in doc["degraded"] + doc["warnings"])


def test_a_phone_message_too_large_to_read_ends_the_call_with_the_evidence(
    hello, tmp_path, cli, monkeypatch
):
    """5 MiB in one message: aiohttp is not let read it whole (it once read any size); the call
    ends there, said so, and what was captured before it is kept."""
    sent = PhoneSession._send

    async def huge(self: PhoneSession, message: dict[str, Any]) -> None:
        if message.get("event") == "media" and not getattr(self, "_huge", False):
            self._huge = True  # type: ignore[attr-defined]
            assert self.ws is not None
            await self.ws.send_str('{"event": "' + "x" * (5 * 1024 * 1024) + '"}')
        await sent(self, message)

    monkeypatch.setattr(PhoneSession, "_send", huge)
    agent = AgentThread(hello)
    try:
        out = tmp_path / "run"
        url = agent.base.replace("http", "ws") + "/ws"
        code, stdout, stderr = cli(
            "call", url, "--transport", "twilio", "--scenario", str(hello), "-q", "-o", str(out)
        )
    finally:
        agent.stop()
    assert code == 4, (stdout, stderr)
    assert "Traceback" not in stdout + stderr
    doc = _bundle(out)
    assert any("over 4 MiB" in d for d in doc["degraded"]), doc["degraded"]
    assert (out / "caller.wav").stat().st_size > 10_000


# -- the agent's messages: a real WebRTC call with RTVI -----------------------------------------

HOSTILE_RTVI = [
    "[" * 60_000,  # it tore the call down and blamed the agent for hanging up
    json.dumps(
        {
            "label": "rtvi-ai",
            "type": "metrics",
            "data": {"ttfb": [{"processor": "llm", "value": 10**400}]},
        }
    ),
    '{"label": "rtvi-ai", "type": "metrics", "data": {"ttfb": [{"processor": "tts", '
    '"value": NaN}]}}',
    json.dumps(
        {
            "label": "rtvi-ai",
            "type": "metrics",
            "data": {"ttfb": [{"processor": "tts", "value": 1e308}]},
        }
    ),
    # (a few hundred: thousands on one loop with the agent's audio would delay that audio)
    *(json.dumps({"label": "rtvi-ai", "type": f"dance-{i}"}) for i in range(300)),
]


def test_a_hostile_rtvi_agent_keeps_the_call_and_the_report(hello, tmp_path, cli, monkeypatch):
    told = AgentSession._rtvi

    def hostile(channel, kind: str) -> None:  # type: ignore[no-untyped-def]
        if kind == "user-started-speaking" and channel.readyState == "open":
            for text in HOSTILE_RTVI:
                channel.send(text)
        told(channel, kind)

    monkeypatch.setattr(AgentSession, "_rtvi", staticmethod(hostile))
    agent = AgentThread(hello)
    try:
        out = tmp_path / "run"
        code, stdout, stderr = cli(
            "call", agent.base + "/api/offer", "--scenario", str(hello), "--loopback-only",
            "-q", "-o", str(out),
        )  # fmt: skip
    finally:
        agent.stop()
    assert code in (0, 1), (stdout, stderr)
    doc = _bundle(out)
    details = doc["source"]["details"]
    assert "hung up" not in str(details.get("end_reason")), details.get("end_reason")
    turns = json.loads((out / "transcript.json").read_text())["turns"]
    assert any(t["speaker"] == "agent" for t in turns), turns
    rtvi = details["rtvi"]
    assert rtvi["refused"].get("nested too deep") == 1, rtvi["refused"]
    assert sum(rtvi["refused"].values()) >= 2 and rtvi["bad_values"] >= 1, rtvi
    warning = next(w for w in doc["warnings"] if "refused to read" in w)
    assert len(warning) < MAX_LINE
    assert all(len(p) < MAX_LINE for p in rtvi["problems"]), rtvi["problems"]
    assert any("300 in all" in p for p in rtvi["problems"]), rtvi["problems"]
    for e in rtvi["events"]:
        for item in (e.get("data") or {}).get("ttfb", []):
            assert 0 <= item["value"] <= 3600, e


# -- the offer's answer -------------------------------------------------------------------------


class Answers(BaseHTTPRequestHandler):
    """A hostile SmallWebRTC endpoint: the path says what it answers."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/deep":
            body = b'{"sdp": ' + b"[" * 100_000
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        elif self.path == "/huge":  # 300 MB said, then streamed until the caller gives up
            self.send_response(200)
            self.send_header("Content-Length", str(300 * 1024 * 1024))
            self.end_headers()
            self._stream()
        else:  # no length at all: the body ends when the connection does
            self.protocol_version = "HTTP/1.0"
            self.send_response(200)
            self.end_headers()
            self._stream()

    def _stream(self) -> None:
        chunk = b" " * (1024 * 1024)
        try:
            for _ in range(300):
                self.wfile.write(chunk)
        except OSError:
            pass

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def answers():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


@pytest.mark.parametrize(
    ("path", "words"),
    [("/deep", "nested more than"), ("/huge", "KiB"), ("/unsized", "KiB")],
)
def test_an_offer_answer_too_deep_or_too_large_is_exit_4_with_a_bundle(
    answers, hello, tmp_path, cli, path, words
):
    out = tmp_path / "run"
    t0 = time.monotonic()
    code, stdout, stderr = cli(
        "call", answers + path, "--scenario", str(hello), "--loopback-only", "-q", "-o", str(out)
    )
    assert time.monotonic() - t0 < 60
    text = stdout + stderr
    assert code == 4, text
    assert "Traceback" not in text and words in text, text
    assert max(len(x) for x in text.splitlines() if x.strip()) < MAX_LINE
    doc = json.loads((out / "result.json").read_text())
    assert any(words in d for d in doc["degraded"]) or words in json.dumps(doc), doc


# -- an agent's own log -------------------------------------------------------------------------


def test_an_agent_trace_with_numbers_that_do_not_fit_keeps_the_whole_bundle(
    sample_bundle, tmp_path, cli
):
    """A 400-digit time, a NaN, an infinite LiveKit ttft and a nesting too deep: bad lines,
    said; the bundle and the report are written as without them."""
    turns = json.loads((sample_bundle / "transcript.json").read_text())["turns"]
    start = next(t["start_ms"] for t in turns if t["speaker"] == "agent")
    lines = [
        '{"monotonic": ' + "9" * 400 + ', "event": "bot-started-speaking"}',
        '{"monotonic": NaN, "event": "bot-started-speaking"}',
        '{"type": "llm_metrics", "timestamp": 5000.5, "ttft": 1e308}',
        '{"type": "tts_metrics", "timestamp": 5000.5, "ttfb": Infinity}',
        "[" * 100_000,
        json.dumps({"monotonic": 5000 + start / 1000, "event": "bot-started-speaking"}),
    ]
    trace = tmp_path / "agent.jsonl"
    trace.write_text("\n".join(lines) + "\n")
    out = tmp_path / "replay"
    code, stdout, stderr = cli(
        "replay", str(ROOT / "recordings" / "refund-call.wav"), "-q",
        "-o", str(out), "--agent-trace", str(trace),
    )  # fmt: skip
    assert code in (0, 1), (stdout, stderr)
    doc = _bundle(out)
    assert (out / "timeline.png").exists() or "timeline.png" not in json.dumps(doc)
    said = json.dumps(doc["latency_breakdown"])
    assert "line(s) of agent.jsonl are not events" in said, said
