"""Turn-taking as Full-Duplex-Bench measures it, from the turns turnscope already has.

Definitions read from Full-Duplex-Bench (FDB) v1/v1.5 at commit d7336bd, v1_v1.5/evaluation/:

- takeover (eval_pause_handling.py, eval_smooth_turn_taking.py, eval_user_interruption.py): the
  agent's speech, first word start to last word end, lasts >= 1 s, or it has more than 3 words.
  TOR is the share of events with a takeover.
- latency (smooth turn-taking, v1): the agent's first word - the caller's end of turn; the mean
  counts a negative latency as 0. User interruption's latency (v1) and ``latency_resp`` (v1.5
  get_timing.py) are both measured from the END of the caller's interrupting speech: here
  ``response_gap_ms``.
- ``latency_stop`` (v1.5 get_timing.py): the overlap of the caller's and the agent's speech from
  the caller's start, capped at the caller's end: here ``overlap_ms``.

Where turnscope differs, and why:

- FDB runs one condition per prepared sample (a whole output file); a call here holds many
  events, so each condition's window is one event: the agent's turns that start between the
  event and the caller's next turn.
- Pause handling: FDB pauses are planned in its data set. Here a pause is a silence of at least
  ``pause_min_ms`` inside one caller utterance (the endpointer's spans: shorter than its
  end-of-turn silence), during which the agent was not already speaking; a longer pause ends the
  utterance and is indistinguishable from an end of turn (it counts as smooth turn-taking).
- Backchannel: FDB v1 measures the agent's own backchannels and takeovers during a caller
  monologue (frequency per second of output, JSD to human timing; the JSD is not computed: it
  needs FDB's human distribution). Here the condition is the caller's backchannel during agent
  speech (the v1.5 overlap kind): the agent yielding to it is a false yield, and taking a new
  turn after it is the takeover. The agent's own backchannels (an agent turn starting inside a
  caller turn, < 1 s and <= 2 words: eval_backchannel.py's rule) are counted per minute of
  caller speech.
- Which caller speech is a backchannel: FDB knows from its data set; here the caller's own report
  when it made one (a scripted caller, a synthetic call's truth), else the turn assembly's
  reading of the words (turn_taking_input.py). The agent stopped at it when its voice went
  silent for at least the end-of-turn silence by the yield window's end, even if the assembly
  kept one turn across it (stops_at_backchannels).
- ``t_stop_ms``: the agent's speech in progress at the barge-in's start -> its end (not capped at
  the caller's end, so talking on shows in full); ``t_resp_ms``: barge-in start -> the agent's
  next turn. The post-overlap class (Behaviour) comes from timing and words, not an LLM judge.
- Words: the ASR's word times when it gave them, else the turn's voiced extent and its text.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from turnscope.asr.assembly import Assembly, Heard
from turnscope.asr.backchannel_text import normalise_words
from turnscope.capture.frames import AGENT, CALLER
from turnscope.scoring.stats import median
from turnscope.scoring.turn_taking_input import (  # noqa: F401 (this module's input, one import)
    END_OF_TURN_MS,
    PAUSE_MIN_MS,
    CallTurns,
    Pauses,
    Speech,
    backchannels_of,
    from_assembly,
    from_dicts,
    pauses_of,
)
from turnscope.scoring.turn_taking_model import (
    LOWER_IS_BETTER,
    Behaviour,
    Condition,
    ConditionSummary,
    TurnTaking,
    TurnTakingEvent,
)

TAKEOVER_MS = 1000.0  # FDB turn_duration_threshold (1 s)
TAKEOVER_WORDS = 3  # FDB turn_num_words_threshold: more than this many words takes the turn
AGENT_BACKCHANNEL_WORDS = 2  # eval_backchannel.py: < 1 s and <= 2 words is a backchannel
YIELD_MS = 600  # the verifier's BARGE_IN_YIELD_MS: stopping later than this is not yielding
REPEAT_WORDS = 4  # a reply opening with this many words of the cut turn repeats it
RESUME_MS = 150.0  # caller speech starting this near a pause's end resumes the paused line


def _extent(speech: Sequence[Speech]) -> tuple[float, int]:
    """Duration (first word start to last word end) and word count of some agent speech."""
    words = [w for s in speech for w in s.words]
    if words:
        return words[-1][1] - words[0][0], len(words)
    n = sum(len(s.text.split()) for s in speech)
    return (speech[-1].end_ms - speech[0].start_ms if speech and n else 0.0), n


def takes_over(speech: Sequence[Speech]) -> bool:
    """FDB's takeover rule: >= 1 s of speech, or more than 3 words (no words: no takeover)."""
    duration, n = _extent(speech)
    return n > 0 and (duration >= TAKEOVER_MS or n > TAKEOVER_WORDS)


