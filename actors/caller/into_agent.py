"""A caller line into the agent's turn (a barge-in or a backchannel): placed that far into the
turn the agent is speaking (or the next one it starts), at the moment the scenario names, the
agent's words (``phrase.py``) or half its turn (``mid.py``); when the turn ends first, the line
is spoken as an ordinary reply, said as not exercised."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from turnscope.actors.caller.in_step import sent_starts
from turnscope.actors.caller.lines import LineRecord, quote
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.scenario import DEFAULT_THINK_MS, Line
from turnscope.reasons import Findings

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller

__all__ = ["INTO_AGAIN_MS", "IntoAgent", "warn_into_no_speech"]

# A caller line into an agent turn that already holds one of the caller's starts at least this
# long after it ended, so that a listener hears two utterances (the harness ends one after 600
# ms of silence, the reference agent after 400), not "mm-hmm wait" as one, its barge-in unheard.
INTO_AGAIN_MS = 1000


class IntoAgent:
    """Barge-ins and backchannels (a ScriptedCaller mixin)."""

    async def _into_agent(
        self: ScriptedCaller, index: int, line: Line, last_end: float, rec: LineRecord
    ) -> str:
        """Barge in (or backchannel) that far into the agent's current turn while it speaks;
        what the line was spoken as."""
        what = "barge-in" if line.kind == "barge_in" else "backchannel"
        timeout = self.scenario.caller.reply_timeout_ms
        # The agent's current turn: the utterance it is in (a second backchannel into the same
        # line counts from the same start), else the next one it starts.
        speech = self.ear.current()
        if speech is not None and speech.start_ms < last_end and self._into_next_line(index):
            speech = None  # not the turn its line before went into, stopped or ending
        speech = speech or await self._agent_turn(last_end, timeout, rec)
        if speech is None:
            self._warn(
                CallerNote.INTO_SILENCE,
                f"script[{index}] {quote(line.text)}: planned as a {what}, but the agent did "
                f"not speak within {timeout} ms; spoken into silence",
            )
            return "line"
        if line.phrase is not None:  # when the agent says it (``phrase.py``)
            return await self._on_phrase(index, line, speech, rec)
        starts = list(sent_starts(self.records).values())
        turn_ms, how = self.mid.turn_ms(index, self.ear.texts, starts, self.ear.typical_turn_ms())
        rec.notes += [how] if how else []
        _, offset = line.placed_trigger(turn_ms)
        if speech.start_ms < last_end and last_end + INTO_AGAIN_MS - speech.start_ms > offset:
            offset = round(last_end + INTO_AGAIN_MS - speech.start_ms)
            rec.notes.append(f"placed {INTO_AGAIN_MS} ms after the caller's line before it "
                             "in the same agent turn, to be heard apart from it")  # fmt: skip
        rec.trigger_ms = offset
        # Until the moment, or the end of the agent's utterance if that comes first.
        await self.ear.wait_for(
            lambda: speech.decided_ms is not None, lambda: speech.start_ms + offset
        )  # its start may move past a recording's room tone (asr/room_tone_start.py)
        rec.agent_start_ms = round(speech.start_ms, 1)  # what the offset was counted from
        if (waited := await self.ear.through_pause(speech)) and speech.decided_ms is None:
            rec.notes.append(f"due in a pause of the agent's turn: went out as it went on, "
                             f"{waited:.0f} ms later")  # fmt: skip
        if speech.decided_ms is None:
            return line.kind
        rec.agent_turn_ms = round(speech.length_ms, 1)
        self._warn(
            CallerNote.NOT_EXERCISED,
            f"script[{index}] {quote(line.text)}: planned as a {what} {offset} ms into the "
            f"agent's turn, but that turn lasted {speech.length_ms:.0f} ms; spoken as an "
            f"ordinary reply (the {what} was not exercised)",
        )
        await self._quiet_then(speech.decided_ms + DEFAULT_THINK_MS, DEFAULT_THINK_MS, rec)
        return "line"


def warn_into_no_speech(
    found: Findings, dialogue: Sequence[Mapping[str, Any]], records: Sequence[LineRecord]
) -> None:
    """Warn of each line said as a barge-in or backchannel that started under no agent turn of
    the call as assembled: said into a pause of the agent's turn, before the caller's ear could
    tell the pause from the turn's end (the VAD's hangover), it overlapped no agent speech, so
    the verifier counts no barge-in there, whatever the caller's record says."""
    agent = [(float(t["start_ms"]), float(t["end_ms"])) for t in dialogue
             if t.get("speaker") == "agent"]  # fmt: skip
    for r in records:
        start = (r.sent or {}).get("start_ms")
        if r.spoken_as not in ("barge_in", "backchannel") or not isinstance(start, int | float):
            continue
        if any(a <= start < b for a, b in agent):
            continue
        before = [b for _, b in agent if b <= start]
        gap = f", {start - max(before):.0f} ms after the agent's voice stopped" if before else ""
        what = r.spoken_as.replace("_", "-")
        found.warn(
            CallerNote.INTO_NO_SPEECH,
            f"script[{r.line}] {quote(r.text)}: said as a {what} at {start / 1000:.2f} s{gap}, "
            "in a pause the caller took for the agent still speaking: no agent speech under "
            f"it, so it is no {what} to the verifier",
        )
