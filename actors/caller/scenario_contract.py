"""The task contract a scenario carries or names: its suite task resolved, the barge-ins and
backchannels its caller will try, and the caller's lines as the caller channel's reference."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from turnscope.actors.caller.dysfluency import spoken_text
from turnscope.actors.caller.scenario import Scenario
from turnscope.errors import InputError
from turnscope.scoring.contract import Contract, Reference, contract_from_suite, suite_reference
from turnscope.scoring.exercise import Plan
from turnscope.scoring.suites.suite import find_task, load_suite

__all__ = ["scenario_contract", "scenario_plan", "scenario_task"]


def scenario_task(scenario: Scenario) -> dict[str, Any] | None:
    """``{id, suite, budgets, required_content}`` of the scenario's task, the suite resolved
    (local ``budgets``/``required_content`` override the suite task's); None without a task."""
    task = scenario.task
    if task is None:
        return None
    budgets: dict[str, Any] = {}
    required: list[str] | None = None
    if task.suite is not None:
        path = suite_reference(task.suite, _base(scenario))
        if not path.is_file():
            raise InputError(
                f"task.suite: no shipped suite {task.suite!r} and no file {path}",
                path=scenario.source,
                fix="give a shipped suite name (voice_starter) or a path relative to the scenario",
            )
        try:
            found = find_task(load_suite(path), str(task.id), source=path)
        except InputError as exc:
            raise InputError(f"task: {exc}", path=scenario.source) from None
        budgets = found.verifier_budgets() or {}
        required = list(found.required_content or []) or None
    if task.budgets is not None:
        budgets.update(task.budgets.model_dump(exclude_none=True))
    if task.required_content is not None:
        required = list(task.required_content)
    return {"id": task.id, "suite": task.suite, "budgets": budgets, "required_content": required}


def _base(scenario: Scenario) -> Path | None:
    return scenario.source.parent if scenario.source else None


def scenario_plan(scenario: Scenario) -> Plan:
    """The barge-ins and backchannels the scenario's caller will try, and the replies its
    script expects of the agent (an agent line after a caller's turn; a backchannel is none)."""
    kinds = [line.kind for line in scenario.script if line.speaker == "caller"]
    replies, asked = 0, False
    for line in scenario.script:
        if line.speaker == "caller" and line.kind != "backchannel":
            asked = True
        elif line.speaker == "agent" and asked:
            replies, asked = replies + 1, False
    return Plan(
        barge_ins=kinds.count("barge_in"),
        backchannels=kinds.count("backchannel"),
        replies=replies,
        source=f"scenario {scenario.name}",
        facts=tuple((name, fact.value) for name, fact in scenario.facts.items()),
    )


def scenario_contract(scenario: Scenario, reference: Reference | None = None) -> Contract:
    """The task contract a scenario carries (or names), with the caller's lines as the caller
    channel's WER reference (we know exactly what the caller said)."""
    task = scenario_task(scenario) or {}
    plan = scenario_plan(scenario)
    caller_text = " ".join(
        spoken_text(scenario, line)  # as the caller says it (dysfluency.py)
        for line in scenario.script
        if line.speaker == "caller" and line.spoken
    )
    ref = reference or Reference(
        {"caller": caller_text}, None, f"scenario {scenario.name}", scripted=True
    )
    if reference is None and scenario.recorded is not None and scenario.recorded.words == "asr":
        # A re-driven caller's words are the recorded call's transcript: WER against them
        # would grade the ASR by itself (``scenario from-recording --reference`` gives real ones).
        why = "the re-driven caller's words are the recorded call's ASR: no WER reference"
        ref = Reference({}, None, f"scenario {scenario.name} ({why})")
    if scenario.task is not None and scenario.task.suite is not None and task.get("id"):
        suite_path = suite_reference(scenario.task.suite, _base(scenario))
        base = contract_from_suite(suite_path, str(task["id"]))
        return Contract(
            budgets=task.get("budgets") or base.budgets,
            required_content=task.get("required_content") or base.required_content,
            task_id=base.task_id,
            suite=base.suite,
            suite_path=base.suite_path,
            reference=ref,
            plan=plan,
            expect=base.expect,
        )
    return Contract(
        budgets=task.get("budgets") or None,
        required_content=task.get("required_content"),
        reference=ref,
        plan=plan,
    )
