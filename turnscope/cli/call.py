"""`turnscope call`: place a scripted call to a live voice agent and score it as it happens."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import typer

from turnscope.capture.scenario import load_scenario
from turnscope.capture.signaling import CallSetupError
from turnscope.capture.webrtc_call import CallOptions
from turnscope.cli.console import fail_line, out, warn_line
from turnscope.cli.options import PipelineOptions
from turnscope.cli.render import verdict_table
from turnscope.errors import InputError
from turnscope.live_call import place_call, scenario_contract, write_setup_failure
from turnscope.runner import RunOutput

CALL_FAILED = 4  # the call could not be completed, or its evidence is degraded


def parse_headers(pairs: list[str], bearer_env: str | None) -> dict[str, str]:
    """``Name: value`` options (and a bearer token from an environment variable)."""
    headers: dict[str, str] = {}
    for pair in pairs:
        name, sep, value = pair.partition(":")
        if not sep or not name.strip():
            raise InputError(f"--header {pair.split(':')[0]!r}...: expected 'Name: value'")
        headers[name.strip()] = value.strip()
    if bearer_env:
        token = os.environ.get(bearer_env)
        if not token:
            raise InputError(f"--bearer-env {bearer_env}: that environment variable is empty")
        headers["Authorization"] = f"Bearer {token}"
    return headers


def report(run: RunOutput, degraded: list[str]) -> int:
    """Print the verdict and how the call ended; the exit code."""
    for w in run.result.warnings:
        warn_line(w)
    out.print(verdict_table(run.outcome.verifier, title="verdict"))
    r = run.result
    out.print(
        f"{len(r.assembly.turns)} turns, {len(r.assembly.backchannels)} backchannels, "
        f"{r.audio_ms / 1000:.1f} s of call; wrote {run.outdir}"
    )
    if degraded:
        fail_line("degraded evidence: " + "; ".join(degraded))
        return CALL_FAILED
    return 0 if run.outcome.passed else 1


def call(
    url: str = typer.Argument(..., help="The agent's offer URL (SmallWebRTC /api/offer, or WHIP)."),
    scenario: Path = typer.Option(..., "--scenario", help="Scenario YAML (configs/scenarios)."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Output folder."),
    signaling: str = typer.Option("smallwebrtc", "--signaling", help="smallwebrtc or whip."),
    header: list[str] = typer.Option([], "--header", help="Extra HTTP header 'Name: value'."),
    bearer_env: str | None = typer.Option(
        None, "--bearer-env", help="Send 'Authorization: Bearer $VAR' (the value is never saved)."
    ),
    ice_server: list[str] = typer.Option(
        [], "--ice-server", help="STUN/TURN URL (none by default)."
    ),
    loopback_only: bool = typer.Option(
        False, "--loopback-only", help="Keep every ICE candidate on 127.0.0.1 (local agents)."
    ),
    connect_timeout: float = typer.Option(10.0, "--connect-timeout", help="Seconds."),
    media_timeout: float = typer.Option(
        5.0, "--media-timeout", help="End the call when no agent audio arrives this long."
    ),
    settings_file: Path | None = typer.Option(None, "--settings", help="Settings YAML."),
    model: str | None = typer.Option(None, "--model", help="tiny.en (bundled) or a model folder."),
    words: bool | None = typer.Option(None, "--words/--no-words", help="Word timestamps."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live turn view."),
) -> int:
    """Call a live agent with a scripted caller; score the call while it happens."""
    if signaling not in ("smallwebrtc", "whip"):
        raise InputError(f"--signaling must be smallwebrtc or whip, not {signaling!r}")
    sc = load_scenario(scenario)
    settings = PipelineOptions(settings_file, model=model, words=words).settings()
    options = CallOptions(
        url,
        signaling=signaling,
        headers=parse_headers(header, bearer_env),  # type: ignore[arg-type]
        ice_servers=ice_server,
        loopback_only=loopback_only,
        connect_timeout_s=connect_timeout,
        media_timeout_s=media_timeout,
    )
    outdir = output or Path("runs") / f"call-{sc.name}-{time.strftime('%Y%m%d-%H%M%S')}"
    return run_call(options, sc, settings, outdir, quiet=quiet)


def run_call(options: CallOptions, sc, settings, outdir: Path, *, quiet: bool) -> int:  # type: ignore[no-untyped-def]
    """Place the call; a call that cannot start leaves a result saying why (exit 4)."""
    contract = scenario_contract(sc)

    async def go() -> tuple[RunOutput, list[str]]:
        run, call, _caller = await place_call(
            options, sc, settings, contract, outdir, console=None if quiet else out
        )
        return run, list(call.info.degraded)

    try:
        run, degraded = asyncio.run(go())
    except CallSetupError as exc:
        write_setup_failure(outdir, options, str(exc))
        fail_line(f"{exc} (nothing was captured; wrote {outdir / 'result.json'})")
        return CALL_FAILED
    return report(run, degraded)


def register(app: typer.Typer) -> None:
    app.command("call")(call)
