"""A voice suite scored on transcripts it is given (`turnscope bench --use-reference` or
``--transcripts DIR``): nothing runs, each dialogue is scored against its task; the result and,
beside it, the scorecard `turnscope gate` reads, as a run of the fixtures writes them."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnscope.configs import resolve
from turnscope.errors import BenchError, InputError
from turnscope.jsonio import write_json
from turnscope.outdir import output_file
from turnscope.scoring.exercise import task_exercise, task_facts
from turnscope.scoring.suites.bench import check_evidence_class, run_bench
from turnscope.scoring.suites.scorecard import TaskScores, scorecard
from turnscope.scoring.suites.suite import load_suite
from turnscope.scoring.suites.why import failure_reason
from turnscope.scoring.transcript import load_dialogue
from turnscope.use_cases.checks import as_path, has_tasks
from turnscope.use_cases.scorecard_files import write_scorecard_page


@dataclass
class SuiteScore:
    """``result`` (bench.json's document) and, per task scored, which dimensions its dialogue
    exercised (``{task_id: {dimension: Exercise.to_dict()}}``)."""

    result: dict[str, Any]
    exercise: dict[str, dict[str, dict[str, Any]]]
    scorecard_path: Path | None = None  # written beside the result (none without one)
    reasons: dict[str, str] = field(default_factory=dict)  # why each failed task failed

    @property
    def passed(self) -> bool:
        """Something was scored and every scored task passed."""
        agg = self.result["aggregate"]
        return bool(agg["scored"]) and agg["passed"] == agg["scored"]


def collect_transcripts(suite: Any, directory: Path) -> dict[str, list[dict]]:
    """``{task_id: dialogue}`` for every task that has ``DIR/<task_id>.json``."""
    if not directory.is_dir():
        raise InputError("no such transcripts directory", path=directory, fix="check the path")
    found = {}
    for task in suite["tasks"]:
        path = directory / f"{task['id']}.json"
        if path.exists():
            found[str(task["id"])] = load_dialogue(path)
    return found


def score_suite(
    suite: str | Path,
    *,
    transcripts: str | Path | None = None,
    evidence_class: str | None = None,
    output: str | Path | None = None,
    scorecard_path: str | Path | None = None,
) -> SuiteScore:
    """Score ``suite`` (a path, or a shipped suite's name): each task's ``DIR/<task_id>.json``
    from ``transcripts``, or without it each task's own reference dialogue. Rows carry
    ``evidence_class`` (default captured_fixture); the result is written to ``output``, the
    scorecard to ``scorecard_path`` (default: beside ``output``, .scorecard.json)."""
    output, transcripts, card_path = as_path(output), as_path(transcripts), as_path(scorecard_path)
    output_file(output, "-o")
    output_file(card_path, "--scorecard")
    path = resolve("suites", suite)
    data = load_suite(path)
    has_tasks(data, path)
    evidence = evidence_class or "captured_fixture"
    try:
        check_evidence_class(evidence)
    except BenchError as exc:
        raise InputError(str(exc)) from None
    if transcripts is None:
        submission = {str(t["id"]): t["reference_dialogue"] for t in data["tasks"]
                      if t.get("reference_dialogue") is not None}  # fmt: skip
    else:
        submission = collect_transcripts(data, transcripts)
    result = run_bench(
        data, control_mode="artifact_in", submission=submission, evidence_class=evidence
    )
    tasks = {str(t["id"]): t for t in data["tasks"]}
    facts = {tid: task_facts(tasks[tid], dialogue)
             for tid, dialogue in submission.items() if tid in tasks}  # fmt: skip
    seen = {tid: {d: e.to_dict() for d, e in task_exercise(tasks[tid], f).items()}
            for tid, f in facts.items()}  # fmt: skip
    reasons = {str(r["task_id"]): failure_reason(facts[str(r["task_id"])])
               for r in result["per_task"] if r["verdict"] == "fail"}  # fmt: skip
    if output is not None:
        write_json(output, result)
        card_path = card_path or output.with_suffix(".scorecard.json")
    if card_path is None:
        return SuiteScore(result, seen, reasons=reasons)
    card = scorecard(_task_scores(tasks, result, seen, reasons))
    card["suite"] = {"name": data.get("name"), "version": data.get("version")}
    write_json(card_path, card)
    write_scorecard_page(card_path, card)
    return SuiteScore(result, seen, card_path, reasons)


def _task_scores(
    tasks: dict[str, Any],
    result: dict[str, Any],
    seen: dict[str, dict[str, dict[str, Any]]],
    reasons: dict[str, str],
) -> list[TaskScores]:
    """Each row of the result as the scorecard takes it: a failed task says why, in the
    verifier's facts, as a fixture run's does."""
    out = []
    for row in result["per_task"]:
        tid = str(row["task_id"])
        task = tasks[tid]
        fixture = task.get("fixture")
        tags = list(fixture.get("tags") or []) if isinstance(fixture, dict) else []
        if row["verdict"] == "void":
            note = row["result"].get("explanation") or ""
            out.append(TaskScores(tid, tags, "void", {}, row["evidence_class"], note))
            continue
        reason = reasons.get(tid, "")
        dims = dict(row["result"].get("components") or {})
        floors = dict(fixture.get("floors") or {}) if isinstance(fixture, dict) else {}
        out.append(TaskScores(tid, tags, row["verdict"], dims, row["evidence_class"],
                              exercise=seen.get(tid, {}), reason=reason,
                              floors=floors))  # fmt: skip
    return out
