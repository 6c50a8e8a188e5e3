"""Turn assembly: transcribed utterances of both channels -> verifier turns and backchannels.

A pure function of everything heard so far (``assemble``), re-run as utterances arrive. Rules:

1. Backchannel: a caller utterance that starts while the agent is speaking, lasts at most
   ``backchannel_max_ms``, has at most ``backchannel_max_words`` words, and whose words are all
   backchannel words (or the whole phrase is a backchannel phrase) is a backchannel event. It
   is kept out of the dialogue and takes no floor. Short utterances with other words ("wait",
   "stop", "no, hold on") are ordinary turns, i.e. barge-ins.
2. Floor: every other utterance takes the floor.
3. Turns: a channel's voiced spans, in time order, join one turn until a boundary: the silence
   before the next span is longer than ``merge_gap_ms``; or the floor changed in that silence:
   the other party began speaking in a silence between two utterances of this speaker, or spoke
   during this turn and finished before this speaker's next utterance (also when this turn began
   over it: an agent that cut in on a caller's pause and stopped when the caller went on), or
   (inside one utterance) it began during this turn, this speaker stopped within
   ``yield_split_ms`` of that and resumed only after the other party finished (not in one of
   its regular pauses after the other party had finished: its next sentence after talking
   through "wait"), or it began during this turn and had finished when this speaker made an
   answer pause (at least ``answer_pause_ms``, and ``answer_margin_ms`` longer than the
   utterance's other pauses, which are regular: between its own sentences). So an agent that
   stops for a barge-in and then answers gives two agent turns, and so does one that talks
   through "wait" and answers it after a pause; an agent that talks through "uh-huh" (a
   backchannel takes no floor), and a caller who pauses for breath while the agent talks over
   them, keep one turn each.
4. Barge-in: a caller turn that starts while an agent turn is in progress has ``interrupt: true``.
   An agent turn that starts while the caller speaks gets no flag (the verifier counts it as the
   agent talking over the caller).
5. Turns are listed in start-time order.
6. An utterance with no words recognised takes no floor, unless it is the caller's and overlaps
   a line the caller is known to have sent (``said``: a scripted call's send records): then it
   is the caller's turn with no text (``unheard``), so the agent's reply is timed from it (and a
   barge-in line so heard stays a barge-in, not a wordless backchannel).
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from turnscope.asr.backchannel_text import is_backchannel_text
from turnscope.asr.events import Span, Utterance
from turnscope.asr.pauses import Pause, pause_kind
from turnscope.asr.settings import AssemblySettings
from turnscope.asr.transcriber import Transcription, Word
from turnscope.capture.frames import AGENT, CALLER


@dataclass(frozen=True)
class Heard:
    """An utterance and its transcription, without the audio (kept small for long calls)."""

    channel: str
    index: int
    start_ms: float
    end_ms: float
    spans: tuple[Span, ...]
    decided_ms: float
    transcription: Transcription
    held_ms: float = 0.0  # how long (call ms) its decode waited for the agent's answer

    @classmethod
    def of(cls, u: Utterance, transcription: Transcription, held_ms: float = 0.0) -> Heard:
        return cls(u.channel, u.index, u.start_ms, u.end_ms, u.spans, u.decided_ms, transcription,
                   held_ms)  # fmt: skip

    @property
    def key(self) -> str:
        return f"{self.channel}:{self.index}"

    @property
    def voiced_ms(self) -> float:
        """How long its spans were voiced, the pauses between them left out."""
        return sum(s.end_ms - s.start_ms for s in self.spans)

    @property
    def text(self) -> str:
        return self.transcription.text


@dataclass(frozen=True)
class Turn:
    """A turn in the verifier's shape, plus what turnscope knows about it."""

    speaker: str
    start_ms: float
    end_ms: float
    text: str
    interrupt: bool
    words: tuple[Word, ...] = ()
    confidence: float | None = None
    utterances: tuple[str, ...] = ()
    decided_ms: float = 0.0  # stream time when its last utterance ended (end-of-turn decision)
    asr_ms: float = 0.0
    spans: tuple[Span, ...] = ()  # voiced stretches; the silences between are pauses

    @property
    def key(self) -> str:
        return f"{self.speaker}@{self.start_ms:.1f}"

    def to_dict(self) -> dict[str, Any]:
        """Verifier shape (integer ms) plus extra fields the verifier ignores."""
        out: dict[str, Any] = {
            "speaker": self.speaker,
            "start_ms": int(round(self.start_ms)),
            "end_ms": int(round(self.end_ms)),
            "text": self.text,
            "interrupt": self.interrupt,
            "channel": self.speaker,
            "confidence": None if self.confidence is None else round(self.confidence, 4),
            "words": [
                {
                    "text": w.text,
                    "start_ms": round(w.start_ms, 1),
                    "end_ms": round(w.end_ms, 1),
                    "probability": round(w.probability, 4),
                }
                for w in self.words
            ],
            "utterances": list(self.utterances),
            "spans": [[round(s.start_ms, 1), round(s.end_ms, 1)] for s in self.spans],
            "asr": {"decided_ms": round(self.decided_ms, 1), "compute_ms": round(self.asr_ms, 1)},
        }
        if not self.text:  # rule 6: only a caller's sent line keeps a turn with no words
            out["unheard"] = True
        return out


