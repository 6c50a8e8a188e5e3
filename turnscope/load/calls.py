"""One event loop's share of a load run: its callers, each placed at its planned time through
the same ``place_call`` as ``turnscope call``, each call a full bundle."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from turnscope.actors.caller.llm import LlmEndpoint
from turnscope.asr.settings import Settings
from turnscope.bundle_writer import RunIncomplete
from turnscope.errors import CallSetupError, TurnscopeError
from turnscope.load.plan import Slot
from turnscope.load.record import CALLS, CallRecord, finished_record
from turnscope.otlp.shared import SharedSpans


class Event(BaseModel):
    """What a loop tells the driver as it goes: a call is up, or a call is over (its record)."""

    kind: Literal["up", "done"]
    slot: int
    record: CallRecord | None = None


@dataclass
class LoadJob:
    """Everything a loop needs, picklable (it crosses to worker processes and Ray actors)."""

    options: object  # CallOptions | TelephonyOptions
    scenario: Path
    settings: Settings
    outroot: Path
    secrets: list[str] = field(default_factory=list, repr=False)  # to scrub, in every process
    duration_s: float | None = None
    otlp: SharedSpans | None = None  # --otlp: the run's one receiver's batches
    caller_llm: LlmEndpoint | None = None  # --caller-llm: what an LLM-driven caller asks

    def folder(self, slot: int, attempt: int) -> Path:
        name = f"call-{slot + 1:04d}" + (f"-{attempt}" if attempt > 1 else "")
        return self.outroot / CALLS / name


class Stopping:
    """Set by a signal (or the driver): no new call is placed; the live ones end and are
    written as usual."""

    def __init__(self) -> None:
        self.reason: str | None = None
        self.event = asyncio.Event()

    def __call__(self, reason: str) -> None:
        self.reason = self.reason or reason
        self.event.set()

    async def sleep(self, seconds: float) -> None:
        """Sleep, or less if the run is stopped meanwhile."""
        if seconds > 0:
            with contextlib.suppress(TimeoutError, asyncio.TimeoutError):
                await asyncio.wait_for(self.event.wait(), seconds)


@dataclass
class Prepared:
    """A loop's scenario, its contract and the caller's lines, spoken once for all its calls."""

    scenario: Any
    contract: Any
    lines: list[Any]


async def prepare(job: LoadJob) -> Prepared:
    """Read the scenario, speak the caller's lines and load the model, before any call."""
    from turnscope import redact
    from turnscope.actors.caller.lines import caller_lines
    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.asr.transcriber import Transcriber
    from turnscope.live_call import place_call  # noqa: F401 (its imports, before any call)
    from turnscope.offload import offload_stoppable
    from turnscope.settle import BUNDLE_MODULES, import_now

    redact.register(job.secrets)
    scenario = load_scenario(job.scenario)
    lines = await offload_stoppable(caller_lines, scenario)  # cancelled: stops speaking
    await Transcriber(job.settings.asr, job.settings.confirm).ready()
    import_now(BUNDLE_MODULES)  # not on the bundle's thread as the first call ends: see there
    return Prepared(scenario, scenario_contract(scenario), lines)


async def run_slots(
    job: LoadJob,
    ready: Prepared,
    slots: list[Slot],
    start_at: float,
    emit: Callable[[Event], None],
    *,
    worker: str,
    stopping: Stopping,
) -> None:
    """Place every slot's calls at their times (``start_at``: the run's start, epoch seconds);
    an ``Event`` for each call up and each call over."""
    scenario, contract, lines = ready.scenario, ready.contract, ready.lines
    end_at = None if job.duration_s is None else start_at + job.duration_s

    async def one(slot: Slot, attempt: int, planned: float) -> CallRecord:
        from turnscope.live_call import place_call

        outdir = job.folder(slot.index, attempt)
        base = {"slot": slot.index, "attempt": attempt, "worker": worker, "planned_s": planned}
        if stopping.reason is not None:
            return CallRecord(**base, status="not_run", kind="interrupted", reason=stopping.reason)
        placed = time.time() - start_at
        up: dict[str, float] = {}

        def connected(_call: object) -> None:
            up["at"] = time.time() - start_at
            emit(Event(kind="up", slot=slot.index))

        base.update(placed_s=round(placed, 3))
        try:
            run, call, caller = await place_call(
                job.options,  # type: ignore[arg-type]
                scenario,
                job.settings,
                contract,
                outdir,
                console=None,
                lines=lines,
                on_connected=connected,
                otlp=job.otlp,
                caller_llm=job.caller_llm,
            )
        except CallSetupError as exc:  # place_call wrote the bundle that says why
            return CallRecord(
                **base,
                status="setup_failed",
                kind=exc.kind.value,
                reason=str(exc),
                ended_s=round(time.time() - start_at, 3),
                bundle=str(outdir),
            )
        except RunIncomplete as exc:  # the call ran and was scored; its bundle is not whole
            if exc.run is None or exc.call is None:
                return incomplete_record(base, exc, outdir)
            record = finished_record(base, exc.run, exc.call, exc.caller)
            record.missing = exc.missing
            record.degraded.append(str(exc))
        except TurnscopeError as exc:  # a call that could not run, and the like
            return CallRecord(**base, status="error", kind=type(exc).__name__, reason=str(exc))
        else:
            record = finished_record(base, run, call, caller)
        record.connected_s = round(up.get("at", placed), 3)
        record.ended_s = round(time.time() - start_at, 3)
        return record

    def incomplete_record(base: dict[str, Any], exc: RunIncomplete, outdir: Path) -> CallRecord:
        return CallRecord(
            **base, status="error", kind="bundle incomplete", reason=str(exc),
            missing=exc.missing, bundle=str(outdir),
        )  # fmt: skip

    async def caller(slot: Slot) -> None:
        await stopping.sleep(start_at + slot.offset_s - time.time())
        planned, attempt = slot.offset_s, 1
        while True:
            try:
                record = await one(slot, attempt, planned)
            except Exception as exc:  # a bug in one call must not take the others down
                record = CallRecord(
                    slot=slot.index,
                    attempt=attempt,
                    worker=worker,
                    planned_s=planned,
                    status="error",
                    kind=type(exc).__name__,
                    reason=f"{type(exc).__name__}: {exc}",
                )
            emit(Event(kind="done", slot=slot.index, record=record))
            now = time.time()
            if end_at is None or now >= end_at or stopping.reason is not None:
                return
            planned, attempt = now - start_at, attempt + 1  # a redial is due at once

    await asyncio.gather(*(caller(s) for s in slots))
