"""`turnscope demo`: a real call against the bundled reference agent, on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.call import CALL_FAILED, report
from turnscope.cli.console import fail_line, out, say
from turnscope.cli.options import PipelineOptions
from turnscope.cli.placement_notes import warn_first_turn_mid
from turnscope.errors import CallSetupError


def demo(
    output: Path | None = typer.Option(None, "-o", "--output", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Replace the run already in the -o folder."),
    scenario: Path | None = typer.Option(
        None,
        "--scenario",
        help="Scenario YAML, or a shipped scenario's name (default: refund-call).",
    ),
    signaling: str = typer.Option("smallwebrtc", "--signaling", help="smallwebrtc or whip."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live turn view."),
) -> int:
    """Start the reference agent, call it with the refund scenario (one barge-in), score it."""
    import asyncio

    from turnscope import transports
    from turnscope.actors.agent.core import AgentBehaviour
    from turnscope.actors.agent.server import AgentServer
    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.configs import config_path
    from turnscope.jsonio import write_json
    from turnscope.live_call import place_call
    from turnscope.outdir import output_dir
    from turnscope.scoring.evidence.bundle import seal

    sc = load_scenario(scenario or config_path("scenarios", "refund-call.yaml"))
    warn_first_turn_mid(sc)
    settings = PipelineOptions().settings()
    outdir = output_dir(output, "demo", force=force)

    async def go():  # type: ignore[no-untyped-def]
        server = AgentServer(AgentBehaviour.from_scenario(sc))
        base = await server.start()
        path = "/whip" if signaling == "whip" else "/api/offer"
        options = transports.options("webrtc", base + path, signaling=signaling, loopback_only=True)
        say(f"reference agent listening on {base}; calling it ({signaling})")
        try:
            run, call, caller = await place_call(
                options, sc, settings, scenario_contract(sc), outdir, console=None if quiet else out
            )
            finished = await server.wait_finished(1)
            if finished:
                write_json(outdir / "agent_truth.json", finished[0])
                seal(outdir)  # the manifest covers it too
            return run, list(call.info.degraded), caller.report()
        finally:
            await server.stop()

    try:
        run, degraded, script = asyncio.run(go())
    except CallSetupError as exc:
        fail_line(f"the demo call could not be set up: {exc}")
        return CALL_FAILED
    return report(run, degraded, script, model=settings.asr.model)


def register(app: typer.Typer) -> None:
    app.command("demo")(demo)
