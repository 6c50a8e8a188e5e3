"""The caller's LLM as untrusted input (a test double of the server, on 127.0.0.1, is fine for
these error paths; tests/test_conversation.py drives a real one): every way it can fail is a
CallerLlmError with its reason, never a crash and never the agent's fault; the flags that name
it are checked before a call."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from aiohttp import web

from tests.conftest import free_port
from turnscope.actors.caller import llm
from turnscope.actors.caller.fields import LlmCallerSpec
from turnscope.actors.caller.llm import LlmFailure

SPEC = LlmCallerSpec(deadline_ms=800)
MESSAGES = [{"role": "system", "content": "x"}, {"role": "user", "content": "Your name?"}]


def _completion(content: str, refusal: str | None = None) -> dict:
    return {"choices": [{"message": {"role": "assistant", "content": content, "refusal": refusal}}]}


async def _ask_server(handler, ask=llm.ask) -> llm.LlmReply:
    app = web.Application()
    app.router.add_post("/v1/chat/completions", handler)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        return await ask(llm.LlmEndpoint(f"http://127.0.0.1:{port}/v1", "m"), SPEC, MESSAGES)
    finally:
        await runner.cleanup()


def _answering(body) -> object:
    async def handler(request: web.Request) -> web.Response:
        seen = await request.json()
        assert seen["temperature"] == 0 and seen["seed"] == 7 and seen["messages"] == MESSAGES
        if isinstance(body, web.Response):
            return body
        return web.json_response(body)

    return handler


def test_a_good_answer_is_an_action():
    reply = asyncio.run(_ask_server(_answering(_completion('{"action": "say", "text": "Ana."}'))))
    assert reply.action.action == "say" and reply.action.text == "Ana." and reply.latency_ms > 0
    reply = asyncio.run(_ask_server(_answering(_completion('{"text": "Ana Lopez"}'))))
    assert reply.action.action == "say"  # a small model that leaves the action out


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (_completion("not json at all"), LlmFailure.MALFORMED),
        (_completion('{"action": "dance"}'), LlmFailure.UNKNOWN_ACTION),
        (_completion('{"action": "say", "text": "   "}'), LlmFailure.EMPTY_LINE),
        (
            _completion(json.dumps({"action": "say", "text": "word " * 5000})),
            LlmFailure.LINE_TOO_LONG,
        ),
        (_completion(json.dumps({"action": "say", "text": "`s" * 80})), LlmFailure.NO_WORDS),
        (_completion('{"action": "say", "text": "... ?"}'), LlmFailure.NO_WORDS),
        (_completion("", refusal="I can't help with that."), LlmFailure.REFUSED),
        (_completion('{"action": "press", "keys": "12x"}'), LlmFailure.MALFORMED),
        ({"choices": []}, LlmFailure.MALFORMED),
        (web.Response(status=500, text="\x1b[2Jboom"), LlmFailure.HTTP_ERROR),
    ],
)
def test_every_bad_answer_is_a_reason(body, reason):
    with pytest.raises(llm.CallerLlmError) as err:
        asyncio.run(_ask_server(_answering(body)))
    assert err.value.reason is reason
    assert "\x1b" not in str(err.value) and len(str(err.value)) < 400


def _serving(*answers) -> tuple[object, list[list[dict]]]:
    """A handler giving ``answers`` in turn; the messages of each request it had."""
    seen: list[list[dict]] = []

    async def handler(request: web.Request) -> web.Response:
        seen.append((await request.json())["messages"])
        body = answers[len(seen) - 1]
        return body if isinstance(body, web.Response) else web.json_response(body)

    return handler, seen


def test_an_unusable_answer_is_asked_for_once_more():
    """A small model's runaway answer (seen: 80 backticked s's, spoken for over a minute) is
    asked for again, the model told why; a second unusable answer is the failure. A server that
    failed (an HTTP error, a refusal) is not asked again."""
    junk = _completion(json.dumps({"action": "say", "text": "`s" * 80}))
    handler, seen = _serving(junk, _completion('{"action": "say", "text": "Four two seven."}'))
    reply = asyncio.run(_ask_server(handler, llm.ask_repairing))
    assert reply.action.text == "Four two seven." and "no words" in (reply.repaired or "")
    assert seen[0] == MESSAGES and seen[1][:-1] == MESSAGES and "no words" in seen[1][-1]["content"]
    handler, seen = _serving(junk, junk)
    with pytest.raises(llm.CallerLlmError) as err:
        asyncio.run(_ask_server(handler, llm.ask_repairing))
    assert err.value.reason is LlmFailure.NO_WORDS and len(seen) == 2
    handler, seen = _serving(web.Response(status=500, text="boom"), junk)
    with pytest.raises(llm.CallerLlmError) as err:
        asyncio.run(_ask_server(handler, llm.ask_repairing))
    assert err.value.reason is LlmFailure.HTTP_ERROR and len(seen) == 1


def test_a_slow_or_missing_server_is_a_reason():
    async def slow(request: web.Request) -> web.Response:
        await asyncio.sleep(3)
        return web.json_response(_completion('{"action": "wait"}'))

    with pytest.raises(llm.CallerLlmError) as err:
        asyncio.run(_ask_server(slow))
    assert err.value.reason is LlmFailure.TOO_SLOW
    nowhere = llm.LlmEndpoint(f"http://127.0.0.1:{free_port()}/v1", "m")
    with pytest.raises(llm.CallerLlmError) as err:
        asyncio.run(llm.ask(nowhere, SPEC, MESSAGES))
    assert err.value.reason is LlmFailure.UNREACHABLE


def _scenario(tmp_path: Path) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text("name: s\ncaller: {driver: llm}\nscript:\n  - agent: Hello.\n  - caller: Hi.\n")
    return path


def test_the_flags_that_name_the_llm_are_checked_before_a_call(tmp_path: Path, cli, monkeypatch):
    sc = _scenario(tmp_path)
    url = f"http://127.0.0.1:{free_port()}/api/offer"
    code, _, err = cli("call", url, "--scenario", str(sc), "-q", "-o", str(tmp_path / "a"))
    assert code == 2 and "--caller-llm URL" in err and len(err.strip().splitlines()) == 1
    code, _, err = cli("call", url, "--scenario", str(sc), "--caller-llm", "ftp://x")
    assert code == 2 and "OpenAI-compatible" in err
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    key = ["--caller-llm-key-env", "NO_SUCH_KEY_VAR"]
    code, _, err = cli("call", url, "--scenario", str(sc), "--caller-llm", "http://h:1/v1", *key)
    assert code == 2 and "NO_SUCH_KEY_VAR" in err
    empty = tmp_path / "bundle"
    empty.mkdir()
    (empty / "result.json").write_text('{"script": {"lines": []}}')
    code, _, err = cli("call", url, "--scenario", str(sc), "--caller-from", str(empty))
    assert code == 2 and "no LLM caller turns" in err
    # A call of another scenario: its caller's turns answer another conversation.
    turn = {"action": {"kind": "say", "text": "Hi."}}
    other = {"scenario": "order-status-llm", "script": {"llm": {"turns": [turn]}}}
    (empty / "result.json").write_text(json.dumps(other))
    code, _, err = cli("call", url, "--scenario", str(sc), "--caller-from", str(empty))
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "this call was of scenario 'order-status-llm', not 's'" in err, err
    assert "result.json" in err and not (tmp_path / "runs").exists()


def test_an_llm_flag_on_a_scripted_callers_scenario_is_one_line(tmp_path: Path, cli, monkeypatch):
    """``--caller-llm`` or ``--caller-from`` with a scenario whose caller is scripted would do
    nothing (the call ran scripted and passed, the flag ignored): one line naming the flag and
    the shipped LLM example, exit 2, before any folder is made; the API refuses it too."""
    import turnscope
    from turnscope.errors import InputError

    monkeypatch.chdir(tmp_path)
    url = f"http://127.0.0.1:{free_port()}/api/offer"
    for flag, value in (("--caller-llm", "http://127.0.0.1:9/v1"), ("--caller-from", ".")):
        code, _, err = cli("call", url, "--scenario", "refund-call", flag, value, "-q")
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert f"{flag} is for an LLM-driven caller" in err and "refund-call.yaml" in err, err
        assert "order-status-llm.yaml" in err, err
    assert not (tmp_path / "runs").exists()
    with pytest.raises(InputError, match="caller is scripted"):
        turnscope.call(url, "refund-call", caller_llm="http://127.0.0.1:9/v1")
    # The other way round: the demo names no LLM, so an LLM-driven scenario is refused before
    # its agent starts, saying how to call it.
    code, _, err = cli("demo", "--scenario", "order-status-llm", "-q")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "the demo places a scripted call and names no LLM" in err and "--caller-llm URL" in err
    assert not (tmp_path / "runs").exists()


def test_a_suites_llm_caller_is_pinned_or_the_task_says_how(tmp_path: Path, cli):
    """A suite names no LLM: a live fixture whose scenario's caller is LLM-driven needs
    ``caller_from`` (the bundle of a recorded call, replayed), else its task is void for bad
    input saying so, before any call; ``caller_from`` belongs to a live scenario only."""
    from turnscope.errors import InputError
    from turnscope.scoring.suites.fixtures import parse_fixture

    _scenario(tmp_path)
    (tmp_path / "call.wav").write_bytes(b"")
    wav = {"id": "w", "fixture": {"source": "recorded", "audio": "call.wav", "caller_from": "b",
                                  "tags": ["conversational"]}}  # fmt: skip
    with pytest.raises(InputError, match="caller_from replays a recorded LLM caller in a live"):
        parse_fixture(wav, tmp_path / "suite.json")
    fixture = {"source": "recorded", "audio": "s.yaml", "tags": ["conversational"]}
    suite = {"kind": "agent-learning.bench-suite.v1", "control": "voice", "name": "llm",
             "version": "1", "tasks": [{"id": "unpinned", "fixture": fixture}]}  # fmt: skip
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    url = f"http://127.0.0.1:{free_port()}/api/offer"
    code, out, err = cli("bench", str(tmp_path / "suite.json"), "--agent", url, "-q",
                         "-o", str(tmp_path / "r.json"))  # fmt: skip
    row = json.loads((tmp_path / "r.json").read_text())["per_task"][0]
    assert code == 2 and row["verdict"] == "void", (out, err, row)
    assert "LLM-driven: give the fixture caller_from: BUNDLE" in err and "--caller-llm URL" in err
    assert "caller_from: BUNDLE" in row["error"], row
    # caller_from on a scripted caller's scenario: named by the fixture's key, not call's flag.
    (tmp_path / "scripted.yaml").write_text(
        "name: p\nscript:\n  - agent: Hello.\n  - caller: Hi.\n"
    )
    (tmp_path / "b").mkdir()
    pinned = {**fixture, "audio": "scripted.yaml", "caller_from": "b"}
    suite["tasks"] = [{"id": "pinned", "fixture": pinned}]
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    code, _, err = cli("bench", str(tmp_path / "suite.json"), "--agent", url, "-q",
                       "-o", str(tmp_path / "r.json"))  # fmt: skip
    assert code == 2 and "caller_from is for an LLM-driven caller" in err, err
    # caller_from of a call of another scenario: void, named by the fixture's key.
    (tmp_path / "c").mkdir()
    turns = {"llm": {"turns": [{"action": {"kind": "say", "text": "Hi."}}]}}
    (tmp_path / "c" / "result.json").write_text(json.dumps({"scenario": "x", "script": turns}))
    suite["tasks"] = [{"id": "other", "fixture": {**fixture, "caller_from": "c"}}]
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    code, _, err = cli("bench", str(tmp_path / "suite.json"), "--agent", url, "-q",
                       "-o", str(tmp_path / "r.json"))  # fmt: skip
    assert code == 2 and "caller_from: this call was of scenario 'x', not 's'" in err, err
    # A synth recipe of it would render agent lines that follow each other unanswered: refused.
    synth = {"source": "synthetic", "synth": {"scenario": "s.yaml"}, "tags": ["conversational"]}
    suite["tasks"] = [{"id": "rendered", "fixture": synth}]
    (tmp_path / "suite.json").write_text(json.dumps(suite))
    code, _, err = cli("bench", str(tmp_path / "suite.json"), "-q", "-o", str(tmp_path / "r.json"))
    assert code == 2 and "synth.scenario: caller.driver is llm, and synth asks no LLM" in err, err
    # bench --caller-llm: checked as call checks it; refused where it could not be used, said
    # where nothing used it.
    bench = ["bench", str(tmp_path / "suite.json"), "-q"]
    code, _, err = cli(*bench, "--caller-llm", "ftp://x", "--agent", url)
    assert code == 2 and "OpenAI-compatible" in err, err
    code, _, err = cli(*bench, "--caller-llm", "http://127.0.0.1:9/v1", "--ray", "auto")
    assert code == 2 and "--caller-llm is for a run on this machine, not --ray" in err, err
    code, _, err = cli(*bench, "--use-reference", "--agent", url, "--caller-llm", "http://h:1/v1")
    assert code == 2 and "--agent and --caller-llm: --use-reference and --transcripts" in err, err
    code, _, err = cli("bench", "voice_regression_transcripts", "-q", "--runs", str(tmp_path / "t"),
                       "--caller-llm", "http://127.0.0.1:9/v1")  # fmt: skip
    assert code == 0 and "--caller-llm: no live scenario of this suite has an LLM-driven" in err


def test_a_replay_speaks_the_recorded_lines_ahead_and_says_when_one_went_out_late():
    """A recorded LLM caller's lines are known before the replay: spoken ahead, so a line goes
    out at its recorded offset, not after its synthesis. One later than that (beyond a 20 ms
    frame) is the caller's warning, with when this machine had the agent's words."""
    from turnscope.actors.caller.llm_driver import LlmTurn, late_replay, replayed_lines

    recorded = [{"action": {"action": "say", "text": "Four two seven."}},
                {"action": {"action": "wait"}}, {"action": {"action": "press", "keys": "1"}},
                {"action": {"action": "barge_in", "text": "Wait."}}]  # fmt: skip
    assert replayed_lines(recorded) == ["Four two seven.", "Wait."]
    assert replayed_lines(None) == []
    say = {"action": "say", "text": "x"}
    on_time = LlmTurn(1, "heard", 9000.0, say, "replayed", offset_ms=2053.0, sent_offset_ms=2060.0)
    assert late_replay(on_time) is None
    late = LlmTurn(1, "heard", 9000.0, say, "replayed", offset_ms=2053.0, sent_offset_ms=4432.0,
                   heard_offset_ms=3900.0)  # fmt: skip
    assert late_replay(late) == (
        "LLM turn 1 was replayed 2379 ms later than recorded (the recorded line went out 2053 "
        "ms after the agent's turn ended; the agent's words were transcribed 3900 ms after its "
        "turn ended): this machine heard or spoke slower than the recording's, a caller delay, "
        "not the agent's"
    )
    asked = LlmTurn(1, "heard", 9000.0, say, "llm", offset_ms=2053.0, sent_offset_ms=4432.0)
    assert late_replay(asked) is None  # the LLM's own line has no recorded time to keep