@dataclass(frozen=True)
class Backchannel:
    """A short acknowledgement inside the other party's speech; not a turn."""

    speaker: str
    start_ms: float
    end_ms: float
    text: str
    utterance: str

    def to_dict(self) -> dict[str, Any]:
        ms = {"start_ms": int(round(self.start_ms)), "end_ms": int(round(self.end_ms))}
        return {"speaker": self.speaker, **ms, "text": self.text, "utterance": self.utterance}


@dataclass(frozen=True)
class Rejected:
    """An utterance the endpointer found but that did not become a turn, and why."""

    utterance: str
    start_ms: float
    end_ms: float
    reason: str


@dataclass
class Assembly:
    turns: list[Turn] = field(default_factory=list)
    backchannels: list[Backchannel] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)

    def dialogue(self) -> list[dict[str, Any]]:
        """The turns as the verifier takes them."""
        return [t.to_dict() for t in self.turns]

    def wordless(self, heard: Iterable[Heard], min_voiced_ms: float = 1000.0) -> list[Heard]:
        """The utterances of ``heard`` left out for no words recognised (rule 6's case) that
        were voiced at least ``min_voiced_ms``: speech the ASR lost, not a click or a hum."""
        out = {r.utterance for r in self.rejected}
        return [h for h in heard if h.key in out and not h.transcription.rejected
                and not h.text.strip() and h.voiced_ms >= min_voiced_ms]  # fmt: skip


class _Timeline:
    """Utterance start times of one channel, for "did X start in this window" queries."""

    def __init__(self, heard: Iterable[Heard]):
        self.items = sorted(heard, key=lambda h: h.start_ms)
        self.starts = [h.start_ms for h in self.items]
        # The latest end among the first k utterances: "covering" without scanning them all.
        self.ends_so_far = list(itertools.accumulate((h.end_ms for h in self.items), max))

    def starting_in(self, lo: float, hi: float) -> list[Heard]:
        """Utterances with lo < start < hi."""
        i = bisect.bisect_right(self.starts, lo)
        j = bisect.bisect_left(self.starts, hi)
        return self.items[i:j]

    def covering(self, t: float) -> bool:
        """Some utterance has start < t < end."""
        return self.end_covering(t) > t

    def end_covering(self, t: float) -> float:
        """The latest end of the utterances that started before ``t`` (-inf if none)."""
        i = bisect.bisect_left(self.starts, t)
        return self.ends_so_far[i - 1] if i > 0 else float("-inf")


Said = Sequence[tuple[float, float]]  # when the caller's sent lines played (call ms; rule 6)


def _sent(h: Heard, said: Said) -> bool:
    """``h`` is the caller's and overlaps a line the caller is known to have sent (rule 6)."""
    return h.channel == CALLER and any(h.start_ms < e and h.end_ms > s for s, e in said)


