"""result.json's ``turn_taking`` section: turn-taking in Full-Duplex-Bench's terms (the numbers
are computed in turn_taking.py; this module is only their typed shape).

A condition the call never exercised has ``events: 0`` and every rate and timing ``None``: "not
exercised", never 0 or 1. Times are call-clock milliseconds.
"""

from __future__ import annotations

from enum import Enum

from pydantic import Field

from turnscope.scoring.evidence.documents import Document

DEFINITIONS = (
    "Full-Duplex-Bench v1/v1.5 (github.com/DanielLin94144/Full-Duplex-Bench, commit d7336bd, "
    "v1_v1.5/evaluation/): takeover = the agent's speech lasts >= 1 s or has > 3 words; "
    "latency = first agent word - caller end of turn (means clamp negatives to 0, as FDB); "
    "t_stop and the response gap as get_timing.py; turnscope differences in scoring/turn_taking.py"
)


class Condition(str, Enum):
    PAUSE_HANDLING = "pause_handling"  # lower TOR is better
    BACKCHANNEL = "backchannel"  # lower TOR is better
    SMOOTH_TURN_TAKING = "smooth_turn_taking"  # higher TOR is better
    USER_INTERRUPTION = "user_interruption"  # higher TOR is better


LOWER_IS_BETTER = frozenset({Condition.PAUSE_HANDLING, Condition.BACKCHANNEL})


class Behaviour(str, Enum):
    """What the agent did after the caller's speech met its own (FDB v1.5's post-overlap classes,
    told from timing and words instead of an LLM judge)."""

    YIELDED_ANSWERED = "yielded_and_answered"  # stopped, then took the turn
    TALKED_THROUGH_ANSWERED = "talked_through_then_answered"  # did not stop, answered after
    ACKNOWLEDGED = "acknowledged"  # spoke again, too briefly to take the turn
    REPEATED = "repeated_itself"  # spoke again, opening with words of the turn it was cut in
    WENT_SILENT = "went_silent"  # stopped and said nothing more before the caller spoke again
    KEPT_TALKING = "kept_talking"  # did not stop (right at a backchannel, wrong at a barge-in)


class ConditionSummary(Document):
    """One condition: how often it happened, how often the agent took the turn (TOR), and the
    FDB latency of the takeovers (smooth turn-taking and user interruption only)."""

    events: int = 0
    takeovers: int = 0
    tor: float | None = None
    latency_ms: float | None = None
    lower_is_better: bool = False


class TurnTakingEvent(Document):
    """One exercised moment: a caller pause, a caller backchannel during agent speech, a caller
    end of turn, a barge-in, or an agent backchannel during caller speech."""

    kind: str = ""  # a Condition value, or "agent_backchannel"
    start_ms: float = 0.0  # the caller's pause / backchannel / turn / barge-in
    end_ms: float = 0.0
    text: str = ""
    takeover: bool | None = None  # FDB's rule on the agent's speech this event provoked
    agent_start_ms: float | None = None  # the agent's first speech this event provoked
    latency_ms: float | None = None  # agent start - caller end (negative: started over it)
    t_stop_ms: float | None = None  # caller start -> the agent's speech in progress stopped
    t_resp_ms: float | None = None  # caller start -> the agent's next turn started
    response_gap_ms: float | None = None  # caller end -> the agent's next turn (FDB's latency)
    overlap_ms: float | None = None  # both speaking (FDB v1.5 latency_stop; talk-over at pause)
    behaviour: Behaviour | None = None


class TurnTaking(Document):
    """The call's turn-taking metrics, per condition, with every event they came from."""

    definitions: str = DEFINITIONS
    conditions: dict[str, ConditionSummary] = Field(default_factory=dict)
    t_stop_ms: float | None = None  # median over barge-ins
    t_resp_ms: float | None = None  # median over barge-ins the agent answered
    behaviour: dict[str, int] = Field(default_factory=dict)  # barge-ins per Behaviour
    backchannel_false_yield_rate: float | None = None
    pause_talk_over_count: int | None = None
    pause_talk_over_ms: float | None = None
    agent_backchannels: int = 0
    agent_backchannels_per_min: float | None = None  # per minute of caller speech
    caller_speech_ms: float = 0.0
    events: list[TurnTakingEvent] = Field(default_factory=list)