def _first_word_ms(s: Speech) -> float:
    return s.words[0][0] if s.words else s.start_ms


def _in_progress(agent: Sequence[Speech], t: float) -> Speech | None:
    """The agent turn speaking at ``t`` (the one ending last, if several)."""
    live = [a for a in agent if a.start_ms < t < a.end_ms]
    return max(live, key=lambda a: a.end_ms) if live else None


def _repeats(reply: Speech, cut: Speech) -> bool:
    """The reply opens with REPEAT_WORDS words that the cut turn said in that order."""
    head, said = normalise_words(reply.text)[:REPEAT_WORDS], normalise_words(cut.text)
    if len(head) < REPEAT_WORDS:
        return False
    return any(said[i : i + REPEAT_WORDS] == head for i in range(len(said) - REPEAT_WORDS + 1))


class _Call:
    def __init__(self, call: CallTurns):
        self.call = call
        self.agent = [t for t in call.turns if t.speaker == AGENT]
        self.caller = [t for t in call.turns if t.speaker == CALLER]

    def next_caller_start(self, after: float) -> float:
        later = [c.start_ms for c in self.caller if c.start_ms > after]
        return min(later) if later else float("inf")

    def replies(self, lo: float, hi: float, but: Speech | None = None) -> list[Speech]:
        """Agent turns starting in (lo, hi), other than ``but``."""
        return [a for a in self.agent if lo < a.start_ms < hi and a is not but]

    def ended_before(self, t: float, grace_ms: float) -> bool:
        d = self.call.duration_ms
        return d is not None and d - t < grace_ms


def _resumed_until(c: _Call, lo: float, hi: float) -> float:
    """The end of the caller's speech going on after the pause (lo, hi), at most to its next
    pause: an agent starting in that window took the floor from a caller who had not finished
    (FDB's pause handling counts any takeover in the sample after the pause)."""
    ends = [s.end_ms for s in c.caller if s.start_ms <= hi + RESUME_MS and s.end_ms > hi]
    later = [p for p, _ in c.call.caller_pauses if p > lo]
    return min([max(ends, default=hi), *later])


def _at_resumption(c: _Call, t: float) -> bool:
    """Caller speech starting at ``t`` resumes its line after a pause (not a new turn)."""
    return any(abs(t - hi) <= RESUME_MS for _, hi in c.call.caller_pauses)


def _ends_at_pause(c: _Call, turn: Speech) -> bool:
    """``turn`` is the part of a paused line before its pause: it began before the pause, ended
    before the pause's end, and the caller's next speech is the line going on at the pause's end.
    Read from the resumption, not from how near the pause's start the turn ended: in noise the
    endpointer closes it up to a few hundred ms early (a quiet last syllable)."""
    return any(
        turn.start_ms < lo
        and turn.end_ms < hi
        and abs(c.next_caller_start(turn.end_ms) - hi) <= RESUME_MS
        for lo, hi in c.call.caller_pauses
    )


def _pause_events(c: _Call) -> list[TurnTakingEvent]:
    out = []
    for lo, hi in c.call.caller_pauses:
        if _in_progress(c.agent, lo + 1e-6) is not None:
            continue  # the agent already held the floor: not a pause it could take
        started = c.replies(lo - 1e-6, _resumed_until(c, lo, hi))
        took = takes_over(started)
        over = 0.0
        for a in started:
            for s in c.caller:
                over += max(0.0, min(a.end_ms, s.end_ms) - max(hi, a.start_ms, s.start_ms))
        out.append(
            TurnTakingEvent(
                kind=Condition.PAUSE_HANDLING.value,
                start_ms=lo,
                end_ms=hi,
                takeover=took,
                agent_start_ms=_first_word_ms(started[0]) if started else None,
                overlap_ms=round(over, 1) if started else None,
            )
        )
    return out