def _backchannels(heard: Sequence[Heard], cfg: AssemblySettings, said: Said) -> set[str]:
    """Caller utterances that are backchannels: short, during agent speech, and either
    acknowledgement words or no words at all (a hum ASR could not spell; not a sent line's)."""
    agent = _Timeline(h for h in heard if h.channel == AGENT)
    out = set()
    for h in heard:
        if (
            h.channel == CALLER
            and not h.transcription.rejected
            and h.end_ms - h.start_ms <= cfg.backchannel_max_ms
            and (is_backchannel_text(h.text, cfg) or not (h.text.strip() or _sent(h, said)))
            and agent.covering(h.start_ms)
        ):
            out.add(h.key)
    return out


@dataclass
class _Piece:
    heard: Heard
    span_index: int

    @property
    def span(self) -> Span:
        return self.heard.spans[self.span_index]


def _group_turns(
    pieces: list[_Piece], other_floor: _Timeline, cfg: AssemblySettings
) -> list[list[_Piece]]:
    groups: list[list[_Piece]] = []
    for piece in pieces:
        if groups:
            current = groups[-1]
            turn_start = current[0].span.start_ms
            gap_start, gap_end = current[-1].span.end_ms, piece.span.start_ms
            # Between two utterances (a real silence), the other party starting to speak takes
            # the floor, and so does anything it said during this turn and finished before this
            # speaker resumed (an agent that talked through "no, hold on" and then answers it).
            # Inside one utterance (a breath pause) it only does if this speaker waited for it
            # to finish and had stopped within yield_split_ms of its start.
            between = piece.heard is not current[-1].heard
            pause = Pause.OTHER if between else pause_kind(piece.heard.spans, piece.span_index, cfg)
            # A turn begun over the other party, which went on past this speaker's stop and
            # finished before it resumed (an agent that cut in on a caller's pause, yielded
            # when the caller went on, then answered): what follows answers the other party.
            talked_over = between and gap_start < other_floor.end_covering(turn_start) <= gap_end
            floor_changed = talked_over or any(
                (between and (o.start_ms >= gap_start or o.end_ms <= gap_end))
                or (
                    o.end_ms <= gap_end
                    and gap_start - o.start_ms <= cfg.yield_split_ms
                    and not (pause is Pause.REGULAR and o.end_ms <= gap_start)
                )
                or (pause is Pause.ANSWER and o.end_ms <= gap_end)
                for o in other_floor.starting_in(turn_start, gap_end)
            )
            if gap_end - gap_start <= cfg.merge_gap_ms and not floor_changed:
                current.append(piece)
                continue
        groups.append([piece])
    return groups


def _nearest_span(spans: Sequence[Span], word: Word) -> int:
    mid = (word.start_ms + word.end_ms) / 2

    def distance(i: int) -> float:
        s = spans[i]
        return (
            0.0
            if s.start_ms <= mid <= s.end_ms
            else min(abs(mid - s.start_ms), abs(mid - s.end_ms))
        )

    return min(range(len(spans)), key=distance)


def _turn_text(
    group: list[_Piece], owner: dict[tuple[str, int], int], gid: int
) -> tuple[str, tuple[Word, ...]]:
    """Text and words of a turn. An utterance wholly inside the turn keeps its text; the words of
    an utterance split across turns go to the span nearest their midpoint."""
    texts: list[str] = []
    words: list[Word] = []
    for h in dict.fromkeys(p.heard for p in group):
        mine = {i for i in range(len(h.spans)) if owner[(h.key, i)] == gid}
        if len(mine) == len(h.spans):
            texts.append(h.text)
            words.extend(h.transcription.words)
            continue
        if h.transcription.words:
            own = [w for w in h.transcription.words if _nearest_span(h.spans, w) in mine]
            words.extend(own)
            texts.append(" ".join(w.text for w in own))
        else:
            texts.append(" ".join(_proportional_words(h, mine)))
    return " ".join(t for t in texts if t).strip(), tuple(words)


_SNAP_WORDS = 2


