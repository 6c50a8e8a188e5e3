"""`turnscope bench`: score a voice suite against references or captured transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from turnscope.cli.console import fail_line, out, say, warn_line
from turnscope.cli.help import OUTPUT, RUN, SCORING, TRANSPORT, groups
from turnscope.cli.options import PipelineOptions, check_transport, ray_option
from turnscope.errors import BenchError, InputError


def collect_transcripts(suite: dict[str, Any], directory: Path) -> dict[str, list[dict]]:
    """``{task_id: dialogue}`` for every task that has ``DIR/<task_id>.json``."""
    from turnscope.scoring.transcript import load_dialogue

    if not directory.is_dir():
        raise InputError("no such transcripts directory", path=directory, fix="check the path")
    found = {}
    for task in suite["tasks"]:
        path = directory / f"{task['id']}.json"
        if path.exists():
            found[str(task["id"])] = load_dialogue(path)
    return found


def bench_exit(result: dict[str, Any]) -> int:
    """0 when every scored task passed, 1 when one failed or nothing was scored (said so)."""
    agg = result["aggregate"]
    if agg["scored"] == 0:
        say("every task is void: nothing was scored, so nothing passed")
        return 1
    return 0 if agg["passed"] == agg["scored"] else 1


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
    (0 with --no-fail).

    Without --use-reference or --transcripts, every task's fixture runs through the real
    pipeline (a recording is replayed, a scenario is called live against --agent, a transcript
    is scored), and a per-tag scorecard is written beside the result.
    """
    from turnscope.cli.render import bench_table
    from turnscope.configs import resolve
    from turnscope.jsonio import write_json
    from turnscope.outdir import output_file
    from turnscope.scoring.exercise import task_exercise
    from turnscope.scoring.suites.bench import check_evidence_class, run_bench
    from turnscope.scoring.suites.suite import load_suite

    output_file(output, "-o")
    output_file(scorecard_path, "--scorecard")
    suite = resolve("suites", suite)  # a path, or a shipped suite's name (voice_starter)
    data = load_suite(suite)
    if use_reference and transcripts is not None:
        raise InputError("give at most one of --use-reference or --transcripts DIR")
    if not use_reference and transcripts is None:
        code = run_fixtures(
            data,
            suite,
            output,
            scorecard_path,
            runs,
            agent,
            loopback_only,
            jobs,
            quiet,
            force,
            transport=transport,
            settings_file=settings_file,
            ray_address=ray_address,
        )
        return recorded_only(code, no_fail)
    evidence = evidence_class or "captured_fixture"
    try:
        check_evidence_class(evidence)
    except BenchError as exc:
        raise InputError(str(exc)) from None
    if use_reference:
        submission = {
            str(t["id"]): t["reference_dialogue"]
            for t in data["tasks"]
            if t.get("reference_dialogue") is not None
        }
    else:
        submission = collect_transcripts(data, transcripts)
    result = run_bench(
        data, control_mode="artifact_in", submission=submission, evidence_class=evidence
    )
    if output is not None:
        write_json(output, result)
    if as_json:
        import json

        out.print_json(json.dumps(result))
    else:
        tasks = {str(t["id"]): t for t in data["tasks"]}
        seen = {
            tid: {d: e.to_dict() for d, e in task_exercise(tasks[tid], dialogue).items()}
            for tid, dialogue in submission.items()
            if tid in tasks
        }
        out.print(bench_table(result, seen))
        if output is not None:
            say(f"wrote {output}")
    return recorded_only(bench_exit(result), no_fail)


def recorded_only(code: int, no_fail: bool) -> int:
    """``--no-fail``: failing or void tasks (exit 1) are recorded, not a failed step; the gate
    judges them. Anything else (bad input, a run that could not finish) keeps its code."""
    if code == 1 and no_fail:
        say("tasks failed or were void: recorded (--no-fail); `turnscope gate` judges them")
        return 0
    return code


