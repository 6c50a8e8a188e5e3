"""The turn-taking metrics' input (turn_taking.py): both parties' turns, the caller's
backchannels and pauses, from a run's assembly or from verifier-shape turns (a synthetic call's
truth.json, a test).

A caller pause is either planned (a scripted caller reports each pause it made inside a line,
on the call clock: those, and only those, are the pause-handling events, so a scenario without
pauses leaves the condition "not exercised"), or, with no caller that says (a replay), a
silence of at least ``pause_min_ms`` inside one caller utterance (the endpointer's spans).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnscope.asr.assembly import Assembly, Heard
from turnscope.capture.frames import CALLER

PAUSE_MIN_MS = 300.0
Pauses = Sequence[Sequence[float]]  # (start_ms, end_ms) each
# Where a live call's scripted caller lists the pauses it made (SourceInfo.details, in
# result.json's source.details): call-clock [start_ms, end_ms] pairs.
PAUSES_KEY = "caller_pauses"


@dataclass(frozen=True)
class Speech:
    """A turn or backchannel of one party: its extent, text and (when timed) word extents."""

    speaker: str
    start_ms: float
    end_ms: float
    text: str = ""
    interrupt: bool = False
    words: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True)
class CallTurns:
    """What the metrics read: both parties' turns, the caller's backchannels, the silences inside
    caller utterances, and the call's length (None: unknown)."""

    turns: tuple[Speech, ...]
    backchannels: tuple[Speech, ...] = ()
    caller_pauses: tuple[tuple[float, float], ...] = ()
    duration_ms: float | None = None


def from_assembly(
    assembly: Assembly,
    heard: Iterable[Heard] = (),
    duration_ms: float | None = None,
    pause_min_ms: float = PAUSE_MIN_MS,
    planned_pauses: Pauses | None = None,
) -> CallTurns:
    """The metrics' input from a run: turns, backchannels, and the caller's pauses: exactly
    ``planned_pauses`` (call-clock ms) when a scripted caller reported them (a pause may outlast
    the end-of-turn silence and split the utterance: only the caller knows), else the silences
    inside the caller's floor-taking utterances (``heard``: backchannels have none)."""
    turns = tuple(
        Speech(
            t.speaker,
            t.start_ms,
            t.end_ms,
            t.text,
            t.interrupt,
            tuple((w.start_ms, w.end_ms) for w in t.words),
        )
        for t in assembly.turns
    )
    bcs = tuple(Speech(b.speaker, b.start_ms, b.end_ms, b.text) for b in assembly.backchannels)
    if planned_pauses is not None:
        pauses = [(float(p[0]), float(p[1])) for p in planned_pauses]
    else:
        on_floor = {u for t in assembly.turns if t.speaker == CALLER for u in t.utterances}
        pauses = [
            (a.end_ms, b.start_ms)
            for h in heard
            if h.channel == CALLER and h.key in on_floor
            for a, b in zip(h.spans, h.spans[1:], strict=False)
            if b.start_ms - a.end_ms >= pause_min_ms
        ]
    return CallTurns(turns, bcs, tuple(sorted(pauses)), duration_ms)


def pauses_of(info: Any, script: Mapping[str, Any] | None) -> Pauses | None:
    """The pauses a run's caller made: a scripted caller's report (``script``) lists them,
    ``[]`` when it made none (pause handling not exercised); a replay's source may know them
    (``info.details``: a synthetic call's truth); None when nothing says (detect them)."""
    if script:
        return script.get("pauses", [])
    return info.details.get(PAUSES_KEY)


def truth_pauses(truth: Mapping[str, Any]) -> list[tuple[float, float]]:
    """A synthetic call's planned pauses from its truth.json (``pauses``)."""
    return [(float(p["start_ms"]), float(p["end_ms"])) for p in truth.get("pauses") or ()]


def from_dicts(
    turns: Sequence[Mapping[str, Any]],
    backchannels: Sequence[Mapping[str, Any]] = (),
    caller_pauses: Sequence[tuple[float, float]] = (),
    duration_ms: float | None = None,
) -> CallTurns:
    """The metrics' input from verifier-shape turns (a synthetic call's truth.json, a test)."""

    def speech(d: Mapping[str, Any]) -> Speech:
        words = tuple((float(w["start_ms"]), float(w["end_ms"])) for w in d.get("words") or ())
        return Speech(
            str(d.get("speaker", "caller")),
            float(d["start_ms"]),
            float(d["end_ms"]),
            str(d.get("text") or ""),
            bool(d.get("interrupt", False)),
            words,
        )

    ordered = sorted((speech(t) for t in turns), key=lambda s: (s.start_ms, s.end_ms))
    return CallTurns(
        tuple(ordered),
        tuple(speech(b) for b in backchannels),
        tuple(sorted(caller_pauses)),
        duration_ms,
    )
