"""`turnscope load` as a function: N scripted (or LLM-driven) calls against one agent, placed
here (one event loop per worker process) or from Ray workers, their aggregate, and load.json
and load.html."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnscope import redact
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.asr.settings import Settings, load_settings
from turnscope.caller_llm import CallerLlm, llm_for_load
from turnscope.capture.telephony.call import TelephonyOptions
from turnscope.capture.transport import TransportOptions
from turnscope.capture.urls import public_url
from turnscope.errors import InputError, OutputError
from turnscope.jsonio import write_json, write_text
from turnscope.load.calls import Event, LoadJob
from turnscope.load.html import budget_of, render
from turnscope.load.plan import LoadPlan, loops_for, overload
from turnscope.load.record import CallRecord
from turnscope.load.report import LoadReport, aggregate, missing_slots
from turnscope.outdir import claim_output_dir, dropped_if_empty
from turnscope.use_cases.checks import as_path
from turnscope.use_cases.scenario_notes import needs_phone_line

if TYPE_CHECKING:
    from turnscope.otlp.shared import RunReceiver


class LoadObserver:
    """What a load run tells as it goes; this one ignores it all (override what you need)."""

    def warning(self, line: str) -> None:
        """A warning (a scenario placed differently live, an overloaded machine, a worker)."""

    def placing(self, plan: LoadPlan) -> None:
        """The calls are about to be placed (the checks passed, the folder is made)."""

    def ready(self, nodes: int | None) -> None:
        """Calling started: from this machine (None), or from ``nodes`` Ray nodes."""

    def event(self, event: Event) -> None:
        """A call is up, or over (``event.record``)."""

    def finished(self) -> None:
        """Every call is over (or was never placed)."""

    def aggregated(self, report: LoadReport) -> None:
        """The aggregate, before load.json and load.html are written (all a full disk
        leaves of the run)."""


@dataclass
class LoadRun:
    """A load run: its aggregate, the folder it is in, and what could not be written (one
    line, None when load.json and load.html both were)."""

    report: LoadReport
    outdir: Path
    unwritten: str | None = None

    @property
    def passed(self) -> bool:
        """Every call completed and passed, and nothing degraded the run."""
        return not self.report.degraded and self.report.passed == len(self.report.calls)


def load_test(
    options: TransportOptions,
    scenario: str | Path,
    plan: LoadPlan,
    *,
    settings: Settings | None = None,
    outdir: str | Path | None = None,
    force: bool = False,
    ray_address: str | None = None,
    loops: int | None = None,
    observer: LoadObserver | None = None,
    otlp: str | None = None,
    caller_llm: CallerLlm | None = None,
) -> LoadRun:
    """Place ``plan``'s calls (``options`` from ``turnscope.transports.options``) with the
    scripted caller of ``scenario``, each a full bundle under ``outdir/calls``, here on
    ``loops`` event loops or from the Ray cluster at ``ray_address``; ``observer`` hears how
    it goes; ``otlp``: HOST:PORT (or grpc://) of one OTLP receiver for the run, each call's
    replies split by its own spans (a run on this machine); ``caller_llm``: the LLM an
    LLM-driven scenario's callers ask (``turnscope.caller_llm.checked_llm``; this machine).
    Returns the aggregate, also written as load.json and load.html in ``outdir`` (default a
    new ``runs/load-NAME-...``).
    InputError for bad input, before any call."""
    tell = observer or LoadObserver()
    if ray_address is not None:
        from turnscope.distributed.cluster import check_address

        check_address(ray_address)
        if loops is not None:
            raise InputError("--loops is for a run on this machine (Ray places one per CPU)")
        if otlp is not None:
            raise InputError(
                "--otlp is for a load run on this machine (its calls read the one receiver's "
                "file); with --ray, give each call's spans by --agent-trace after the run"
            )
        if caller_llm is not None:
            raise InputError(
                "--caller-llm is for a load run on this machine (a Ray node may not reach the "
                "LLM's URL); run it without --ray"
            )
    sc = load_scenario(scenario)
    llm = llm_for_load(sc, caller_llm)
    if (keys := needs_phone_line(sc)) is not None and not isinstance(options, TelephonyOptions):
        raise InputError(keys, path=sc.source)
    settings = settings or load_settings()
    folder, made = claim_output_dir(as_path(outdir), f"load-{sc.name}", force=force)
    folder.mkdir(parents=True, exist_ok=True)
    with dropped_if_empty(made):  # a receiver's port taken, no call up: no empty folder left
        receiver = _receiver(otlp, folder)
        # The file it was read from: a shipped scenario's name is no path in the call workers.
        where = sc.source or Path(scenario).resolve()
        job = LoadJob(options=options, scenario=where, settings=settings,
                      outroot=folder.resolve(), secrets=redact.registered(),
                      duration_s=plan.duration_s,
                      otlp=receiver.shared if receiver else None,
                      caller_llm=llm)  # fmt: skip
        tell.placing(plan)
        try:
            report = _place(job, plan, ray_address, loops,
                            target=public_url(getattr(options, "url", "")), scenario=sc.name,
                            tell=tell, receiver=receiver)  # fmt: skip
        finally:
            if receiver is not None:
                receiver.stop()  # a second stop (after the calls, in _place) does nothing
    report.latency_budget_ms, report.latency_budget_source = budget_of(sc)
    tell.aggregated(report)  # the summary first: it is all a full disk leaves of the run
    return LoadRun(report, folder, write_load(folder, report))


def _receiver(otlp: str | None, folder: Path) -> RunReceiver | None:
    """The run's one OTLP receiver, listening before any call is placed (None without it)."""
    if otlp is None:
        return None
    from turnscope.otlp.shared import RunReceiver

    receiver = RunReceiver(otlp, folder)
    receiver.start()
    return receiver


def _place(job: LoadJob, plan: LoadPlan, ray_address: str | None, loops: int | None, *,
           target: str, scenario: str, tell: LoadObserver,
           receiver: RunReceiver | None = None) -> LoadReport:  # fmt: skip
    """Place the calls here or on Ray; the aggregate."""
    records: list[CallRecord] = []
    warnings: list[str] = []

    def warned(line: str | None) -> None:
        if line is not None:
            tell.warning(line)
            warnings.append(line)

    def heard(event: Event) -> None:
        if event.kind != "up" and event.record is not None:
            records.append(event.record)
        tell.event(event)

    ready = tell.ready
    t0 = time.monotonic()
    if ray_address is None:
        stopped, problems, owner, n, where = _here(job, plan, loops, heard, ready, warned)
    else:
        stopped, problems, owner, n = _on_ray(job, plan, ray_address, heard, ready, warned)
        where = ray_address
    tell.finished()
    otlp = receiver.stop() if receiver is not None else None  # every call has read its spans
    why = stopped[0] if stopped else (problems[0] if problems else "its worker was lost")
    for p in problems:
        tell.warning(p)
    return aggregate(
        records + missing_slots(records, plan, why, owner, interrupted=bool(stopped)),
        plan,
        target=target,
        transport=job.options.transport,  # type: ignore[attr-defined]
        scenario=scenario,
        loops=n,
        where=where,
        wall_s=time.monotonic() - t0,
        problems=[f"interrupted: {stopped[0]}"] if stopped else [],
        warnings=[*warnings, *problems],
        otlp=otlp,
    )


def _here(job: LoadJob, plan: LoadPlan, loops: int | None, heard: Callable[[Event], None],
          ready: Callable[[int | None], None],
          warned: Callable[[str | None], None]) -> tuple[Any, ...]:  # fmt: skip
    """The calls from worker processes on this machine, one event loop each."""
    from turnscope.load.local import run_local

    n = loops or loops_for(plan.calls, os.cpu_count() or 1)
    warned(overload(plan.calls, float(os.cpu_count() or 1)))
    shares = plan.split(n)
    owner = {s.index: f"loop-{k + 1}" for k, share in enumerate(shares) for s in share}
    stopped, problems = run_local(job, shares, heard, on_ready=lambda _: ready(None))
    return stopped, problems, owner, n, "this machine"


def _on_ray(job: LoadJob, plan: LoadPlan, address: str, heard: Callable[[Event], None],
            ready: Callable[[int | None], None],
            warned: Callable[[str | None], None]) -> tuple[Any, ...]:  # fmt: skip
    """The calls from one Ray actor per CPU of every node."""
    from turnscope.distributed.load import run_load_on_ray

    placed: dict[str, int] = {}

    def up(found: list[Any], workers: int) -> None:
        placed.update(n=workers)
        warned(overload(plan.calls, sum(x.cpus for x in found)))
        ready(len(found))

    stopped, problems, owner, notes = run_load_on_ray(job, plan, address, heard, on_ready=up)
    for line in notes:
        warned(line)
    return stopped, problems, owner, placed.get("n", 0)


def write_load(outdir: Path, report: LoadReport) -> str | None:
    """load.json (the report with every call's record), then load.html, each tried whatever
    became of the other; None, or one line on what could not be written and why."""

    def page() -> str:  # links relative to outdir
        return render(report, here=outdir)

    missing: list[str] = []
    cause: OutputError | None = None
    for name, write in (
        ("load.json", lambda: write_json(outdir / "load.json", report.model_dump(mode="json"))),
        ("load.html", lambda: write_text(outdir / "load.html", page())),
    ):
        try:
            write()
        except OutputError as exc:
            missing.append(name)
            cause = cause or exc
    if not missing:
        return None
    return (
        f"{outdir}: could not write {' and '.join(missing)} ({cause}): the summary above is "
        "the run's aggregate; each call's bundle is in calls/"
    )
