"""What the scripted caller warns about or why it degrades the evidence, as counted (the words
are the note's message; ``turnscope.reasons``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING

from turnscope.reasons import Findings

if TYPE_CHECKING:
    from turnscope.capture.player import SendRecord


class CallerNote(StrEnum):
    TIMED_OUT = "scenario_timed_out"
    AGENT_NONSTOP = "agent_nonstop"  # the agent never paused: the caller could not take turns
    NEVER_SPOKE = "caller_never_spoke"
    CALLER_FAILED = "caller_failed"  # a bug in the caller ended the call early
    NO_GREETING = "agent_did_not_greet"
    AHEAD_OF_SCRIPT = "agent_ahead_of_script"  # it said a reply before what it answers
    NOT_SENT = "caller_turn_not_sent"  # a caller turn the caller never said (noise, echo)
    PAST_ITS_LINES = "caller_turn_past_its_lines"  # its edges far outside what was sent
    LINE_UNHEARD = "caller_line_unheard"  # a sent line heard as no words: a wordless turn
    LINE_NO_TURN = "caller_line_no_turn"  # a sent line that made no caller turn at all
    UNANSWERED = "line_unanswered"  # the agent did not answer a caller line in time
    ROW_CUT_SHORT = "agent_lines_cut_short"  # said a row's first lines, not its last
    LAST_UNANSWERED = "last_line_unanswered"
    INTO_SILENCE = "spoken_into_silence"  # a planned barge-in met no agent speech
    INTO_NO_SPEECH = "into_no_agent_speech"  # said into speech the assembled call shows none of
    NOT_EXERCISED = "barge_in_not_exercised"  # the agent's turn ended first: an ordinary reply
    TRANSCRIPT_LATE = "transcript_late"  # the caller decided on what it had (its delay)
    CONDITION_NEVER_MET = "condition_never_met"
    LLM_AGENT_QUIET = "llm_agent_quiet"  # the agent said nothing: the LLM caller hung up
    LLM_MAX_TURNS = "llm_max_turns"
    REPLAY_DIVERGED = "replay_diverged"  # the agent left the recorded call: the LLM is asked
    REPLAY_SHORT = "replay_short"  # the recorded call had no more caller turns
    REPLAY_LATE = "replay_late"  # a replayed line went out later than recorded (its delay)
    LLM_MISSING = "llm_missing"
    LLM_FAILED = "llm_failed"
    LLM_SLOW = "llm_slow"  # over caller.llm.deadline_ms: the caller's delay


@dataclass(kw_only=True)
class CallerFindings(Findings):
    """What the scripted caller found: its notes, and the pauses it made inside its lines
    (``[start_ms, end_ms]`` on the call clock: the turn-taking metrics' pause events). A
    scripted call that made none has ``[]``: pause handling "not exercised", never guessed."""

    pauses: list[list[float]] = field(default_factory=list)
    # The backchannels it said, as sent: the live view reads a hum as result.json does (the
    # report's lines spoken as backchannels), not as the ASR alone would.
    backchannels: list[list[float]] = field(default_factory=list)

    def said(self, spoken_as: str | None, sent: SendRecord | None) -> None:
        """Note a line that went out (a backchannel's extent on the call clock)."""
        if spoken_as == "backchannel" and sent is not None and sent.end_ms is not None:
            self.backchannels.append([sent.start_ms, sent.end_ms])
