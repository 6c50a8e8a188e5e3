"""What a load run records of its spans (no server imports: load.json's readers use these): how
each call found its spans among every call's, and what the run's one receiver took in."""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field

from turnscope.scoring.otlp_spans import Received

RUN_FILE = "agent_spans.jsonl"
# The run's file: past this, batches are counted, not kept (a --duration run of hours with a
# chatty agent). Each call reads only what arrived during it (tap.MAX_READ).
MAX_RUN_BYTES = 512 * 1024 * 1024


class SpansBy(str, Enum):
    """result.json ``source.details.otlp.spans_by`` and a load record's ``spans_by``."""

    OWN_ID = "own_id"  # a span names the call's session id or carrier sid
    ONLY_ONE = "only_one"  # one conversation overlapped the call
    NOT_SEPARABLE = "not_separable"  # several did, none naming the call
    NONE = "none"  # no span arrived during the call


class OtlpSummary(BaseModel):
    """What the run's receiver took in, for load.json."""

    endpoint: str
    file: str = RUN_FILE
    received: Received
    problems: list[str] = Field(default_factory=list)
    bound_bytes: int = MAX_RUN_BYTES  # the file's bound
