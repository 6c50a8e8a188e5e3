"""What `turnscope load` shows as it runs and after: the progress line with its live counts,
the warnings, and the aggregate's tables."""

from __future__ import annotations

from typing import Any

from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from turnscope.cli.console import out, warn_line
from turnscope.cli.load_tables import print_load
from turnscope.errors import InputError
from turnscope.load.calls import Event
from turnscope.load.plan import LoadPlan
from turnscope.load.report import LoadReport
from turnscope.load.run import LoadObserver


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
        passed = sum(1 for r in self.records if r.passed)
        failed = len(self.records) - done
        kinds = "; ".join(f"{k} {n}" for k, n in sorted(self.kinds.items()))
        return (
            f"calls up {self.up} · completed {done} (passed {passed}) · not completed {failed}"
            + (f" ({kinds})" if kinds else "")
        )


class LoadView(LoadObserver):
    """The run as the terminal shows it: warnings as they come, the progress line while the
    calls are placed, then the summary (JSON with ``as_json``)."""

    def __init__(self, *, quiet: bool, as_json: bool) -> None:
        self.tally = Tally()
        self.as_json = as_json
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(),
                            TextColumn("{task.fields[line]}"), TimeElapsedColumn(), console=out,
                            disable=quiet or as_json, transient=False)  # fmt: skip
        self.task: Any = None

    def warning(self, line: str) -> None:
        warn_line(line)

    def placing(self, plan: LoadPlan) -> None:
        total = None if plan.duration_s else plan.calls
        self.task = self.bar.add_task("starting", total=total, line="")
        self.bar.start()

    def ready(self, nodes: int | None) -> None:
        where = "calling" if nodes is None else f"calling from {nodes} node(s)"
        self.bar.update(self.task, description=where)

    def event(self, event: Event) -> None:
        self.tally(event)
        self.bar.update(self.task, completed=len(self.tally.records), line=self.tally.line())

    def finished(self) -> None:
        self.close()

    def aggregated(self, report: LoadReport) -> None:
        if self.as_json:
            out.print_json(report.model_dump_json(exclude={"calls"}))
        else:
            print_load(report)

    def close(self) -> None:
        """The progress line stopped (once; again does nothing)."""
        if self.task is not None:
            self.bar.stop()
            self.task = None
