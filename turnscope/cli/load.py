"""`turnscope load`: many scripted calls at once against one agent, and their aggregate."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from turnscope import redact
from turnscope.cli import call_options as remote
from turnscope.cli.call import CALL_FAILED
from turnscope.cli.console import fail_line, out, say, warn_line
from turnscope.cli.help import ASR, CALLER, OUTPUT, RUN, TRANSPORT, groups
from turnscope.cli.options import PipelineOptions, number, ray_option
from turnscope.cli.placement_notes import warn_first_turn_mid
from turnscope.errors import InputError

if TYPE_CHECKING:
    from turnscope.load.calls import Event
    from turnscope.load.report import LoadReport


def parse_rate(text: str) -> float:
    """``--rate``: calls started per second, ``4`` or ``4/s`` (``30/min`` too)."""
    value, _, unit = text.strip().partition("/")
    per = {"": 1.0, "s": 1.0, "sec": 1.0, "min": 60.0, "m": 60.0}.get(unit.strip().lower())
    try:
        rate = float(value)
    except ValueError:
        rate = float("nan")
    if per is None or not rate > 0 or rate == float("inf"):
        raise InputError(
            f"--rate {text!r}: expected calls per second, e.g. 2, 2/s or 30/min (more than 0)"
        )
    return rate / per


class Tally:
    """The live counts the progress line shows."""

    def __init__(self) -> None:
        self.up = 0
        self.records: list[Any] = []
        self.kinds: dict[str, int] = {}

    def __call__(self, event: Event) -> None:
        if event.kind == "up":
            self.up += 1
            return
        record = event.record
        assert record is not None
        self.records.append(record)
        if record.connected_s is not None or record.status == "completed":
            self.up = max(0, self.up - 1)
        if record.status != "completed":
            key = f"{record.status.replace('_', ' ')}: {record.kind or 'other'}"
            self.kinds[key] = self.kinds.get(key, 0) + 1

    def line(self) -> str:
        done = sum(1 for r in self.records if r.status == "completed")
        failed = len(self.records) - done
        kinds = "; ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        return f"calls up {self.up} · completed {done} · failed {failed}" + (
            f" ({kinds})" if kinds else ""
        )


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
    settings_file: Path | None = typer.Option(None, "--settings", help="Settings YAML."),
    model: str | None = typer.Option(None, "--model", help="tiny.en (bundled) or a model folder."),
    as_json: bool = typer.Option(False, "--json", help="Print load.json instead of the tables."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress line."),
) -> int:
    """N scripted calls against one agent, started R per second, each a full bundle; the
    aggregate (latency p50/p90/p99 across calls and over time, barge-ins, unanswered turns,
    failures by kind, the harness's own health) in the terminal, load.json and load.html.
    Exit 0 when every call completed and passed, 1 when one did not, 4 when the run is
    degraded (calls not placed on time, caller audio sent late, calls that never ran)."""
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.capture.telephony.call import TelephonyOptions
    from turnscope.distributed.cluster import check_address
    from turnscope.load.calls import LoadJob
    from turnscope.load.html import budget_of
    from turnscope.load.plan import LoadPlan
    from turnscope.outdir import output_dir

    options = remote.remote_options(url, **remote.remote_flags(locals()))
    plan = LoadPlan(calls=calls, rate=parse_rate(rate), duration_s=duration)
    if ray_address is not None:
        check_address(ray_address)
        if loops is not None:
            raise InputError("--loops is for a run on this machine (Ray places one per CPU)")
    sc = load_scenario(scenario)
    warn_first_turn_mid(sc)
    if sc.dtmf_lines and not isinstance(options, TelephonyOptions):
        raise InputError(
            f"script[{sc.dtmf_lines[0]}] presses keys (dtmf): that needs a phone line "
            "(a ws:// URL with --transport twilio, telnyx, plivo or exotel)",
            path=scenario,
        )
    settings = PipelineOptions(settings_file, model=model).settings()
    outdir = output_dir(output, f"load-{sc.name}", force=force)
    outdir.mkdir(parents=True, exist_ok=True)
    job = LoadJob(
        options=options,
        scenario=scenario.resolve(),
        settings=settings,
        outroot=outdir.resolve(),
        secrets=redact.registered(),
        duration_s=duration,
    )
    target = getattr(options, "url", url)
    report = run_load(job, plan, ray_address, loops, target=target, transport=transport,
                      scenario=sc.name, quiet=quiet or as_json)  # fmt: skip
    # The summary first: it is all a full disk leaves of the run's aggregate.
    if as_json:
        out.print_json(report.model_dump_json(exclude={"calls"}))
    else:
        print_load(report)
    unwritten = write_load(outdir, report, budget=budget_of(sc))
    if not unwritten and not as_json:
        say(f"wrote {outdir / 'load.html'}")
    problems = [unwritten] if unwritten else []
    if report.degraded:
        problems.append("degraded: " + "; ".join(report.degraded))
    if problems:
        fail_line("; ".join(problems))
        return CALL_FAILED
    return 0 if report.passed == len(report.calls) else 1


def run_load(
    job: Any, plan: Any, ray_address: str | None, loops: int | None, *, target: str,
    transport: str, scenario: str, quiet: bool,
) -> LoadReport:  # fmt: skip
    """Place the calls here or on Ray, with a live progress line; the aggregate."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from turnscope.capture.urls import public_url
    from turnscope.load.plan import loops_for, overload
    from turnscope.load.report import aggregate, missing_slots

    tally = Tally()
    warnings: list[str] = []

    def warn(line: str | None) -> None:
        if line is not None:
            warn_line(line)
            warnings.append(line)

    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.fields[line]}"),
        TimeElapsedColumn(),
        console=out,
        disable=quiet,
        transient=False,
    )
    total = None if plan.duration_s else plan.calls
    task = bar.add_task("starting", total=total, line="")

    def on_event(event: Event) -> None:
        tally(event)
        bar.update(task, completed=len(tally.records), line=tally.line())

    t0 = time.monotonic()
    with bar:
        if ray_address is None:
            from turnscope.load.local import run_local

            n = loops or loops_for(plan.calls, os.cpu_count() or 1)
            where, cpus = "this machine", float(os.cpu_count() or 1)
            warn(overload(plan.calls, cpus))
            shares = plan.split(n)
            owner = {s.index: f"loop-{k + 1}" for k, share in enumerate(shares) for s in share}
            stopped, problems = run_local(
                job,
                shares,
                on_event,
                on_ready=lambda _: bar.update(task, description="calling"),
            )
        else:
            from turnscope.distributed.load import run_load_on_ray

            where, placed = ray_address, {}

            def ready(found: list[Any], workers: int) -> None:
                cpus = sum(x.cpus for x in found)
                placed.update(n=workers)
                warn(overload(plan.calls, cpus))
                bar.update(task, description=f"calling from {len(found)} node(s)")

            stopped, problems, owner, notes = run_load_on_ray(
                job, plan, ray_address, on_event, on_ready=ready
            )
            for line in notes:
                warn(line)
            n = placed.get("n", 0)
    why = stopped[0] if stopped else (problems[0] if problems else "its worker was lost")
    records = tally.records + missing_slots(tally.records, plan, why, owner)
    for p in problems:
        warn_line(p)
    return aggregate(
        records,
        plan,
        target=public_url(target),
        transport=transport,
        scenario=scenario,
        loops=n,
        where=where,
        wall_s=time.monotonic() - t0,
        problems=[f"interrupted: {stopped[0]}"] if stopped else [],
        warnings=[*warnings, *problems],
    )