def _backchannel_events(c: _Call) -> list[TurnTakingEvent]:
    out = []
    for b in c.call.backchannels:
        a = _in_progress(c.agent, b.start_ms)
        if a is None:
            continue
        yielded = a.end_ms <= b.end_ms + YIELD_MS
        replies = c.replies(a.start_ms, c.next_caller_start(b.end_ms), but=a)
        replies = [r for r in replies if r.start_ms >= a.end_ms]
        if not yielded:
            behaviour = Behaviour.KEPT_TALKING
        elif not replies:
            behaviour = Behaviour.WENT_SILENT
        else:
            behaviour = Behaviour.REPEATED if _repeats(replies[0], a) else Behaviour.ACKNOWLEDGED
            if behaviour is Behaviour.ACKNOWLEDGED and takes_over(replies[:1]):
                behaviour = Behaviour.YIELDED_ANSWERED
        out.append(
            TurnTakingEvent(
                kind=Condition.BACKCHANNEL.value,
                start_ms=b.start_ms,
                end_ms=b.end_ms,
                text=b.text,
                takeover=yielded and bool(replies) and takes_over(replies[:1]),
                agent_start_ms=replies[0].start_ms if yielded and replies else None,
                t_stop_ms=round(a.end_ms - b.start_ms, 1) if yielded else None,
                behaviour=behaviour,
            )
        )
    return out


def _end_of_turn_events(c: _Call) -> list[TurnTakingEvent]:
    out = []
    for turn in c.caller:
        talking = _in_progress(c.agent, turn.end_ms)
        resumed = _at_resumption(c, turn.start_ms)  # the rest of a paused line: its end counts
        if not resumed and (
            turn.interrupt or (talking is not None and talking.start_ms < turn.start_ms)
        ):
            continue  # a barge-in, or the agent talking since before the caller began
        if _ends_at_pause(c, turn):
            continue  # it ends at a pause the caller resumed after: pause handling's event
        # An agent turn begun in one of the line's pauses is that pause's event, not an answer.
        inside = [hi for lo, hi in c.call.caller_pauses if turn.start_ms <= lo < turn.end_ms]
        replies = c.replies(max([turn.start_ms, *inside]), c.next_caller_start(turn.end_ms))
        if not replies and c.ended_before(turn.end_ms, 2 * TAKEOVER_MS):
            continue  # the call ended: no chance to answer
        took = takes_over(replies)
        first = _first_word_ms(replies[0]) if replies else None
        out.append(
            TurnTakingEvent(
                kind=Condition.SMOOTH_TURN_TAKING.value,
                start_ms=turn.start_ms,
                end_ms=turn.end_ms,
                text=turn.text,
                takeover=took,
                agent_start_ms=first,
                latency_ms=round(first - turn.end_ms, 1) if first is not None and took else None,
            )
        )
    return out


def _barge_in_events(c: _Call) -> list[TurnTakingEvent]:
    out = []
    for b in c.caller:
        a = _in_progress(c.agent, b.start_ms) if b.interrupt else None
        if a is None or _at_resumption(c, b.start_ms):
            continue  # no agent speech cut, or the caller going on after its pause
        stopped = a.end_ms <= b.end_ms + YIELD_MS
        replies = c.replies(b.start_ms, c.next_caller_start(b.start_ms), but=a)
        replies = [r for r in replies if r.start_ms >= a.end_ms]
        reply = replies[0] if replies else None
        took = reply is not None and takes_over([reply])
        if reply is None:
            behaviour = Behaviour.WENT_SILENT if stopped else Behaviour.KEPT_TALKING
        elif _repeats(reply, a):
            behaviour = Behaviour.REPEATED
        elif not took:
            behaviour = Behaviour.ACKNOWLEDGED
        else:
            behaviour = Behaviour.YIELDED_ANSWERED if stopped else Behaviour.TALKED_THROUGH_ANSWERED
        start = _first_word_ms(reply) if reply else None
        out.append(
            TurnTakingEvent(
                kind=Condition.USER_INTERRUPTION.value,
                start_ms=b.start_ms,
                end_ms=b.end_ms,
                text=b.text,
                takeover=took,
                agent_start_ms=start,
                t_stop_ms=round(a.end_ms - b.start_ms, 1),
                t_resp_ms=round(start - b.start_ms, 1) if start is not None else None,
                response_gap_ms=round(start - b.end_ms, 1) if start is not None else None,
                overlap_ms=round(max(0.0, min(a.end_ms, b.end_ms) - b.start_ms), 1),
                behaviour=behaviour,
            )
        )
    return out


def _agent_backchannels(c: _Call) -> list[TurnTakingEvent]:
    out = []
    for a in c.agent:
        floor = [(t.start_ms, t.end_ms) for t in c.caller] + list(c.call.caller_pauses)
        if not any(lo < a.start_ms < hi for lo, hi in floor):
            continue  # not inside a caller turn, nor inside a pause of one
        duration, n = _extent([a])
        if 0 < n <= AGENT_BACKCHANNEL_WORDS and duration < TAKEOVER_MS:
            out.append(
                TurnTakingEvent(
                    kind="agent_backchannel", start_ms=a.start_ms, end_ms=a.end_ms, text=a.text
                )
            )
    return out


