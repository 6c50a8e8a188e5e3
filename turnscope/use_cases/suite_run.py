"""Running a voice suite's fixtures (`turnscope bench` without references or transcripts): where
the bundles go, the runs (here or on Ray), the result, the scorecard and its page, and both
published beside bundles kept in object storage."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnscope import interrupts, transports
from turnscope.asr.settings import Settings, load_settings
from turnscope.configs import resolve
from turnscope.errors import InputError, UploadError
from turnscope.fixture_runner import FixtureRun, VoidCause, run_suite_fixtures
from turnscope.jsonio import write_json
from turnscope.outdir import claim_output_dir, clear_run, holds_a_run, output_file
from turnscope.scoring.suites.bench import bench_result
from turnscope.scoring.suites.fixtures import check_fixtures, parse_fixture
from turnscope.scoring.suites.fixtures import resolve as fixture_file
from turnscope.scoring.suites.scorecard import scorecard
from turnscope.scoring.suites.scorecard_page import runs_from
from turnscope.scoring.suites.suite import load_suite
from turnscope.storage import LocalRuns, ObjectRuns, bundle_store
from turnscope.use_cases.checks import as_path, has_tasks, networked_transport
from turnscope.use_cases.scorecard_files import write_scorecard_page

if TYPE_CHECKING:
    from turnscope.caller_llm import CallerLlm
    from turnscope.distributed.fixtures import RayRun

Store = LocalRuns | ObjectRuns


@dataclass(frozen=True)
class SuiteProgress:
    """How far a suite's run is: fixtures done of ``total``; on Ray also those that failed
    (void) and those retried after their worker died (None here)."""

    name: str
    total: int
    done: int = 0
    failed: int | None = None
    retried: int | None = None


@dataclass
class SuiteRun:
    """What a suite's run came to: ``result`` (bench.json's document), ``scorecard`` and where
    it was written, every fixture's run, where the bundles are, what was uploaded (or why it
    could not be), and on Ray the cluster's run and how many fixtures its loss left void."""

    result: dict[str, Any]
    scorecard: dict[str, Any]
    scorecard_path: Path
    fixtures: list[FixtureRun]
    bundles: str | None  # None: no task wrote one (every task void), no folder left
    uploaded: list[str] = field(default_factory=list)
    upload_error: str | None = None
    ray: RayRun | None = None
    lost: int = 0
    warnings: list[str] = field(default_factory=list)  # about the run as asked for
    interrupted: str | None = None  # a signal (Ctrl-C): no fixture started after it

    @property
    def passed(self) -> bool:
        """Something was scored and every scored task passed."""
        agg = self.result["aggregate"]
        return bool(agg["scored"]) and agg["passed"] == agg["scored"]

    @property
    def reasons(self) -> dict[str, str]:
        """Why each failed task failed, in the verifier's facts (the scorecard's words)."""
        return {t["task_id"]: t["reason"] for t in self.scorecard["tasks"] if t.get("reason")}

    @property
    def void_of_bad_input(self) -> bool:
        """Every task is void for its own bad input (a fixture's file or scenario key): the
        suite's input to fix, not a verdict (exit 2, as `call` gives for one of them)."""
        return bool(self.fixtures) and all(
            r.void_cause is VoidCause.BAD_INPUT for r in self.fixtures
        )

    def void(self) -> list[tuple[str, str]]:
        """``(task_id, why)`` of every void task."""
        return [(r.scores.task_id, r.scores.note or "") for r in self.fixtures
                if r.scores.verdict == "void"]  # fmt: skip


