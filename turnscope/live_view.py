"""The live terminal view: each turn printed the moment it is final, with latency and barge-ins.

On a terminal a status line shows who is speaking and the running verdict; elsewhere (CI logs,
pipes) only the turn lines are printed.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.live import Live
from rich.text import Text

from turnscope.asr.assembly import Turn
from turnscope.asr.events import SpeechEvent, SpeechStart, SpeechStop
from turnscope.asr.settings import Settings
from turnscope.capture.frames import AGENT, CALLER
from turnscope.capture.source import SourceInfo
from turnscope.explain import rtvi_breakdown
from turnscope.pipeline import PipelineResult, Sink, TurnUpdate
from turnscope.scoring.latency import summary_line
from turnscope.scoring.verifier import DEFAULT_MAX_LATENCY_MS, Facts, verifier_facts
from turnscope.sinks import LiveVerifier

_STYLE = {CALLER: "cyan", AGENT: "magenta"}


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
        self, console: Console, verifier: LiveVerifier | None = None, budget_ms: int | None = None
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

    def _tell(self) -> None:
        """Print what the source reported since the last look (an agent that did not greet, a
        caller line that went unanswered, lost audio ...) the moment it is known."""
        if self._info is None:
            return
        for kind, items, style in (
            ("warning", self._info.warnings, "yellow"),
            ("degraded", self._info.degraded, "bold red"),
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
        for bc in update.new_backchannels:
            self.console.print(
                Text(f"{_clock(bc.start_ms)}-{_clock(bc.end_ms)} {bc.speaker:<6} ", style="dim")
                + Text(f"{bc.text}  [backchannel]", style="dim"),
                soft_wrap=True,
            )
        if self._live:
            self._live.update(self._status())

    def _splits(self, update: TurnUpdate) -> dict[int, str]:
        """Each reply's latency split by the agent's RTVI events so far (agent turn -> line)."""
        details = self.info.details if self.info is not None else {}
        b = rtvi_breakdown(details, update.assembly.dialogue())
        if b is None:
            return {}
        return {r.agent_turn: summary_line(r) for r in b.replies if r.missing is None}

    def on_finish(self, result: PipelineResult) -> None:
        self._tell()
        if self._live:
            self._live.stop()
            self._live = None
