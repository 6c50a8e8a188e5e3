"""`turnscope demo` as a function: the reference agent started on 127.0.0.1 and called by the
scripted caller, its ground truth kept in the bundle."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path

from rich.console import Console

from turnscope import transports
from turnscope.actors.agent.behaviour import AgentBehaviour
from turnscope.actors.agent.server import AgentServer
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.asr.settings import Settings, load_settings
from turnscope.configs import config_path
from turnscope.errors import InputError
from turnscope.jsonio import write_json
from turnscope.outdir import claim_output_dir, dropped_if_empty
from turnscope.scoring.evidence.bundle import seal
from turnscope.use_cases.call_run import CallRun, place_scripted_call
from turnscope.use_cases.checks import as_path


def demo(
    *,
    outdir: str | Path | None = None,
    force: bool = False,
    scenario: str | Path | None = None,
    signaling: str = "smallwebrtc",
    settings: Settings | None = None,
    console: Console | None = None,
    on_listening: Callable[[str], None] | None = None,
) -> CallRun:
    """Start the reference agent (speaking ``scenario``'s agent side; default the refund call)
    and call it over WebRTC (``signaling``: smallwebrtc or whip) with the scripted caller; the
    bundle (``outdir``, or a new ``runs/demo-...``) holds the agent's truth too.
    ``on_listening`` hears the agent's base URL before it is called."""
    sc = load_scenario(scenario or config_path("scenarios", "refund-call.yaml"))
    if sc.caller.driver == "llm":  # before the agent starts: the demo names no LLM
        raise InputError(
            "caller.driver is llm: the demo places a scripted call and names no LLM",
            path=sc.source,
            fix=f"turnscope agent --scenario {scenario} & then turnscope call URL --scenario "
            f"{scenario} --caller-llm URL",
        )
    settings = settings or load_settings()
    folder, made = claim_output_dir(as_path(outdir), "demo", force=force)

    async def go() -> CallRun:
        server = AgentServer(AgentBehaviour.from_scenario(sc))
        base = await server.start()
        path = "/whip" if signaling == "whip" else "/api/offer"
        options = transports.options("webrtc", base + path, signaling=signaling, loopback_only=True)
        if on_listening is not None:
            on_listening(base)
        try:
            call = await place_scripted_call(options, sc, settings, folder, console=console)
            finished = await server.wait_finished(1)
            if finished:
                write_json(folder / "agent_truth.json", finished[0])
                seal(folder)  # the manifest covers it too
            return call
        finally:
            await server.stop()

    with dropped_if_empty(made):  # the agent failed to start: no empty runs/demo-... left
        return asyncio.run(go())
