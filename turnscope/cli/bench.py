"""`turnscope bench`: score a voice suite against references or captured transcripts, or run
its fixtures (``turnscope.use_cases.suite_run``)."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.caller_flags import caller_llm_options
from turnscope.cli.examples import CI_EPILOG
from turnscope.cli.help import CALLER, OUTPUT, RUN, SCORING, TRANSPORT, groups
from turnscope.cli.options import PipelineOptions, ray_option
from turnscope.errors import InputError

LLM_FLAGS = caller_llm_options()


def bench(
    suite: Path = typer.Argument(
        ...,
        help="Voice suite JSON (agent-learning.bench-suite.v1), or a shipped suite's name "
        "(voice_starter, voice_regression).",
    ),
    use_reference: bool = typer.Option(
        False, "--use-reference", help="Score each task against its own reference_dialogue."
    ),
    transcripts: Path | None = typer.Option(
        None, "--transcripts", help="Folder of <task_id>.json transcripts to score."
    ),
    output: Path | None = typer.Option(None, "-o", "--output", help="Write the result JSON here."),
    evidence_class: str = typer.Option(
        None,
        "--evidence-class",
        help="Evidence class of the rows (default: captured_fixture).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the result JSON instead of a table."),
    agent: str | None = typer.Option(
        None,
        "--agent",
        help="Offer URL of the agent (or its media-stream websocket, with --transport), for "
        "fixtures that are live-call scenarios.",
    ),
    loopback_only: bool = typer.Option(False, "--loopback-only", help="ICE on 127.0.0.1 only."),
    caller_llm: str | None = LLM_FLAGS[0],
    caller_llm_model: str | None = LLM_FLAGS[1],
    caller_llm_key_env: str | None = LLM_FLAGS[2],
    transport: str = typer.Option(
        "webrtc", "--transport", help="webrtc, or a phone line: twilio, telnyx, plivo, exotel."
    ),
    jobs: int | None = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,
        help="Fixtures run at the same time (default: replays 8, live calls 1; replays share "
        "one ASR worker, so more at once only fill its batches).",
    ),
    settings_file: Path | None = typer.Option(None, "--settings", help="Settings YAML."),
    ray_address: str | None = ray_option("Run the fixtures"),
    runs: str | None = typer.Option(
        None,
        "--runs",
        help="Folder for each fixture's bundle, or object storage: s3://BUCKET/PREFIX, "
        "gs://BUCKET/PREFIX.",
    ),
    force: bool = typer.Option(
        False, "--force", help="Replace the bundles of an earlier run in --runs."
    ),
    scorecard_path: Path | None = typer.Option(
        None, "--scorecard", help="Scorecard JSON (default: next to -o, .scorecard.json)."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar."),
    no_fail: bool = typer.Option(
        False,
        "--no-fail",
        help="Exit 0 when tasks fail or all are void: they are recorded in the result and the "
        "scorecard for `turnscope gate` to judge (a CI job's next step). Bad input (2) and a "
        "run that could not finish (4) still fail.",
    ),
) -> int:
    """Score every task of SUITE; exit 0 when all scored tasks pass, 1 when one fails
    (0 with --no-fail), 2 when every task is void for bad input in its fixture.

    Without --use-reference or --transcripts, every task's fixture runs through the real
    pipeline (a recording is replayed, a scenario is called live against --agent, a transcript
    is scored). A per-tag scorecard for `turnscope gate` is written beside the result (with
    --use-reference or --transcripts: when -o or --scorecard is given).
    """
    if use_reference and transcripts is not None:
        raise InputError("give at most one of --use-reference or --transcripts DIR")
    if use_reference or transcripts is not None:
        if live := [f for f, v in (("--agent", agent), ("--caller-llm", caller_llm)) if v]:
            raise InputError(f"{' and '.join(live)}: --use-reference and --transcripts place "
                             "no call (leave them out, or run the fixtures)")  # fmt: skip
        from turnscope.cli.bench_output import score_code
        from turnscope.use_cases.suite_score import score_suite

        scored = score_suite(suite, transcripts=transcripts, evidence_class=evidence_class,
                             output=output, scorecard_path=scorecard_path)  # fmt: skip
        return recorded_only(score_code(scored, output, as_json=as_json), no_fail)
    from turnscope.caller_llm import checked_llm
    from turnscope.cli.bench_output import SuiteBar, fixtures_code
    from turnscope.use_cases.suite_run import run_suite

    llm = checked_llm(caller_llm, caller_llm_model, caller_llm_key_env)
    settings = PipelineOptions(settings_file).settings()
    bar = SuiteBar(quiet=quiet, ray=ray_address is not None)
    try:
        run = run_suite(suite, agent=agent, transport=transport, loopback_only=loopback_only,
                        jobs=jobs, settings=settings, runs=runs, force=force, output=output,
                        scorecard_path=scorecard_path, ray_address=ray_address,
                        progress=bar, caller_llm=llm)  # fmt: skip
    finally:
        bar.close()
    return recorded_only(fixtures_code(run, as_json=as_json), no_fail)


def recorded_only(code: int, no_fail: bool) -> int:
    """``--no-fail``: failing or void tasks (exit 1) are recorded, not a failed step; the gate
    judges them. Anything else (bad input, a run that could not finish) keeps its code."""
    if code == 1 and no_fail:
        from turnscope.cli.console import say

        say("tasks failed or were void: recorded (--no-fail); `turnscope gate` judges them")
        return 0
    return code


groups(
    bench,
    {
        SCORING: "use_reference transcripts evidence_class",
        TRANSPORT: "agent loopback_only transport",
        CALLER: "caller_llm caller_llm_model caller_llm_key_env",
        RUN: "jobs settings_file ray_address runs force no_fail",
        OUTPUT: "output scorecard_path as_json quiet",
    },
)


def register(app: typer.Typer) -> None:
    app.command(
        "bench",
        epilog=CI_EPILOG,
        short_help="Run and score every task of a suite; write its scorecard.",
    )(bench)
