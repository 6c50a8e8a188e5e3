"""What `turnscope bench` shows of a suite's run or score: bar, tables, closing lines, exit."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich import progress as rp

from turnscope.cli.console import err, fail_line, out, say, warn_line
from turnscope.cli.exit_codes import ExitCode

if TYPE_CHECKING:
    from turnscope.use_cases.suite_run import SuiteProgress, SuiteRun
    from turnscope.use_cases.suite_score import SuiteScore


class SuiteBar:
    """The progress bar of a suite's run, shown from the first progress the run reports (after
    its input is checked) until ``close``; on Ray it says failed and retried fixtures too."""

    def __init__(self, *, quiet: bool, ray: bool) -> None:
        self.quiet, self.ray = quiet, ray
        self.bar: Any = None
        self.job: Any = None

    def __call__(self, p: SuiteProgress) -> None:
        if self.bar is None:
            columns = (rp.TextColumn("{task.description}"), rp.BarColumn(),
                       rp.MofNCompleteColumn(), rp.TimeElapsedColumn(),
                       rp.TimeRemainingColumn())  # fmt: skip
            self.bar = rp.Progress(*columns, console=out, disable=self.quiet, transient=True)
            self.bar.start()
            self.job = self.bar.add_task(p.name, total=p.total)
        if p.failed is not None:
            description = f"{p.name} (failed {p.failed}, retried {p.retried})"
            self.bar.update(self.job, completed=p.done, description=description)
        else:
            self.bar.update(self.job, completed=p.done)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.stop()


def bench_exit(result: dict[str, Any]) -> int:
    """0 when every scored task passed, 1 when one failed or nothing was scored (said so)."""
    agg = result["aggregate"]
    if agg["scored"] == 0:
        warn_line("every task is void: nothing was scored, so nothing passed")
        return 1
    return 0 if agg["passed"] == agg["scored"] else 1


def score_code(scored: SuiteScore, output: Path | None, *, as_json: bool) -> int:
    """The scored suite as JSON or its table (and where it was written); the exit code."""
    if as_json:
        out.print_json(json.dumps(scored.result))
    else:
        from turnscope.cli.bench_table import bench_table

        out.print(bench_table(scored.result, scored.exercise, scored.reasons))
        wrote = [f"wrote {output}"] if output is not None else []
        if scored.scorecard_path is not None:
            wrote.append(f"scorecard: {scored.scorecard_path} (and .html)")
        if wrote:
            say("; ".join(wrote))
    return bench_exit(scored.result)


def fixtures_code(run: SuiteRun, *, as_json: bool = False) -> int:
    """The suite's run: its tables (``as_json``: the result JSON alone on stdout, the rest on
    stderr), void tasks, where it ran and what it wrote; the exit code (4 when an upload
    failed or the Ray cluster went away)."""
    if as_json:
        out.print_json(json.dumps(run.result))
    else:
        _tables(run)
    tell = (lambda m: err.print(m, markup=False, soft_wrap=True)) if as_json else say
    for line in run.warnings:
        warn_line(line)
    for task_id, why in run.void():
        warn_line(f"task {task_id} is void: {why}")
    if run.ray is not None:
        say_where(run.ray, tell)
    kept = f"per-task bundles in {run.bundles}" if run.bundles else "no task ran: no bundles"
    tell(f"scorecard: {run.scorecard_path} (and .html); {kept}")
    if run.upload_error is not None:
        fail_line(run.upload_error)
        return ExitCode.INCOMPLETE  # an upload failed, the Ray cluster went away
    if run.uploaded:
        tell(f"uploaded: {', '.join(run.uploaded)}")
    if run.ray is not None and run.ray.gone:
        fail_line(f"{run.ray.gone}: {run.lost} fixture(s) did not run (void); what finished is "
                  f"kept in {run.bundles} (start the cluster again and rerun)")  # fmt: skip
        return ExitCode.INCOMPLETE  # an upload failed, the Ray cluster went away
    if run.interrupted is not None:  # what was captured is kept, the rest is void: say which
        fail_line(f"{run.interrupted}: {len(run.void())} task(s) void (not run, or cut short: "
                  "each named above); the scorecard holds the rest, the bundles kept")  # fmt: skip
        return ExitCode.INCOMPLETE
    if run.void_of_bad_input:
        fail_line("every task is void for bad input in its fixture (each named above): fix "
                  "those files or keys and run the suite again")  # fmt: skip
        return ExitCode.BAD_INPUT
    return bench_exit(run.result)


def _tables(run: SuiteRun) -> None:
    from turnscope.cli.bench_table import bench_table
    from turnscope.cli.narrow import print_scorecard

    exercise = {r.scores.task_id: r.scores.exercise for r in run.fixtures}
    out.print(bench_table(run.result, exercise, run.reasons))
    print_scorecard(out, run.scorecard)  # and its turn-taking block
    voice_lines(run.scorecard)


def voice_lines(card: dict[str, Any]) -> None:
    """Per tag, each caller voice as the project's ASR heard it over the tag's live calls."""
    from turnscope.scoring.voice_wer import VoiceAcross, voice_line

    for tag, voices in card.get("voices", {}).items():
        for v in voices:
            line = f"{tag}: {voice_line(VoiceAcross.model_validate(v), over='task')}"
            out.print(line, soft_wrap=True, markup=False)


def say_where(run: Any, tell: Callable[[str], None] = say) -> None:
    """Which node ran how many fixtures, and what did not start (``tell``: stderr under
    ``--json``, so stdout stays the result document)."""
    for w in run.warnings:
        warn_line(w)

    def asr(node_id: str) -> str:
        kinds = Counter(run.devices.get(node_id, []))
        return " + ".join(f"{k} x{n}" for k, n in sorted(kinds.items())) or "no worker"

    parts = [
        f"{n.address} ({n.cpus:g} CPUs{f', {n.gpus:g} GPUs' if n.gpus else ''}, ASR on "
        f"{asr(n.node_id)}): {run.per_node.get(n.node_id, 0)}"
        for n in run.nodes
    ]
    tell(f"ray: {len(run.nodes)} node(s), fixtures per node: {'; '.join(parts)}; "
        f"retried {run.retried}")  # fmt: skip