def run_suite(
    suite: str | Path,
    *,
    agent: str | None = None,
    transport: str = "webrtc",
    loopback_only: bool = False,
    jobs: int | None = None,
    settings: Settings | None = None,
    runs: str | Path | None = None,
    force: bool = False,
    output: str | Path | None = None,
    scorecard_path: str | Path | None = None,
    ray_address: str | None = None,
    progress: Callable[[SuiteProgress], None] | None = None,
    caller_llm: CallerLlm | None = None,
) -> SuiteRun:
    """Run every task's fixture of ``suite`` (a path, or a shipped suite's name) through the
    pipeline (a recording replayed, a scenario called live against ``agent`` over
    ``transport``, a transcript scored), ``jobs`` at a time or on the Ray cluster at
    ``ray_address``; each bundle goes under ``runs`` (a folder, or ``s3://``/``gs://``; default
    a new ``runs/bench-NAME-...``). Writes the result (``output``), the scorecard (default:
    beside ``output``, else in the runs folder) and its page; in object storage both are
    uploaded beside the bundles. ``progress`` hears each fixture done. ``caller_llm``: the LLM
    that live scenarios' LLM-driven callers ask (this machine only). InputError for bad input,
    before anything runs."""
    output, scorecard_path = as_path(output), as_path(scorecard_path)
    output_file(output, "-o")
    output_file(scorecard_path, "--scorecard")
    path = resolve("suites", suite)  # a path, or a shipped suite's name (voice_starter)
    data = load_suite(path)
    _check(data, path, agent, transport, ray_address)
    if caller_llm is not None and ray_address is not None:
        raise InputError("--caller-llm is for a run on this machine, not --ray (pin the "
                         "callers with each fixture's caller_from instead)")  # fmt: skip
    unused = _unused(data, path, agent, caller_llm)  # known before anything runs
    store = _store(data, runs, force)
    try:
        if output is not None and output.is_dir():
            raise InputError("is a folder, expected the result file to write", path=output)
        settings = settings or load_settings()
        if ray_address is None and any(parse_fixture(t, path) for t in data["tasks"]):
            from turnscope.asr.transcriber import Transcriber

            Transcriber(settings.asr, settings.confirm).preload()  # loads while fixtures open
        name = f"bench {data.get('name')}"
        tell = progress or (lambda _p: None)
        tell(SuiteProgress(name, len(data["tasks"])))
        options: dict[str, Any] = dict(
            agent_url=agent, loopback_only=loopback_only, transport=transport
        )
        if ray_address is not None:
            ray = _on_ray(data, path, settings, store, ray_address, name, tell, options)
            fixtures = ray.runs
        else:
            ray, done = None, [0]

            def advance(_tid: str) -> None:
                done[0] += 1
                tell(SuiteProgress(name, len(data["tasks"]), done[0]))

            fixtures = asyncio.run(run_suite_fixtures(data, path, settings, store, jobs=jobs,
                                                      progress=advance, caller_llm=caller_llm,
                                                      **options))  # fmt: skip
        done = _finish(data, fixtures, store, output, scorecard_path, ray)
        done.warnings += unused
        done.interrupted = interrupts.received()
        return done
    except BaseException:
        store.tidy()  # bad input found late (a Ray address), an interrupt: no empty folder
        raise


def _unused(
    data: dict[str, Any], path: Path, agent: str | None, llm: CallerLlm | None
) -> list[str]:
    """A line for each flag the suite gave nothing to do (the user may think it was used)."""
    from turnscope.actors.caller.scenario_file import load_scenario

    if agent is None and llm is None:
        return []
    live = [fx for t in data["tasks"] if (fx := parse_fixture(t, path)) and fx.kind() == "live"]
    said = []
    if agent is not None and not live:
        said.append(
            "--agent: no task of this suite calls an agent live (its fixtures are recordings or "
            "transcripts), so the agent was not called: the verdict is the fixtures', not "
            "your agent's"
        )

    def asks(fx: Any) -> bool:
        if fx.audio is None:  # a re-driven recording: its caller is the recorded one
            return False
        try:
            return load_scenario(fixture_file(path, fx.audio)).caller.driver == "llm"
        except InputError:
            return False  # its task says what is wrong with it

    if llm is not None and not any(asks(fx) for fx in live):
        said.append("--caller-llm: no live scenario of this suite has an LLM-driven caller, so "
                    "no LLM was asked")  # fmt: skip
    return said


