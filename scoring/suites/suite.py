"""Voice bench suites: `agent-learning.bench-suite.v1` voice suites as typed models.

A suite file is read once into ``Suite`` (its tasks ``SuiteTask``, their budgets the one
``Budgets`` model a scenario's task uses too); every problem in it is listed at once. Keys that
start with ``_`` are notes for people (``turnscope suite init`` writes ``_comment``) and ignored.
The JSON on disk is the suite contract's (../shared/contracts/verifier.md), unchanged.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from turnscope.errors import InputError
from turnscope.jsonio import joined_problems, problem_list, read_json
from turnscope.scoring.budgets import Budgets
from turnscope.scoring.suites.fixtures import Fixture
from turnscope.scoring.transcript import validate_dialogue
from turnscope.spelling import field_names

SUITE_KIND = "agent-learning.bench-suite.v1"
# A number given where the contract has a string (``"version": 1``, ``"id": 7``) is that string.
Text = Annotated[str, BeforeValidator(lambda v: str(v) if isinstance(v, (int, float)) else v)]
NonEmpty = Annotated[Text, Field(min_length=1)]


class _JsonView(BaseModel):
    """Read access by key, as to the dict on disk (``task["id"]``, ``task.get("budgets")``), for
    the readers that still take a suite as a dict; new code reads attributes. A value is its
    JSON form, except a suite's ``tasks``: the typed tasks (read by key in turn)."""

    def __getitem__(self, key: str) -> Any:
        if key not in self.model_fields_set:
            raise KeyError(key)
        value = getattr(self, key)
        if isinstance(value, list) and value and isinstance(value[0], _JsonView):
            return list(value)
        return self.model_dump(mode="json", exclude_unset=True, include={key})[key]

    def get(self, key: str, default: Any = None) -> Any:
        try:
            return self[key]
        except KeyError:
            return default

    def __contains__(self, key: object) -> bool:
        return key in self.model_fields_set


def _notes_ignored(value: Any) -> Any:
    """Keys starting with ``_`` are comments (JSON has none): dropped before validation."""
    if isinstance(value, Mapping):
        return {k: v for k, v in value.items() if not str(k).startswith("_")}
    return value


class SuiteTask(_JsonView):
    """One task: its budgets and required content (the contract a call is scored against), the
    reference dialogue, and the fixture that runs it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: NonEmpty
    instruction: str = ""
    budgets: Budgets | None = None
    required_content: list[Text] | None = None
    reference_dialogue: list[dict[str, Any]] | None = None
    guards: dict[str, Any] | None = None
    fixture: Fixture | None = None

    _strip = model_validator(mode="before")(_notes_ignored)

    @field_validator("reference_dialogue", mode="before")
    @classmethod
    def _dialogue(cls, value: Any) -> Any:
        if value is None:
            return None
        try:
            return validate_dialogue(value)
        except InputError as exc:
            raise PydanticCustomError("dialogue", str(exc)) from None

    def verifier_budgets(self) -> dict[str, Any] | None:
        """The budgets as the verifier reads them (None when the task sets none)."""
        return None if self.budgets is None else self.budgets.as_verifier()


class Suite(_JsonView):
    """A voice suite: what it is called (name and version name its scorecards and baselines)
    and its tasks, in order."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["agent-learning.bench-suite.v1"]
    control: Literal["voice"]
    modality: Literal["voice"] = "voice"
    name: NonEmpty
    version: NonEmpty
    description: str = ""
    tasks: list[SuiteTask]
    _source: Path | None = PrivateAttr(default=None)

    _strip = model_validator(mode="before")(_notes_ignored)

    @property
    def source(self) -> Path | None:
        """The file it was read from (None for a suite given as a dict)."""
        return self._source

    @property
    def title(self) -> str:
        return f"{self.name} v{self.version}"

    def task(self, task_id: str) -> SuiteTask:
        """The task ``task_id``; InputError listing the known ids otherwise."""
        for task in self.tasks:
            if task.id == task_id:
                return task
        ids = ", ".join(t.id for t in self.tasks)
        raise InputError(f"no task {task_id!r} in the suite (tasks: {ids})", path=self.source)


def validate_suite(obj: Any, *, source: str | Path | None = None) -> Suite:
    """``obj`` as a ``Suite``: InputError naming ``source`` with every problem in one line."""
    if not isinstance(obj, Mapping):
        raise InputError("a suite must be a JSON object", path=source)
    if obj.get("kind") != SUITE_KIND:  # another file altogether: its fields say nothing
        raise InputError(
            f"not a bench suite: kind is {obj.get('kind')!r}, expected {SUITE_KIND!r}",
            path=source,
            fix=f'a suite starts {{"kind": "{SUITE_KIND}", "control": "voice", ...}}; '
            "`turnscope suite init NAME` writes one",
        )
    if str(obj.get("control")) != "voice":
        raise InputError(
            f"a suite of another kind: control is {obj.get('control')!r}, turnscope runs "
            "voice suites (control 'voice')",
            path=source,
        )
    problems: list[str] = []
    suite = None
    try:
        suite = Suite.model_validate(obj)
    except ValidationError as exc:
        problems += [_readable(p) for p in problem_list(exc, known=field_names(Suite))]
    problems += _duplicate_ids(obj.get("tasks"))
    if problems:
        raise InputError(joined_problems(problems), path=source)
    assert suite is not None
    suite._source = None if source is None else Path(source)
    return suite


def _readable(problem: str) -> str:
    """``version: Field required`` says what the version is for."""
    if problem.startswith("version: Field required"):
        return (
            'no "version": add one, e.g. "version": "1" (a scorecard and its baseline name the '
            "suite by name and version)"
        )
    return problem


def _duplicate_ids(tasks: Any) -> list[str]:
    if not isinstance(tasks, list):
        return []
    ids = Counter(str(t["id"]) for t in tasks if isinstance(t, Mapping) and "id" in t)
    return [f"task id {tid!r} appears {n} times" for tid, n in ids.items() if n > 1]


def load_suite(suite: Suite | Mapping[str, Any] | str | Path) -> Suite:
    """A suite from a JSON file path, a dict, or a ``Suite`` (as it is), validated."""
    if isinstance(suite, Suite):
        return suite
    if isinstance(suite, (str, Path)):
        return validate_suite(read_json(suite, what="suite file"), source=suite)
    return validate_suite(suite)


def find_task(suite: Suite, task_id: str, *, source: str | Path | None = None) -> SuiteTask:
    """The task with ``task_id``; InputError listing the known ids otherwise."""
    try:
        return suite.task(task_id)
    except InputError as exc:
        if source is None or suite.source is not None:
            raise
        raise InputError(str(exc), path=source) from None
