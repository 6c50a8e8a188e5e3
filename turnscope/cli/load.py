"""`turnscope load`: many scripted or LLM-driven calls at once against one agent, and their
aggregate (``turnscope.load.run``)."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli import call_options as remote
from turnscope.cli.caller_flags import caller_llm_options
from turnscope.cli.console import fail_line, say
from turnscope.cli.exit_codes import ExitCode
from turnscope.cli.help import ASR, CALLER, OUTPUT, RUN, TRANSPORT, groups
from turnscope.cli.options import PipelineOptions, number, ray_option

LLM_FLAGS = caller_llm_options()


def load(
    url: str = typer.Argument(
        ..., help="The agent's offer URL, or its media-stream websocket (with --transport)."
    ),
    scenario: Path = typer.Option(
        ...,
        "--scenario",
        help="Scenario YAML every caller plays, or a shipped scenario's name (refund-call).",
    ),
    calls: int = typer.Option(..., "--calls", "-n", min=1, help="Callers (calls at once)."),
    rate: str = typer.Option("1/s", "--rate", help="Callers started per second: 2, 2/s, 30/min."),
    duration: float | None = typer.Option(
        None,
        "--duration",
        help="Seconds to hold the load: each caller dials again when its call ends, until then "
        "(default: each caller calls once).",
        callback=number(0, 86400, above=True),
    ),
    ray_address: str | None = ray_option("Place the calls from workers"),
    loops: int | None = typer.Option(
        None, "--loops", min=1, help="Event loops (worker processes) here (default: one per core)."
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Replace the run already in the -o folder."),
    transport: str = typer.Option(
        "webrtc", "--transport", help="webrtc, or a phone line: twilio, telnyx, plivo, exotel."
    ),
    signaling: str = typer.Option("smallwebrtc", "--signaling", help="smallwebrtc or whip."),
    param: list[str] = typer.Option([], "--param", help="Phone line: NAME=VALUE of the start."),
    codec: str | None = typer.Option(None, "--codec", help="Phone line, telnyx: mulaw or alaw."),
    header: list[str] = typer.Option([], "--header", help="Extra HTTP header 'Name: value'."),
    bearer_env: str | None = typer.Option(
        None, "--bearer-env", help="Send 'Authorization: Bearer $VAR' (the value is never saved)."
    ),
    ice_server: list[str] = typer.Option([], "--ice-server", help="STUN/TURN URL (none)."),
    loopback_only: bool = remote.loopback_option(),
    connect_timeout: float = remote.connect_timeout_option(),
    media_timeout: float | None = remote.media_timeout_option(),
    otlp: str | None = typer.Option(
        None,
        "--otlp",
        help="One OTLP receiver for the run (HOST:PORT, 127.0.0.1:4318 with --otlp ''; "
        "grpc://HOST:PORT): the agent exports every call's spans there, each call keeps its own "
        "(by its session id) and its replies are split hop by hop; per-hop percentiles in the "
        "summary. This machine only (not with --ray).",
    ),
    caller_llm: str | None = LLM_FLAGS[0],
    caller_llm_model: str | None = LLM_FLAGS[1],
    caller_llm_key_env: str | None = LLM_FLAGS[2],
    settings_file: Path | None = typer.Option(None, "--settings", help="Settings YAML."),
    model: str | None = typer.Option(None, "--model", help="tiny.en (bundled) or a model folder."),
    as_json: bool = typer.Option(False, "--json", help="Print load.json instead of the tables."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress line."),
) -> int:
    """N scripted (or LLM-driven: --caller-llm) calls against one agent, started R per second,
    each a full bundle; the aggregate (latency p50/p90/p99 across calls and over time,
    barge-ins, unanswered turns, failures by kind, the harness's own health) in the terminal,
    load.json and load.html. Exit 0 when every call completed and passed, 1 when one did not,
    4 when the run is degraded (calls not placed on time, caller audio sent late, calls that
    never ran, a caller's LLM that failed)."""
    from turnscope.caller_llm import checked_llm
    from turnscope.cli.load_output import LoadView, parse_rate
    from turnscope.load.plan import LoadPlan
    from turnscope.load.run import load_test

    llm = checked_llm(caller_llm, caller_llm_model, caller_llm_key_env)  # its key: a secret
    options = remote.remote_options(url, **remote.remote_flags(locals()))
    plan = LoadPlan(calls=calls, rate=parse_rate(rate), duration_s=duration)
    settings = PipelineOptions(settings_file, model=model).settings()
    view = LoadView(quiet=quiet, as_json=as_json)
    try:
        run = load_test(options, scenario, plan, settings=settings, outdir=output, force=force,
                        ray_address=ray_address, loops=loops, observer=view,
                        otlp=otlp, caller_llm=llm)  # fmt: skip
    finally:
        view.close()
    if not run.unwritten and not as_json:
        say(f"wrote {run.outdir / 'load.html'}")
    problems = [run.unwritten] if run.unwritten else []
    if run.report.degraded:
        problems.append("degraded: " + "; ".join(run.report.degraded))
    if problems:
        fail_line("; ".join(problems))
        return ExitCode.INCOMPLETE  # the run is degraded, or its aggregate could not be written
    return 0 if run.report.passed == len(run.report.calls) else 1


groups(
    load,
    {
        CALLER: "scenario calls rate duration loops caller_llm caller_llm_model caller_llm_key_env",
        TRANSPORT: "transport signaling param codec header bearer_env ice_server loopback_only "
        "connect_timeout media_timeout",
        RUN: "ray_address otlp",
        ASR: "settings_file model",
        OUTPUT: "output force as_json quiet",
    },
)


def register(app: typer.Typer) -> None:
    app.command("load", short_help="Place many calls at once against one agent; the aggregate.")(
        load
    )
