"""The turn-taking metrics' input (turn_taking.py): both parties' turns, the caller's
backchannels and pauses, from a run's assembly or from verifier-shape turns (a synthetic call's
truth.json, a test).

A caller backchannel is what the turn assembly made of the audio, unless the caller says what
it said: a scripted caller's report (or a synthetic call's truth) lists the backchannels it
made, and a caller turn lying mostly inside one of them is that backchannel here, whatever the
ASR heard (tiny.en writes a hummed "mm-hmm" as "And anthem?", which the assembly, reading words,
takes for a barge-in). A recording with no caller report keeps the assembly's reading.

A caller pause is either planned (a scripted caller reports each pause it made inside a line,
on the call clock: those, and only those, are the pause-handling events, so a scenario without
pauses leaves the condition "not exercised"), or, with no caller that says (a replay), a
silence of at least ``pause_min_ms`` inside one caller utterance (the endpointer's spans).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from turnscope.asr.assembly import Assembly, Heard, Turn
from turnscope.asr.backchannel_text import normalise_words
from turnscope.capture.frames import AGENT, CALLER
from turnscope.scoring.verifier import BARGE_IN_YIELD_MS

PAUSE_MIN_MS = 300.0
# The default settings' vad.end_of_turn_ms: a silence shorter than this is a pause inside one
# utterance (the speaker did not stop), a longer one ends it.
END_OF_TURN_MS = 600.0
Pauses = Sequence[Sequence[float]]  # (start_ms, end_ms) each
# Where a live call's scripted caller lists the pauses it made (SourceInfo.details, in
# result.json's source.details): call-clock [start_ms, end_ms] pairs.
PAUSES_KEY = "caller_pauses"
# The same for the backchannels the caller made: [start_ms, end_ms] pairs (a synthetic replay).
BACKCHANNELS_KEY = "caller_backchannels"


@dataclass(frozen=True)
class Speech:
    """A turn or backchannel of one party: its extent, text and (when timed) word extents."""

    speaker: str
    start_ms: float
    end_ms: float
    text: str = ""
    interrupt: bool = False
    words: tuple[tuple[float, float], ...] = ()
    spans: tuple[tuple[float, float], ...] = ()  # voiced stretches (the endpointer's), if known


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
    planned_backchannels: Pauses | None = None,
    end_of_turn_ms: float = END_OF_TURN_MS,
) -> CallTurns:
    """The metrics' input from a run: turns, backchannels, and the caller's pauses: exactly
    ``planned_pauses`` (call-clock ms) when a scripted caller reported them (a pause may outlast
    the end-of-turn silence and split the utterance: only the caller knows), else the silences
    inside the caller's floor-taking utterances (``heard``: backchannels have none); a caller
    turn lying mostly inside one of ``planned_backchannels`` (the caller's own) is a backchannel,
    and the agent turns the assembly split at it inside one utterance are one again
    (``end_of_turn_ms``: the endpointer's)."""
    said = [(float(b[0]), float(b[1])) for b in planned_backchannels or ()]
    agent = [(t.start_ms, t.end_ms) for t in assembly.turns if t.speaker != CALLER]
    turns = tuple(p for t in assembly.turns for p in _pieces(t, said, agent))
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
    call = CallTurns(turns, bcs, tuple(sorted(pauses)), duration_ms)
    call = said_backchannels(call, planned_backchannels or (), end_of_turn_ms)
    return stops_at_backchannels(call, end_of_turn_ms)


def _pieces(
    t: Turn, said: Sequence[tuple[float, float]], agent: Sequence[tuple[float, float]]
) -> list[Speech]:
    """A turn as the metrics read it; a caller turn the assembly joined across a backchannel
    the caller made (the hum heard as words, then the caller's next line half a second later,
    one utterance) is split at its voiced spans: the spans inside the backchannel alone
    (said_backchannels reads them as it), the others as turns (a barge-in when the agent was
    speaking). Without word times the words stay with the first piece that is not the hum."""
    words = tuple((w.start_ms, w.end_ms) for w in t.words)
    spans = [(s.start_ms, s.end_ms) for s in t.spans]
    whole = Speech(t.speaker, t.start_ms, t.end_ms, t.text, t.interrupt, words, tuple(spans))
    which = [next((i for i, b in enumerate(said) if _mostly_inside(*s, [b])), None) for s in spans]
    if t.speaker != CALLER or len(spans) < 2 or all(w is None for w in which):
        return [whole]
    groups: list[tuple[int | None, float, float]] = []  # (the backchannel or None, lo, hi)
    for (lo, hi), w in zip(spans, which, strict=True):
        if groups and groups[-1][0] == w:
            groups[-1] = (w, groups[-1][1], hi)
        else:
            groups.append((w, lo, hi))
    out, text_left = [], True
    for k, (w, lo, hi) in enumerate(groups):
        inside = [x for x in t.words if lo - 1 <= x.start_ms <= hi + 1]
        text = " ".join(x.text.strip() for x in inside) if t.words else ""
        if not t.words and w is None and text_left:
            text, text_left = t.text, False
        interrupt = t.interrupt if k == 0 else any(a < lo < b for a, b in agent)
        times = tuple((x.start_ms, x.end_ms) for x in inside)
        mine = tuple((a, b) for a, b in spans if lo <= a and b <= hi)
        out.append(Speech(CALLER, lo, hi, text, interrupt, times, mine))
    return out


def said_backchannels(
    call: CallTurns, planned: Pauses, end_of_turn_ms: float = END_OF_TURN_MS
) -> CallTurns:
    """``call`` with the backchannels its caller says it made (``planned``, call-clock ms): a
    caller turn lying mostly inside one is that backchannel, and an agent turn the assembly
    split at it (taking it for a barge-in) at a pause shorter than ``end_of_turn_ms`` (a breath
    between its sentences: the agent never stopped) is one turn again."""
    said = [(float(b[0]), float(b[1])) for b in planned]
    heard_as_turn = [
        t for t in call.turns if t.speaker == CALLER and _mostly_inside(t.start_ms, t.end_ms, said)
    ]
    if not heard_as_turn:
        return call
    kept = [t for t in call.turns if t not in heard_as_turn]
    as_bc = [Speech(t.speaker, t.start_ms, t.end_ms, t.text) for t in heard_as_turn]
    return CallTurns(
        _rejoined(kept, heard_as_turn, end_of_turn_ms),
        tuple(sorted((*call.backchannels, *as_bc), key=lambda b: b.start_ms)),
        call.caller_pauses,
        call.duration_ms,
    )


def stops_at_backchannels(call: CallTurns, end_of_turn_ms: float = END_OF_TURN_MS) -> CallTurns:
    """An agent turn that went silent at a caller backchannel and went on within the assembly's
    merge gap (one turn to the assembly: the backchannel took no floor), split where its voice
    stopped: a silence of at least ``end_of_turn_ms`` (its utterance ended, by the endpointer's
    measure) beginning by the yield window's end after the backchannel. What follows is the
    agent's next turn (pipecat, stopping at "mm-hmm" and starting its reply again 0.9 s later,
    is a false yield, not talking on). Turns without voiced spans (truth) are as given."""
    turns = list(call.turns)
    for b in call.backchannels:
        a = next((t for t in turns if t.speaker == AGENT and t.start_ms < b.start_ms < t.end_ms
                  and len(t.spans) > 1), None)  # fmt: skip
        if a is None:
            continue
        cut = _voice_stop(a, b.start_ms, end_of_turn_ms)
        if cut is None or a.spans[cut][1] > b.end_ms + BARGE_IN_YIELD_MS:
            continue
        turns[turns.index(a)] = _first(a, cut)
        turns.append(_rest(a, cut))
    if len(turns) == len(call.turns):
        return call
    ordered = tuple(sorted(turns, key=lambda t: (t.start_ms, t.end_ms)))
    return CallTurns(ordered, call.backchannels, call.caller_pauses, call.duration_ms)


def _voice_stop(a: Speech, t: float, end_of_turn_ms: float) -> int | None:
    """The index of the span after which ``a``'s voice, speaking at ``t``, stops for at least
    ``end_of_turn_ms`` before going on (None: it goes on without such a stop)."""
    k = max((i for i, (lo, _) in enumerate(a.spans) if lo <= t), default=0)
    for i in range(k, len(a.spans) - 1):
        if a.spans[i + 1][0] - a.spans[i][1] >= end_of_turn_ms:
            return i
    return None


def _split_text(a: Speech, cut: int) -> tuple[str, str]:
    """``a``'s words before and after its stop: at the opening words said again (the agent
    started its turn over), else by the share of voiced time before the stop."""
    words = a.text.split()
    norm = [" ".join(normalise_words(w)) for w in words]
    head = norm[:4]
    again = next((i for i in range(1, len(norm) - 3) if norm[i : i + 4] == head), None)
    if again is None:
        voiced = [hi - lo for lo, hi in a.spans]
        again = round(len(words) * sum(voiced[: cut + 1]) / max(1.0, sum(voiced)))
    return " ".join(words[:again]), " ".join(words[again:])


def _first(a: Speech, cut: int) -> Speech:
    end = a.spans[cut][1]
    return Speech(AGENT, a.start_ms, end, _split_text(a, cut)[0], a.interrupt,
                  tuple(w for w in a.words if w[0] < end), a.spans[: cut + 1])  # fmt: skip


def _rest(a: Speech, cut: int) -> Speech:
    start = a.spans[cut + 1][0]
    return Speech(AGENT, start, a.end_ms, _split_text(a, cut)[1], False,
                  tuple(w for w in a.words if w[0] >= start), a.spans[cut + 1 :])  # fmt: skip


def _mostly_inside(lo: float, hi: float, spans: Sequence[tuple[float, float]]) -> bool:
    """More than half of ``lo``-``hi`` lies inside one of ``spans`` (scale-free: the
    endpointer's boundaries may be off by a hundred ms either way in noise)."""
    inside = max((min(hi, b) - max(lo, a) for a, b in spans), default=0.0)
    return inside > (hi - lo) / 2


def _rejoined(
    turns: Sequence[Speech], backchannels: Sequence[Speech], end_of_turn_ms: float
) -> tuple[Speech, ...]:
    """Agent turns split only because the assembly took a backchannel for a barge-in: joined
    again where the silence between them is shorter than the endpointer's end of turn (one
    utterance: the agent did not stop) and no caller turn began in it. A longer silence is a
    stop, a yield to the backchannel, and stays two turns."""
    out: list[Speech] = []
    for t in sorted(turns, key=lambda s: s.start_ms):
        prev = next((p for p in reversed(out) if p.speaker == AGENT), None)
        if (
            t.speaker == AGENT
            and prev is not None
            and t.start_ms - prev.end_ms < end_of_turn_ms
            and any(prev.start_ms <= b.start_ms < t.start_ms for b in backchannels)
            and not any(prev.start_ms < c.start_ms < t.start_ms for c in out if c.speaker == CALLER)
        ):
            joined = Speech(AGENT, prev.start_ms, max(prev.end_ms, t.end_ms),
                            f"{prev.text} {t.text}".strip(), prev.interrupt,
                            prev.words + t.words, prev.spans + t.spans)  # fmt: skip
            out[out.index(prev)] = joined
            continue
        out.append(t)
    return tuple(out)


def backchannels_of(info: Any, script: Mapping[str, Any] | None) -> Pauses | None:
    """The backchannels a run's caller made, on the call clock: a scripted caller's lines
    spoken as backchannels (their sent audio), a replay's truth (``info.details``), or None
    (nothing says: the assembly's reading stands)."""
    if script:
        return [
            (float(sent["start_ms"]), float(sent["end_ms"]))
            for line in script.get("lines") or ()
            if line.get("spoken_as") == "backchannel"
            and (sent := line.get("sent") or {}).get("end_ms") is not None
        ]
    return info.details.get(BACKCHANNELS_KEY)


def truth_backchannels(truth: Mapping[str, Any]) -> list[tuple[float, float]]:
    """A synthetic call's backchannels from its truth.json."""
    return [(float(b["start_ms"]), float(b["end_ms"])) for b in truth.get("backchannels") or ()]


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