def _proportional_words(h: Heard, mine: set[int]) -> list[str]:
    """Without word times, a split utterance's words go to its spans in proportion to their
    voiced duration (speech rate is roughly even within an utterance); a cut that lands within
    _SNAP_WORDS of a sentence end moves there ("...the money goes | back. Yes, go ahead." ->
    "...goes back. | Yes, go ahead."), since a floor change usually falls between sentences."""
    tokens = h.text.split()
    durations = [s.end_ms - s.start_ms for s in h.spans]
    total = sum(durations) or 1.0
    bounds, acc = [], 0.0
    for d in durations:
        acc += d / total
        bounds.append(acc)
    n = len(tokens)
    owner = [
        next((k for k, b in enumerate(bounds) if (i + 0.5) / n <= b), len(bounds) - 1)
        for i in range(n)
    ]
    ends = [j for j in range(1, n) if tokens[j - 1].endswith((".", "?", "!"))]
    for cut in [i for i in range(1, n) if owner[i] != owner[i - 1]]:
        near = [j for j in ends if abs(j - cut) <= _SNAP_WORDS and j != cut]
        if not near or cut in ends:
            continue
        j = min(near, key=lambda j: (abs(j - cut), j))
        lo, hi = sorted((cut, j))
        fill = owner[cut - 1] if j > cut else owner[cut]
        # Only between the two sides of this cut: never across another span's words.
        if all(owner[k] in (owner[cut - 1], owner[cut]) for k in range(lo, hi)):
            owner[lo:hi] = [fill] * (hi - lo)
    return [tok for tok, k in zip(tokens, owner, strict=True) if k in mine]


def assemble(heard: Iterable[Heard], cfg: AssemblySettings, said: Said = ()) -> Assembly:
    """Build turns and backchannels from everything heard so far (see the module rules);
    ``said``: when the caller's sent lines played (call ms; rule 6)."""
    items = sorted(heard, key=lambda h: (h.start_ms, h.channel))
    out = Assembly()
    bc = _backchannels(items, cfg, said)
    floor: list[Heard] = []
    for h in items:
        if h.key in bc:
            out.backchannels.append(Backchannel(h.channel, h.start_ms, h.end_ms, h.text, h.key))
        elif h.transcription.rejected:
            out.rejected.append(Rejected(h.key, h.start_ms, h.end_ms, h.transcription.rejected))
        elif not h.text.strip() and not _sent(h, said):
            out.rejected.append(Rejected(h.key, h.start_ms, h.end_ms, "no words recognised"))
        else:
            floor.append(h)
    timelines = {ch: _Timeline(h for h in floor if h.channel == ch) for ch in (CALLER, AGENT)}
    turns: list[Turn] = []
    for channel, other in ((CALLER, AGENT), (AGENT, CALLER)):
        pieces = [_Piece(h, i) for h in timelines[channel].items for i in range(len(h.spans))]
        groups = _group_turns(pieces, timelines[other], cfg)
        owner = {
            (p.heard.key, p.span_index): gid for gid, group in enumerate(groups) for p in group
        }
        for gid, group in enumerate(groups):
            text, words = _turn_text(group, owner, gid)
            members = tuple(dict.fromkeys(p.heard.key for p in group))
            confs = [w.probability for w in words]
            turns.append(
                Turn(
                    speaker=channel,
                    start_ms=group[0].span.start_ms,
                    end_ms=group[-1].span.end_ms,
                    text=text,
                    interrupt=False,
                    words=words,
                    confidence=sum(confs) / len(confs) if confs else None,
                    utterances=members,
                    spans=tuple(p.span for p in group),
                    decided_ms=max(p.heard.decided_ms for p in group),
                    asr_ms=sum({p.heard.key: p.heard.transcription.asr_ms for p in group}.values()),
                )
            )
    # An agent turn in progress at a caller turn's start: one started before it (bisect) and,
    # of those, the latest end past it. Every caller against every agent turn was quadratic, and
    # the assembly is rebuilt as each utterance is heard.
    agent_turns = sorted((t for t in turns if t.speaker == AGENT), key=lambda t: t.start_ms)
    agent_starts = [a.start_ms for a in agent_turns]
    agent_ends = list(itertools.accumulate((a.end_ms for a in agent_turns), max))
    flagged = []
    for t in turns:
        if t.speaker == CALLER:
            before = bisect.bisect_left(agent_starts, t.start_ms)
            if before and agent_ends[before - 1] > t.start_ms:
                t = Turn(**{**t.__dict__, "interrupt": True})
        flagged.append(t)
    out.turns = sorted(flagged, key=lambda t: (t.start_ms, t.end_ms))
    return out
