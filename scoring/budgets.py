"""A task's budgets: one model for a suite task and a scenario's ``task`` (the contract both
carry). The verifier reads them as ``{"max_latency_ms": N}`` (``Budgets.as_verifier``)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_core import PydanticCustomError

MAX_BUDGET_MS = 3_600_000  # an hour: no call is longer


def _no_bool(value: Any) -> Any:
    """``true`` is not a number of milliseconds (pydantic would read it as 1)."""
    if isinstance(value, bool):
        raise PydanticCustomError("ms_bool", "expected a number of milliseconds, not true/false")
    return value


class Budgets(BaseModel):
    """Task budgets. ``max_latency_ms``: the verifier's latency budget (its default is 1200)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_latency_ms: (
        Annotated[int, BeforeValidator(_no_bool), Field(gt=0, le=MAX_BUDGET_MS)] | None
    ) = None

    def as_verifier(self) -> dict[str, Any]:
        """The budgets the verifier reads (only those given: its defaults fill the rest)."""
        return self.model_dump(exclude_none=True)


def verifier_budgets(budgets: Budgets | dict[str, Any] | None) -> dict[str, Any] | None:
    """``budgets`` as the verifier's dict (None stays None)."""
    if budgets is None:
        return None
    return budgets.as_verifier() if isinstance(budgets, Budgets) else dict(budgets)