def run_fixtures(
    data: dict[str, Any],
    suite: Path,
    output: Path | None,
    scorecard_path: Path | None,
    runs: str | None,
    agent: str | None,
    loopback_only: bool,
    jobs: int | None,
    quiet: bool,
    force: bool = False,
    transport: str = "webrtc",
    settings_file: Path | None = None,
    ray_address: str | None = None,
) -> int:
    """The fixture mode of `bench`: run, score, write the result and the scorecard."""
    import asyncio

    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    from turnscope import transports
    from turnscope.cli.render import bench_table, scorecard_table, write_scorecard_page
    from turnscope.distributed.cluster import GONE
    from turnscope.fixture_runner import run_suite_fixtures
    from turnscope.jsonio import write_json
    from turnscope.outdir import clear_run, holds_a_run, output_dir
    from turnscope.scoring.suites.bench import bench_result
    from turnscope.scoring.suites.fixtures import parse_fixture
    from turnscope.scoring.suites.scorecard import scorecard
    from turnscope.scoring.suites.scorecard_page import runs_from

    check_transport(transport)
    if ray_address is not None:
        from turnscope.distributed.cluster import check_address

        check_address(ray_address)
    if agent is not None:  # its kind checked, its userinfo and query values never written
        transports.options(transport, agent)
    if not any(t.get("fixture") for t in data["tasks"]):
        raise InputError(
            "no task has a fixture to run",
            path=suite,
            fix="use --use-reference or --transcripts DIR, or add fixtures to the tasks",
        )
    for task in data["tasks"]:
        parse_fixture(task, suite)  # every fixture checked before anything runs
    from turnscope.storage import LocalRuns, bundle_store

    store = bundle_store(runs) if runs is not None else None
    if isinstance(store, LocalRuns) or store is None:
        runs_dir = output_dir(store.root if store else None, f"bench-{data.get('name')}")
        store = LocalRuns(runs_dir)
        earlier = [
            runs_dir / str(t["id"]) for t in data["tasks"] if holds_a_run(runs_dir / str(t["id"]))
        ]
        if earlier and not force:
            raise InputError(
                f"already holds the bundles of an earlier run "
                f"({', '.join(p.name for p in earlier)})",
                path=runs_dir,
                fix="choose another --runs, or pass --force to replace them",
            )
        for folder in earlier:
            clear_run(folder)
    else:
        store.check()  # a bucket we cannot write to is one line before anything runs
        runs_dir = Path(f"bench-{data.get('name')}")  # the local scorecard's default home
    if output is not None and output.is_dir():
        raise InputError("is a folder, expected the result file to write", path=output)
    settings = PipelineOptions(settings_file).settings()
    if ray_address is None and any(parse_fixture(t, suite) for t in data["tasks"]):
        from turnscope.asr.transcriber import Transcriber

        Transcriber(settings.asr, settings.confirm).preload()  # loads while fixtures open
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=out,
        disable=quiet,
        transient=True,
    ) as bar:
        name = f"bench {data.get('name')}"
        job = bar.add_task(name, total=len(data["tasks"]))
        if ray_address is not None:
            ray_run = _on_ray(data, suite, settings, store, ray_address, bar, job, name,
                              dict(agent_url=agent, loopback_only=loopback_only,
                                   transport=transport))  # fmt: skip
            results = ray_run.runs
        else:
            results = asyncio.run(
                run_suite_fixtures(
                    data,
                    suite,
                    settings,
                    store,
                    jobs=jobs,
                    agent_url=agent,
                    loopback_only=loopback_only,
                    transport=transport,
                    progress=lambda _tid: bar.advance(job),
                )
            )
    result = bench_result(data, [r.row for r in results])
    card = scorecard([r.scores for r in results])
    card["suite"] = {"name": data.get("name"), "version": data.get("version")}
    if output is not None:
        write_json(output, result)
    card_path = scorecard_path or (
        output.with_suffix(".scorecard.json") if output else runs_dir / "scorecard.json"
    )
    if isinstance(store, LocalRuns):  # the page links each task's report.html
        card["runs"] = runs_from(card_path, store.root)
    write_json(card_path, card)
    write_scorecard_page(card_path, card)
    out.print(bench_table(result, {r.scores.task_id: r.scores.exercise for r in results}))
    out.print(scorecard_table(card))
    for r in results:
        if r.scores.verdict == "void":
            warn_line(f"task {r.scores.task_id} is void: {r.scores.note}")
    if ray_address is not None:
        _say_where(ray_run)
    say(f"scorecard: {card_path} (and .html); per-task bundles in {store.describe()}")
    if not _publish_summary(store, [output, card_path, card_path.with_suffix(".html")]):
        return 4
    if ray_address is not None and ray_run.gone:
        lost = sum(
            1 for r in results if r.scores.verdict == "void" and GONE in (r.scores.note or "")
        )
        fail_line(f"{ray_run.gone}: {lost} fixture(s) did not run (void); what finished is "
                  f"kept in {store.describe()} (start the cluster again and rerun)")  # fmt: skip
        return 4
    return bench_exit(result)


