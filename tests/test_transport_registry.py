"""One registry of call transports (``turnscope.transports``): a transport of one's own is one
folder plus one registration, and it is driven through `turnscope call`, ``api.call`` and a
suite's live fixture with nothing else touched; misuse is one line.

The plug-in (tests/data/plugins/relay_transport) places real WebRTC calls on 127.0.0.1 against
the reference agent in its own process.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import free_port, reference_agent, turnscope_exe
from turnscope import transports
from turnscope.errors import InputError

PLUGINS = Path(__file__).parent / "data" / "plugins"
SCENARIO = """
name: relay-check
task: {budgets: {max_latency_ms: 2500}}
caller: {voice: en-us, timeout_s: 40, hangup_after_ms: 600}
agent: {voice: en-gb, latency_ms: 400}
script:
  - caller: Hello, is the line open?
  - agent: Yes, it is open.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def _plugin() -> object:
    sys.path.insert(0, str(PLUGINS))
    try:
        import relay_transport

        return relay_transport
    finally:
        sys.path.remove(str(PLUGINS))


def test_misuse_is_one_line():
    with pytest.raises(InputError, match="--codec: not an option of the webrtc transport"):
        transports.options("webrtc", "http://127.0.0.1:1/api/offer", codec="alaw")
    with pytest.raises(InputError, match=r"--transport must be one of .*webrtc.*twilio"):
        transports.options("sip", "sip:agent@127.0.0.1")
    with pytest.raises(InputError, match="is a websocket: a phone line"):
        transports.options("webrtc", "ws://127.0.0.1:1/ws")
    # a hosted room is not an agent's endpoint: said before any lookup (offline, it was
    # "Name or service not known"), its token scrubbed
    for room, name in (
        ("https://acme.daily.co/support?t=SECRET1", "a Daily room"),
        ("wss://acme-x1.livekit.cloud?access_token=SECRET1", "a LiveKit Cloud"),
    ):
        with pytest.raises(InputError, match=f"is {name}") as err:
            transports.options("webrtc", room)
        assert "SECRET1" not in str(err.value) and "bot.py -t webrtc" in str(err.value)
    with pytest.raises(InputError, match="takes no URL"):
        transports.options("device", "http://x", caller_out="a_out", agent_in="b_in")
    spec = transports.spec("webrtc")
    clash = type(spec)(**{**spec.__dict__, "open": lambda o: None})
    with pytest.raises(InputError, match="'webrtc' is registered twice"):
        transports.register(clash)


def test_a_transport_of_ones_own_runs_through_the_cli_the_api_and_a_suite(tmp_path: Path):
    plugin = _plugin()
    for spec in plugin.TRANSPORTS:  # the in-process registration (the CLI's: the env var)
        transports.register(spec)
    scenario = tmp_path / "relay.yaml"
    scenario.write_text(SCENARIO)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(PLUGINS), os.environ.get(
        "PYTHONPATH", "")]), transports.PLUGINS_ENV: "relay_transport"}  # fmt: skip
    with reference_agent(scenario) as url:
        cli = subprocess.run(
            [*turnscope_exe(), "call", url, "--transport", "relay", "--scenario", str(scenario),
             "-o", str(tmp_path / "cli"), "-q"],
            capture_output=True, text=True, timeout=120, env=env,
        )  # fmt: skip
        from turnscope.api import call

        run = call(url, scenario, transport="relay", outdir=tmp_path / "api")
        suite = tmp_path / "suite.json"
        suite.write_text(json.dumps({
            "kind": "agent-learning.bench-suite.v1", "control": "voice", "modality": "voice",
            "name": "relay", "version": "1", "tasks": [{
                "id": "relay-check", "instruction": "A short call.",
                "budgets": {"max_latency_ms": 2500}, "fixture": {
                    "source": "recorded", "audio": str(scenario), "tags": ["conversational"]}}],
        }))  # fmt: skip
        bench = subprocess.run(
            [*turnscope_exe(), "bench", str(suite), "--agent", url, "--transport", "relay",
             "-o", str(tmp_path / "bench" / "bench.json"), "--runs", str(tmp_path / "runs")],
            capture_output=True, text=True, timeout=180, env=env,
        )  # fmt: skip
    assert cli.returncode in (0, 1), cli.stdout + cli.stderr
    doc = json.loads((tmp_path / "cli" / "result.json").read_text())
    assert doc["source"]["transport"] == "webrtc" and doc["script"]["lines"], doc["source"]
    assert run.outdir == tmp_path / "api" and len(run.result.assembly.turns) >= 3
    assert "Traceback" not in bench.stderr, bench.stderr
    assert bench.returncode in (0, 1), bench.stdout + bench.stderr
    rows = json.loads((tmp_path / "bench" / "bench.json").read_text())["per_task"]
    assert [r["task_id"] for r in rows] == ["relay-check"] and rows[0]["verdict"] != "error", rows


def test_a_call_that_cannot_start_leaves_its_bundle_from_the_api_too(tmp_path: Path):
    """The set-up failure's bundle is written where the call is placed, whoever called."""
    from turnscope.api import call
    from turnscope.errors import CallSetupError

    scenario = tmp_path / "s.yaml"
    scenario.write_text(SCENARIO)
    dead = f"http://127.0.0.1:{free_port()}/api/offer"
    with pytest.raises(CallSetupError):
        call(dead, scenario, outdir=tmp_path / "run", connect_timeout_s=2.0)
    doc = json.loads((tmp_path / "run" / "result.json").read_text())
    assert doc["verdict"] == "error" and doc["source"]["transport"] == "webrtc", doc
    assert (tmp_path / "run" / "report.html").exists() or (tmp_path / "run").iterdir()
