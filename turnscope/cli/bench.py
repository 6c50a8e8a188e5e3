"""`turnscope bench`: score a voice suite against references or captured transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from turnscope.cli.console import out
from turnscope.cli.render import bench_table
from turnscope.errors import InputError
from turnscope.jsonio import write_json
from turnscope.scoring.bench import BenchError, check_evidence_class, run_bench
from turnscope.scoring.suite import load_suite
from turnscope.scoring.transcript import load_dialogue


def collect_transcripts(suite: dict[str, Any], directory: Path) -> dict[str, list[dict]]:
    """``{task_id: dialogue}`` for every task that has ``DIR/<task_id>.json``."""
    if not directory.is_dir():
        raise InputError("no such transcripts directory", path=directory, fix="check the path")
    found = {}
    for task in suite["tasks"]:
        path = directory / f"{task['id']}.json"
        if path.exists():
            found[str(task["id"])] = load_dialogue(path)
    return found


def bench(
    suite: Path = typer.Argument(..., help="Voice suite JSON (agent-learning.bench-suite.v1)."),
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
) -> int:
    """Score every task of SUITE; exit 0 when all scored tasks pass, 1 when one fails."""
    data = load_suite(suite)
    if use_reference == (transcripts is not None):
        raise InputError("give exactly one of --use-reference or --transcripts DIR")
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
        out.print(bench_table(result))
        if output is not None:
            out.print(f"wrote {output}")
    agg = result["aggregate"]
    if agg["scored"] == 0:
        out.print("every task is void: nothing was scored, so nothing passed")
        return 1
    return 0 if agg["passed"] == agg["scored"] else 1


def register(app: typer.Typer) -> None:
    app.command("bench")(bench)