def _check(
    data: dict[str, Any], path: Path, agent: str | None, transport: str, ray: str | None
) -> None:
    """Everything about the run checked before anything runs."""
    networked_transport(transport)
    if ray is not None:
        from turnscope.distributed.cluster import check_address

        check_address(ray)
    if agent is not None:  # its kind checked, its userinfo and query values never written
        transports.options(transport, agent)
    has_tasks(data, path)
    if not any(t.get("fixture") for t in data["tasks"]):
        raise InputError(
            "no task has a fixture to run",
            path=path,
            fix="use --use-reference or --transcripts DIR, or add fixtures to the tasks",
        )
    suite = load_suite(data)
    check_fixtures(suite, path)  # every fixture file, in one line, before any runs
    kinds = {t.id: t.fixture.kind() for t in suite.tasks if t.fixture is not None}
    if agent is None and set(kinds.values()) == {"live"}:  # nothing could run: say so now
        raise InputError(
            f"every task calls an agent live ({', '.join(kinds)}), and no --agent was given",
            path=path,
            fix=f"e.g. turnscope bench {path} --agent http://127.0.0.1:7860/api/offer (your "
            "agent's offer URL)",
        )


def _store(data: dict[str, Any], runs: str | Path | None, force: bool) -> Store:
    """Where the bundles go: a local folder that holds no earlier run's (unless ``force``:
    then those are cleared), or object storage we can write to."""
    store = bundle_store(runs) if runs is not None else None
    if isinstance(store, ObjectRuns):
        try:
            store.check()  # a bucket we cannot write to is one line before anything runs
        except BaseException:
            store.tidy()  # its scratch folder, made for nothing
            raise
        return store
    runs_dir, made = claim_output_dir(store.root if store else None, f"bench-{data.get('name')}")
    earlier = [runs_dir / str(t["id"]) for t in data["tasks"]
               if holds_a_run(runs_dir / str(t["id"]))]  # fmt: skip
    if earlier and not force:
        raise InputError(
            f"already holds the bundles of an earlier run ({', '.join(p.name for p in earlier)})",
            path=runs_dir,
            fix="choose another --runs, or pass --force to replace them",
        )
    for folder in earlier:
        clear_run(folder)
    return LocalRuns(runs_dir, made=made)


def _finish(
    data: dict[str, Any],
    fixtures: list[FixtureRun],
    store: Store,
    output: Path | None,
    scorecard_path: Path | None,
    ray: RayRun | None,
) -> SuiteRun:
    """The result, the scorecard and its page written (and published beside bundles in object
    storage)."""
    result = bench_result(data, [r.row for r in fixtures])
    card = scorecard([r.scores for r in fixtures])
    card["suite"] = {"name": data.get("name"), "version": data.get("version")}
    if output is not None:
        write_json(output, result)
    local = store.root if isinstance(store, LocalRuns) else Path(f"bench-{data.get('name')}")
    card_path = scorecard_path or (
        output.with_suffix(".scorecard.json") if output else local / "scorecard.json"
    )
    if isinstance(store, LocalRuns):  # the page links each task's report.html
        card["runs"] = runs_from(card_path, store.root)
    write_json(card_path, card)
    write_scorecard_page(card_path, card)
    gone = ray is None and store.tidy()
    run = SuiteRun(result, card, card_path, fixtures, None if gone else store.describe(), ray=ray)
    if isinstance(store, ObjectRuns):
        try:
            files = [output, card_path, card_path.with_suffix(".html")]
            run.uploaded = [store.put(p) for p in files if p is not None]
        except UploadError as exc:
            run.upload_error = str(exc)
    if ray is not None and ray.gone:
        run.lost = ray.lost
    return run


def _on_ray(data: dict[str, Any], suite: Path, settings: Settings, store: Store, address: str,
            name: str, tell: Callable[[SuiteProgress], None],
            options: dict[str, Any]) -> RayRun:  # fmt: skip
    """The fixtures on Ray, progress saying done / failed / retried."""
    from turnscope.distributed.fixtures import run_on_ray

    def show(p: Any) -> None:
        tell(SuiteProgress(name, p.total, p.done, p.failed, p.retried))

    runs = store.url if isinstance(store, ObjectRuns) else store.root
    return run_on_ray(data["tasks"], suite, settings, runs, address=address,
                      options=options, progress=show)  # fmt: skip