def write_load(
    outdir: Path, report: LoadReport, budget: tuple[int, str] | None = None
) -> str | None:
    """load.json (the report with every call's record), then load.html, each tried whatever
    became of the other; None, or one line on what could not be written and why."""
    from turnscope.errors import OutputError
    from turnscope.jsonio import write_json, write_text
    from turnscope.load.html import render

    def page() -> str:  # the chart's budget line: the scenario's; links relative to outdir
        budget_ms, source = budget or (None, "")
        if budget_ms is None:
            return render(report, here=outdir)
        return render(report, budget_ms=budget_ms, budget_source=source, here=outdir)

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


def print_load(r: LoadReport) -> None:
    """The terminal tables: latency, over time, failures, the harness."""
    from rich.table import Table

    from turnscope.capture.player import LATE_MS

    def ms(v: float | None) -> str:
        return "-" if v is None else f"{v:.0f}"

    t = Table(title="latency (ms)", title_justify="left")
    for col in ("", "n", "p50", "p90", "p99", "max"):
        t.add_column(col, justify="right" if col else "left")
    rows = [("reply", r.latency_ms)]
    if r.latency_on_time_ms is not None and r.latency_on_time_ms.n < r.latency_ms.n:
        rows.append(("reply, caller audio on time", r.latency_on_time_ms))
    for name, p in (*rows, ("barge-in yield", r.barge_in_yield_ms)):
        t.add_row(name, str(p.n), ms(p.p50), ms(p.p90), ms(p.p99), ms(p.max))
    out.print(t)
    if len(r.latency_over_time) > 1:
        w = Table(title="reply latency over the run (ms)", title_justify="left")
        for col in ("span", "calls up", "replies", "p50", "p90", "p99"):
            w.add_column(col, justify="right")
        for x in r.latency_over_time:
            p = x.latency_ms
            w.add_row(f"{x.start_s:.0f}-{x.end_s:.0f} s", str(x.calls_up), str(p.n),
                      ms(p.p50), ms(p.p90), ms(p.p99))  # fmt: skip
        out.print(w)
    h = r.harness
    out.print(
        f"{r.placed} of {len(r.calls)} calls placed, {r.completed} completed, {r.passed} "
        f"passed; barge-ins {r.barge_ins_exercised} of {r.barge_ins_planned} planned exercised; "
        f"unanswered turns {r.unanswered_turns}",
        soft_wrap=True,
    )
    for status, kinds in r.failures.items():
        out.print(
            f"{status.replace('_', ' ')}: " + ", ".join(f"{k} {n}" for k, n in kinds.items()),
            soft_wrap=True,
        )
    out.print(
        f"harness: at most {h.max_calls_up} calls up; placed up to "
        f"{h.placement_lag_max_s or 0:.2f} s late ({h.calls_placed_late} late); caller frames "
        f"> {LATE_MS:.0f} ms late {h.caller_late_frames} (worst "
        f"{ms(h.caller_max_send_lag_ms)} ms); agent frames lost {h.agent_lost_frames}",
        soft_wrap=True,
    )
    nodes: dict[str, int] = {}
    for worker, n in r.per_worker.items():  # a Ray worker is NODE#k
        nodes[worker.split("#")[0]] = nodes.get(worker.split("#")[0], 0) + n
    per = "; ".join(
        f"{k} {v}" for k, v in (nodes if len(nodes) < len(r.per_worker) else r.per_worker).items()
    )
    what = "node" if len(nodes) < len(r.per_worker) else "loop"
    say(f"calls per {what} ({r.where}): {per}")


groups(
    load,
    {
        CALLER: "scenario calls rate duration loops",
        TRANSPORT: "transport signaling param codec header bearer_env ice_server loopback_only "
        "connect_timeout media_timeout",
        RUN: "ray_address",
        ASR: "settings_file model",
        OUTPUT: "output force as_json quiet",
    },
)


def register(app: typer.Typer) -> None:
    app.command("load")(load)