def _mean(xs: Sequence[float]) -> float | None:
    return round(statistics.fmean(xs), 1) if xs else None


def _median(xs: Sequence[float]) -> float | None:
    m = median(xs)
    return None if m is None else round(m, 1)


def _summary(cond: Condition, events: Sequence[TurnTakingEvent]) -> ConditionSummary:
    mine = [e for e in events if e.kind == cond.value]
    took = [e for e in mine if e.takeover]
    latency = None
    if cond is Condition.SMOOTH_TURN_TAKING:
        latency = _mean([max(0.0, e.latency_ms or 0.0) for e in took])
    elif cond is Condition.USER_INTERRUPTION:
        latency = _mean([max(0.0, e.response_gap_ms or 0.0) for e in took])
    return ConditionSummary(
        events=len(mine),
        takeovers=len(took),
        tor=round(len(took) / len(mine), 4) if mine else None,
        latency_ms=latency,
        lower_is_better=cond in LOWER_IS_BETTER,
    )


def measure(call: CallTurns) -> TurnTaking:
    """Every turn-taking metric of one call (the module docstring says how each is defined)."""
    c = _Call(call)
    events = [
        *_pause_events(c),
        *_backchannel_events(c),
        *_end_of_turn_events(c),
        *_barge_in_events(c),
    ]
    own = _agent_backchannels(c)
    barge = [e for e in events if e.kind == Condition.USER_INTERRUPTION.value]
    bcs = [e for e in events if e.kind == Condition.BACKCHANNEL.value]
    pauses = [e for e in events if e.kind == Condition.PAUSE_HANDLING.value]
    talked_over = [e for e in pauses if (e.overlap_ms or 0.0) > 0]
    caller_ms = sum(t.end_ms - t.start_ms for t in c.caller)
    return TurnTaking(
        conditions={k.value: _summary(k, events) for k in Condition},
        t_stop_ms=_median([e.t_stop_ms for e in barge if e.t_stop_ms is not None]),
        t_resp_ms=_median([e.t_resp_ms for e in barge if e.t_resp_ms is not None]),
        behaviour=dict(Counter(e.behaviour.value for e in barge if e.behaviour)),
        backchannel_false_yield_rate=(
            round(sum(e.behaviour is not Behaviour.KEPT_TALKING for e in bcs) / len(bcs), 4)
            if bcs
            else None
        ),
        pause_talk_over_count=len(talked_over) if pauses else None,
        pause_talk_over_ms=round(sum(e.overlap_ms or 0.0 for e in talked_over), 1)
        if pauses
        else None,
        agent_backchannels=len(own),
        agent_backchannels_per_min=round(len(own) / (caller_ms / 60000.0), 3)
        if caller_ms > 0
        else None,
        caller_speech_ms=round(caller_ms, 1),
        events=sorted([*events, *own], key=lambda e: e.start_ms),
    )


def turn_taking_section(
    assembly: Assembly,
    heard: Iterable[Heard] = (),
    duration_ms: float | None = None,
    planned_pauses: Pauses | None = None,
    planned_backchannels: Pauses | None = None,
    end_of_turn_ms: float = END_OF_TURN_MS,
) -> TurnTaking:
    """result.json's ``turn_taking`` for a run; ``planned_pauses``: the pauses a scripted
    caller made (``[]``: none, pause handling not exercised; None: no caller said, detect);
    ``planned_backchannels``: the backchannels it made (None: the assembly's reading)."""
    return measure(
        from_assembly(
            assembly,
            heard,
            duration_ms,
            planned_pauses=planned_pauses,
            planned_backchannels=planned_backchannels,
            end_of_turn_ms=end_of_turn_ms,
        )
    )


def turn_taking_of(
    assembly: Assembly, run: Any, info: Any, script: Mapping[str, Any] | None
) -> TurnTaking:
    """A finished run's section: ``run`` the pipeline's result (heard, audio_ms, settings),
    with the pauses and backchannels its caller made (``info``: the source's, ``script``: a
    scripted caller's report)."""
    return turn_taking_section(
        assembly,
        run.heard,
        run.audio_ms,
        pauses_of(info, script),
        backchannels_of(info, script),  # the caller's own: a misheard hum is still one
        run.settings.vad.end_of_turn_ms,
    )
