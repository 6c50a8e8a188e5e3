"""The task contract a call is scored against: budgets, required content, reference texts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from turnscope.capture.channels import CHANNELS
from turnscope.configs import config_path
from turnscope.errors import InputError
from turnscope.jsonio import every_problem, read_json
from turnscope.scoring.budgets import Budgets
from turnscope.scoring.exercise import Plan
from turnscope.scoring.suites.suite import Suite, SuiteTask, find_task, load_suite
from turnscope.scoring.transcript import validate_dialogue
from turnscope.scoring.wer import channel_texts


@dataclass(frozen=True)
class Reference:
    """What was really said, per channel, for WER (and the reference turns when known)."""

    texts: dict[str, str]
    turns: list[dict[str, Any]] | None = None
    source: str = ""
    # The caller's lines of a scenario's script (a reacting caller's are replaced by those it
    # really spoke): decided where the reference is made, never read from ``source``'s words.
    scripted: bool = False


@dataclass(frozen=True)
class Contract:
    """Budgets and required content of a task, where they came from, and its reference.
    ``budgets`` is the one ``Budgets`` model (a dict given is read into it)."""

    budgets: Budgets | None = None
    required_content: list[Any] | None = None
    task_id: str | None = None
    suite: Suite | None = field(default=None, repr=False)
    suite_path: str | None = None
    reference: Reference | None = None
    plan: Plan | None = None  # what the task meant to exercise (a scenario's barge-ins ...)
    expect: dict[str, Any] | None = None  # the outcome its fixture expects (suites' ``expect``)

    def __post_init__(self) -> None:
        if isinstance(self.budgets, Mapping):  # frozen: set once, here
            object.__setattr__(self, "budgets", _budgets(self.budgets))

    @property
    def verifier_budgets(self) -> dict[str, Any] | None:
        """The budgets as the verifier reads them (None when none are set)."""
        return None if self.budgets is None else self.budgets.as_verifier()

    @property
    def max_latency_ms(self) -> int | None:
        return None if self.budgets is None else self.budgets.max_latency_ms

    @property
    def planned(self) -> Plan | None:
        """The explicit plan, else the barge-ins of the reference turns (when they are known)."""
        if self.plan is not None:
            return self.plan
        if self.reference is not None and self.reference.turns:
            return Plan.from_turns(self.reference.turns, source=self.reference.source)
        return None

    def to_dict(self) -> dict[str, Any]:
        return {
            "suite": self.suite.name if self.suite else None,
            "suite_path": self.suite_path,
            "task_id": self.task_id,
            "budgets": self.verifier_budgets,
            "required_content": self.required_content,
            "reference_source": self.reference.source if self.reference else None,
        }


def _budgets(raw: Mapping[str, Any]) -> Budgets:
    try:
        return Budgets.model_validate(dict(raw))
    except ValidationError as exc:
        raise InputError(every_problem(exc, prefix="budgets")) from None


def reference_from_obj(obj: Any, *, source: str) -> Reference:
    """A reference from ``{"caller": str, "agent": str}``, a turn list or ``{"turns": [...]}``."""
    if isinstance(obj, Mapping) and any(isinstance(obj.get(ch), str) for ch in CHANNELS):
        texts = {ch: str(obj.get(ch) or "") for ch in CHANNELS if ch in obj}
        turns = obj.get("turns") if isinstance(obj.get("turns"), list) else None
        return Reference(texts, turns, source)
    if isinstance(obj, list) or (isinstance(obj, Mapping) and "turns" in obj):
        turns = _reference_turns(obj, source)
        return Reference(channel_texts(turns), turns, source)
    raise InputError(
        'a reference must be {"caller": "...", "agent": "..."}, a list of turns, '
        'or {"turns": [...]}',
        path=source,
    )


def _reference_turns(obj: Any, source: str) -> list[dict[str, Any]]:
    turns = obj.get("turns") if isinstance(obj, Mapping) else obj
    if not isinstance(turns, list):
        raise InputError("expected a list of turns", path=source)
    if all(isinstance(t, Mapping) and "start_ms" in t for t in turns):
        return validate_dialogue(turns, source=source)
    for i, t in enumerate(turns):  # untimed turns are fine for WER: speaker and text suffice
        if not isinstance(t, Mapping) or "speaker" not in t:
            raise InputError(f"turn [{i}] needs a speaker and a text", path=source)
    return [dict(t) for t in turns]


def load_reference(path: str | Path) -> Reference:
    """Read a reference JSON file."""
    return reference_from_obj(read_json(path, what="reference file"), source=str(path))


def task_contract(
    task: SuiteTask,
    *,
    suite: Suite | None = None,
    suite_path: str | Path | None = None,
    reference: Reference | None = None,
    plan: Plan | None = None,
) -> Contract:
    """A suite task's contract: its budgets and required content, its reference_dialogue as
    the reference unless another is given. Every entry path (a replay against a suite task, a
    fixture, a scenario naming a suite) builds its contract here."""
    if reference is None and task.reference_dialogue:
        turns = list(task.reference_dialogue)
        reference = Reference(channel_texts(turns), turns, f"{suite_path or 'suite'}#{task.id}")
    return Contract(
        budgets=task.budgets,
        required_content=task.required_content,
        task_id=task.id,
        suite=suite,
        suite_path=None if suite_path is None else str(suite_path),
        reference=reference,
        plan=plan,
        expect=_expect(task),
    )


def _expect(task: SuiteTask) -> dict[str, Any] | None:
    """The outcome the task's fixture expects, when it says."""
    expect = task.fixture.expect if task.fixture is not None else None
    return None if expect is None else expect.model_dump(mode="json")


def contract_from_suite(suite_path: str | Path, task_id: str) -> Contract:
    """The contract of task ``task_id`` in a suite file; its reference_dialogue is the reference."""
    suite = load_suite(suite_path)
    task = find_task(suite, task_id, source=suite_path)
    return task_contract(task, suite=suite, suite_path=suite_path)


# --- a scenario's task (a scripted call's contract) -------------------------------------------


def suite_reference(suite: str, base_dir: Path | None) -> Path:
    """The suite file a scenario names: a shipped suite's name, or a path relative to it."""
    if suite.endswith(".json") or "/" in suite:
        path = Path(suite)
        return path if path.is_absolute() or base_dir is None else base_dir / path
    return config_path("suites", f"{suite}.json")


def resolve_contract(
    *,
    suite: str | Path | None = None,
    task: str | None = None,
    reference: str | Path | None = None,
    max_latency_ms: int | None = None,
    require: Sequence[str] = (),
) -> Contract:
    """Combine the options a command was given into one contract (explicit options win)."""
    if (suite is None) != (task is None):
        raise InputError("--suite and --task go together: give both or neither")
    contract = contract_from_suite(suite, task) if suite is not None else Contract()
    budgets = contract.budgets
    if max_latency_ms is not None:
        budgets = _budgets({**(contract.verifier_budgets or {}), "max_latency_ms": max_latency_ms})
    return Contract(
        budgets=budgets,
        required_content=list(require) if require else contract.required_content,
        task_id=contract.task_id,
        suite=contract.suite,
        suite_path=contract.suite_path,
        reference=load_reference(reference) if reference is not None else contract.reference,
        plan=contract.plan,
        expect=contract.expect,
    )