def _publish_summary(store: Any, paths: list[Path | None]) -> bool:
    """Beside the bundles in object storage, the result and the scorecard too (a nightly run's
    reader finds the whole run in the bucket); False when one could not be uploaded."""
    from turnscope.errors import UploadError
    from turnscope.storage import ObjectRuns

    if not isinstance(store, ObjectRuns):
        return True
    try:
        urls = [store.put(p) for p in paths if p is not None]
    except UploadError as exc:
        fail_line(str(exc))
        return False
    say(f"uploaded: {', '.join(urls)}")
    return True


def _on_ray(data: dict[str, Any], suite: Path, settings: Any, store: Any, address: str,
            bar: Any, job: Any, name: str, options: dict[str, Any]) -> Any:  # fmt: skip
    """The fixtures on Ray, the bar saying done / failed / retried."""
    from turnscope.distributed.fixtures import run_on_ray

    def show(p: Any) -> None:
        bar.update(job, completed=p.done,
                   description=f"{name} (failed {p.failed}, retried {p.retried})")  # fmt: skip

    from turnscope.storage import ObjectRuns

    runs = store.url if isinstance(store, ObjectRuns) else store.root
    return run_on_ray(data["tasks"], suite, settings, runs, address=address,
                      options=options, progress=show)  # fmt: skip


def _say_where(run: Any) -> None:
    """Which node ran how many fixtures, and what did not start."""
    for w in run.warnings:
        warn_line(w)
    from collections import Counter

    def asr(node_id: str) -> str:
        kinds = Counter(run.devices.get(node_id, []))
        return " + ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "no worker"

    parts = [
        f"{n.address} ({n.cpus:g} CPUs{f', {n.gpus:g} GPUs' if n.gpus else ''}, ASR on "
        f"{asr(n.node_id)}): {run.per_node.get(n.node_id, 0)}"
        for n in run.nodes
    ]
    say(f"ray: {len(run.nodes)} node(s), fixtures per node: {'; '.join(parts)}; "
              f"retried {run.retried}")  # fmt: skip


CI_EPILOG = (
    "In CI, bench and gate in one job: `turnscope bench SUITE -o out/bench.json --no-fail` "
    "records failing tasks without failing the step, then `turnscope gate "
    "out/bench.scorecard.json --baseline BASELINE --junit out/junit.xml` fails the job naming "
    "the failing tasks, and writes junit.xml either way."
)


groups(
    bench,
    {
        SCORING: "use_reference transcripts evidence_class",
        TRANSPORT: "agent loopback_only transport",
        RUN: "jobs settings_file ray_address runs force no_fail",
        OUTPUT: "output scorecard_path as_json quiet",
    },
)


def register(app: typer.Typer) -> None:
    app.command("bench", epilog=CI_EPILOG)(bench)
