"""The live terminal view: each turn printed the moment it is final, with latency and barge-ins.

On a terminal a status line shows who is speaking and the running verdict; elsewhere (CI logs,
pipes) only the turn lines are printed.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from rich.console import Console
from rich.live import Live
from rich.text import Text

from turnscope.actors.caller.notes import CallerFindings
from turnscope.asr.assembly import Assembly, Turn
from turnscope.asr.events import SpeechEvent, SpeechStart, SpeechStop
from turnscope.asr.settings import Settings
from turnscope.capture.frames import AGENT, CALLER
from turnscope.capture.source import SourceInfo
from turnscope.explain import LiveSpanSplit, hops_line, rtvi_breakdown
from turnscope.pipeline import PipelineResult, Sink, TurnUpdate
from turnscope.reasons import Findings, Note, Severity, assembled
from turnscope.scoring.latency import Breakdown, summary_line
from turnscope.scoring.otlp_spans import AgentSpan
from turnscope.scoring.turn_taking_input import BACKCHANNELS_KEY, PAUSES_KEY
from turnscope.scoring.turn_taking_live import LiveTurnTaking
from turnscope.scoring.verifier import DEFAULT_MAX_LATENCY_MS, Facts, verifier_facts
from turnscope.sinks import LiveVerifier

_STYLE = {CALLER: "cyan", AGENT: "magenta"}
SPANS_EVERY_S = 0.5  # the spans received so far are reconciled at most this often


@runtime_checkable
class SpanFeed(Protocol):
    """The agent's OpenTelemetry spans as they arrive (the call's OTLP receiver)."""

    def spans_so_far(self) -> Sequence[AgentSpan]: ...

    def origin_unix(self) -> float | None: ...


def _clock(ms: float) -> str:
    s = max(ms, 0) / 1000
    return f"{int(s // 60):02d}:{s % 60:06.3f}"


def describe_turn(turn: Turn, index: int, facts: Facts, split: str = "") -> Text:
    """One line for a turn: time span, speaker, text, and what the verifier makes of it.

    ``facts`` are the verifier's on the dialogue so far; ``index`` is the turn's place in it.
    """
    line = Text()
    line.append(f"{_clock(turn.start_ms)}-{_clock(turn.end_ms)} ", style="dim")
    line.append(f"{turn.speaker:<6} ", style=_STYLE.get(turn.speaker, ""))
    notes: list[tuple[str, str]] = []
    gap = facts.gap_of(index)
    if gap is not None:
        notes.append((f"latency {gap.gap_ms} ms", "green" if gap.ok else "bold red"))
        if gap.gap_ms < 0:
            notes.append(("started before the caller finished", "red"))
        if split:
            notes.append((split, "cyan"))
    if turn.speaker == CALLER and turn.interrupt:
        barge_ins = facts.barge_ins_of(index)
        if not barge_ins:
            notes.append(("barge-in", "yellow"))
        for b in barge_ins:  # the verifier scores one barge-in per agent turn it overlapped
            if b.handled:
                notes.append((f"barge-in: agent yielded after {b.yield_ms} ms", "green"))
            else:
                notes.append((f"barge-in: agent kept talking {b.yield_ms} ms", "bold red"))
    line.append(turn.text or "(no words)")
    for note, style in notes:
        line.append("  [")
        line.append(note, style=style)
        line.append("]")
    return line


class LiveView(Sink):
    """Prints final turns as they come; on a terminal also a one-line live status."""

    def __init__(
        self,
        console: Console,
        verifier: LiveVerifier | None = None,
        budget_ms: int | None = None,
        *,
        watch: Sequence[Findings] = (),
        spans: SpanFeed | None = None,
    ):
        self.console = console
        self.verifier = verifier
        self.budget = budget_ms or DEFAULT_MAX_LATENCY_MS
        self.printed: list[Turn] = []
        self.info: SourceInfo | None = None
        self.speaking: dict[str, bool] = {CALLER: False, AGENT: False}
        self.position_ms = 0.0
        self._live: Live | None = None
        self._info: SourceInfo | None = None
        self._told: dict[str, int] = {}  # warnings and degraded reasons already printed
        self._turn_taking = LiveTurnTaking()  # pause takeovers and false yields, once each
        self._watch = list(watch)  # other stages' findings (the scripted caller's), told too
        self._spans = spans
        self._reconcile = LiveSpanSplit()
        self._fresh: Breakdown | None = None  # reconciled as turns were printed, not yet told
        self._seen = 0  # spans reconciled so far
        self._looked = 0.0  # when (monotonic)
        self._dialogue: list[dict[str, Any]] = []
        self._agent_turns: dict[int, float] = {}  # printed agent turns: index -> start ms
        self._hops_told: set[int] = set()

    def on_start(self, info: SourceInfo, settings: Settings) -> None:
        self.info = info
        self._info = info
        self.console.print(Text(f"turnscope: {info.description}", style="bold"))
        if self.console.is_terminal:
            self._live = Live(
                self._status(), console=self.console, transient=True, refresh_per_second=8
            )
            self._live.start()

    def _status(self) -> Text:
        t = Text(f"{_clock(self.position_ms)} ", style="dim")
        for ch in (CALLER, AGENT):
            t.append(f"{ch}: ", style=_STYLE[ch])
            t.append("speaking  " if self.speaking[ch] else "silent    ")
        latest: dict[str, Any] | None = self.verifier.latest if self.verifier else None
        if latest:
            comps = latest["result"]["components"]
            t.append(" ".join(f"{k} {v:.2f}" for k, v in comps.items()), style="dim")
        return t

    def _tell(self, more: Sequence[Note] = ()) -> None:
        """Print what the source reported since the last look (an agent that did not greet, a
        caller line that went unanswered, lost audio ...) the moment it is known."""
        if self._info is None:
            return
        found = assembled([self._info, *self._watch, Findings(notes=list(more))])
        for kind, items, style in (
            ("warning", found.of(Severity.WARNING), "yellow"),
            ("degraded", found.of(Severity.DEGRADED), "bold red"),
        ):
            for text in items[self._told.get(kind, 0) :]:
                self.console.print(Text(f"{_clock(self.position_ms)} {kind}: {text}", style=style))
            self._told[kind] = len(items)

    def on_event(self, event: SpeechEvent) -> None:
        if isinstance(event, SpeechStart):
            self.speaking[event.channel] = True
        elif isinstance(event, SpeechStop):
            self.speaking[event.channel] = False
        self.position_ms = max(self.position_ms, getattr(event, "decided_ms", 0.0))
        self._tell()
        self._tell_hops()
        if self._live:
            self._live.update(self._status())

    def on_update(self, update: TurnUpdate) -> None:
        self._tell()
        turns = update.assembly.turns
        if update.new_final:
            budgets = {"max_latency_ms": self.budget}
            facts = verifier_facts(update.assembly.dialogue(), budgets=budgets)
        splits = self._splits(update) if update.new_final else {}
        for turn in sorted(update.new_final, key=lambda t: t.start_ms):
            index = turns.index(turn)
            line = describe_turn(turn, index, facts, splits.get(index, ""))
            self.console.print(line, soft_wrap=True)
            self.printed.append(turn)
            if turn.speaker == AGENT:
                self._agent_turns[index] = turn.start_ms
        for bc in update.new_backchannels:
            self.console.print(
                Text(f"{_clock(bc.start_ms)}-{_clock(bc.end_ms)} {bc.speaker:<6} ", style="dim")
                + Text(f"{bc.text}  [backchannel]", style="dim"),
                soft_wrap=True,
            )
        self._tell_turn_taking(update.assembly, update.final_until_ms)
        self._tell_hops()
        if self._live:
            self._live.update(self._status())

    def _tell_turn_taking(self, assembly: Assembly, final_until_ms: float) -> None:
        """A pause takeover or a false yield, once settled (the caller's pauses and backchannels
        when it reports them: a hum it made is a backchannel, whatever the ASR heard)."""
        made = [w for w in self._watch if isinstance(w, CallerFindings)]
        details = self.info.details if self.info is not None else {}
        # The caller's own (a live call's), else a replay's truth if any.
        pauses = made[0].pauses if made else details.get(PAUSES_KEY) or []
        said = made[0].backchannels if made else details.get(BACKCHANNELS_KEY)
        for note in self._turn_taking.new(assembly, final_until_ms, pauses, said):
            self.console.print(Text(note, style="yellow"), soft_wrap=True)

    def _splits(self, update: TurnUpdate) -> dict[int, str]:
        """Each reply's latency split by the agent's spans so far (its hops), else by its RTVI
        events so far (agent turn -> line)."""
        details = self.info.details if self.info is not None else {}
        self._dialogue = update.assembly.dialogue()
        b = self._fresh = self._span_split(force=True)  # earlier replies' hops: _tell_hops
        new = {update.assembly.turns.index(t) for t in update.new_final}
        told = {
            r.agent_turn: hops_line(r)
            for r in (b.replies if b is not None else [])
            if r.missing is None and r.hops and r.agent_turn in new
        }
        self._hops_told |= set(told)
        rtvi = rtvi_breakdown(details, self._dialogue)  # a reply the spans have not split yet
        for r in rtvi.replies if rtvi is not None else []:
            if r.missing is None and r.agent_turn not in told:
                told[r.agent_turn] = summary_line(r)
        return told

    def _span_split(self, *, force: bool = False) -> Breakdown | None:
        """The spans so far reconciled, when new ones came (at most every SPANS_EVERY_S unless
        ``force``: a turn being printed); None when nothing new."""
        if self._spans is None or self.info is None:
            return None
        spans = self._spans.spans_so_far()
        now = time.monotonic()
        if len(spans) == self._seen and not force:
            return None
        if not force and now - self._looked < SPANS_EVERY_S:
            return None
        self._seen, self._looked = len(spans), now
        return self._reconcile(self.info.details, self._dialogue, spans, self._spans.origin_unix())

    def _tell_hops(self) -> None:
        """A reply printed before its spans came: its hops, the moment they are known."""
        waiting = self._agent_turns.keys() - self._hops_told
        b = self._fresh or (self._span_split() if waiting else None)
        self._fresh = None
        for r in b.replies if b is not None else []:
            known = r.missing is None and r.hops and r.agent_turn in self._agent_turns
            if known and r.agent_turn not in self._hops_told:
                self._hops_told.add(r.agent_turn)
                at = _clock(self._agent_turns[r.agent_turn])
                text = f"{_clock(self.position_ms)} reply at {at}: {hops_line(r)}"
                self.console.print(Text(text, style="cyan"), soft_wrap=True)

    def on_finish(self, result: PipelineResult) -> None:
        # The pipeline's degraded reasons too (a silent channel); its warnings the run prints.
        self._tell(result.found.of(Severity.DEGRADED))
        self._tell_turn_taking(result.assembly, float("inf"))  # all final now
        if self._live:
            self._live.stop()
            self._live = None
