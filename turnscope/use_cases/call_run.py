"""A scripted call placed (`turnscope call`, the demo): the run, how the call's evidence is
degraded, what the caller did, and the summary a run ends with."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console

from turnscope.actors.caller.scenario import Scenario
from turnscope.actors.caller.scenario_contract import scenario_contract
from turnscope.asr.settings import Settings
from turnscope.capture.transport import TransportOptions
from turnscope.live_call import place_call
from turnscope.runner import RunOutput
from turnscope.scoring.exercise import barge_ins_happened

SCRIPTED = ("barge_ins", "backchannels")  # what a script plans and a call may not exercise


@dataclass
class CallRun:
    """A placed call: the run (turns, verdict, bundle), why its evidence is degraded (empty:
    it is not), and the scripted caller's report (result.json's ``script``)."""

    run: RunOutput
    degraded: list[str] = field(default_factory=list)
    script: dict[str, Any] | None = None

    @property
    def passed(self) -> bool:
        """Scored as passed on evidence that is not degraded."""
        return not self.degraded and self.run.outcome.passed


@dataclass(frozen=True)
class Exercised:
    """How many of the script's planned barge-ins (or backchannels) the call exercised."""

    kind: str  # "barge_ins" or "backchannels"
    exercised: int
    planned: int


@dataclass(frozen=True)
class LatencySplit:
    """The median endpointing / processing / delivery (ms) of the replies that were split."""

    source: str
    split: int  # replies split
    replies: int  # replies paired
    medians: dict[str, float]


@dataclass(frozen=True)
class CallSummary:
    """What a call's closing lines say: the scripted moments exercised, the latency split, the
    turns, backchannels and seconds of call."""

    exercised: list[Exercised]
    latency_split: LatencySplit | None
    turns: int
    backchannels: int
    seconds: float


def call_summary(run: RunOutput, script: dict[str, Any] | None = None) -> CallSummary:
    """The summary of ``run`` (and of the caller's ``script`` report, when there was one)."""
    done = [Exercised(k, _happened(run, k, script[k]), script[k]["planned"])
            for k in SCRIPTED if script is not None and script[k]["planned"]]  # fmt: skip
    b, split = run.breakdown, None
    medians = b.medians() if b is not None else {}  # scoring.stats.median, the one median
    if b is not None and medians:
        n = sum(1 for x in b.replies if x.missing is None)
        if n:
            split = LatencySplit(str(b.source), n, len(b.replies), medians)
    r = run.result
    return CallSummary(done, split, len(r.assembly.turns), len(r.assembly.backchannels),
                       r.audio_ms / 1000)  # fmt: skip


def _happened(run: RunOutput, kind: str, counts: dict[str, int]) -> int:
    """Of the script's ``counts`` (planned, exercised): barge-ins as the verdict counted them,
    not as the caller spoke them; backchannels as the caller spoke them (no dimension counts
    them)."""
    if kind == "barge_ins":
        return barge_ins_happened(run.outcome.exercise, counts["planned"])
    return counts["exercised"]


async def place_scripted_call(
    options: TransportOptions,
    scenario: Scenario,
    settings: Settings,
    outdir: Path,
    *,
    console: Console | None = None,
    agent_trace: Path | None = None,
    caller_llm: Any = None,
    caller_from: list[dict[str, Any]] | None = None,
    otlp: str | None = None,
) -> CallRun:
    """Place the call (CallSetupError, its bundle written, when it cannot start), scored
    against the scenario's own contract."""
    run, _call, caller = await place_call(
        options,  # type: ignore[arg-type]
        scenario,
        settings,
        scenario_contract(scenario),
        outdir,
        console=console,
        agent_trace=agent_trace,
        caller_llm=caller_llm,
        caller_from=caller_from,
        otlp=otlp,
    )
    return CallRun(run, list(run.result.degraded), caller.report())


def place(options: TransportOptions, scenario: Scenario, settings: Settings, outdir: Path,
          **kwargs: Any) -> CallRun:  # fmt: skip
    """``place_scripted_call`` on an event loop of its own."""
    return asyncio.run(place_scripted_call(options, scenario, settings, outdir, **kwargs))
