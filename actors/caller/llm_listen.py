"""The LLM caller listening while the agent speaks (``caller.llm.interrupts: true``): it can barge
in or backchannel on what the agent is saying, not only answer once the agent has finished.

While an agent turn runs, the caller is fed partial transcripts (``turnscope.partials``); every
``ASK_EVERY_MS`` of the agent's speech it asks its LLM with the conversation so far and the
running turn's words, marked as unfinished. ``barge_in`` is spoken at once, over the agent;
``backchannel`` too, and the caller keeps listening; anything else waits for the turn's end (where
the LLM is asked as usual). Only the asks that spoke are LLM turns (recorded, replayed): a wait
mid-turn changes nothing, so a replay need not repeat it.

Replaying (``--caller-from``): a recorded mid-turn line is spoken once the agent's running turn
has reached the recorded point (its audio decoded that far from the turn's start) and says the
same (``alike`` the recorded words), at the recorded offset from the turn's start; otherwise the
agent diverged and the LLM is asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from turnscope.actors.caller import llm
from turnscope.actors.caller.lines import quote
from turnscope.actors.caller.llm_driver import REPLAY_MATCH, LlmTurn, alike
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.phrase import START_SLACK_MS, Partial
from turnscope.asr.normalise import normalise

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller
    from turnscope.actors.caller.ear import AgentSpeech

# The LLM is asked after each this-much of the agent's running turn (call ms of audio decoded):
# enough new words to react to, and at most a few LLM calls per turn.
ASK_EVERY_MS = 2500
# Words the agent is still saying are marked so for the LLM.
UNFINISHED = " ..."
SPOKEN_MID_TURN = ("barge_in", "backchannel")
UNSETTLED_WORDS = 3


def settled(a: str, b: str) -> tuple[str, str]:
    """Two partial transcripts of a running turn, cut to what both had settled: the words up to
    the audio's cut are unstable ("with that to mate with" / "with last to may before": the same
    audio, cut 200 ms apart), so the last ``UNSETTLED_WORDS`` go, then both keep as many words as
    the shorter has."""
    wa, wb = normalise(a).split(), normalise(b).split()
    if min(len(wa), len(wb)) <= UNSETTLED_WORDS + 2:
        return " ".join(wa), " ".join(wb)
    n = min(len(wa), len(wb)) - UNSETTLED_WORDS
    return " ".join(wa[:n]), " ".join(wb[:n])


class LlmListener:
    """The mid-turn part of ``LlmDriver`` (a mixin of ``ScriptedCaller``)."""

    _llm_listening: bool = False

    def _running(self: ScriptedCaller, speech: AgentSpeech) -> Partial | None:
        """The latest partial transcript of ``speech``'s utterance."""
        mine = [p for p in self.ear.partials if p.start_ms >= speech.start_ms - START_SLACK_MS]
        return mine[-1] if mine else None

    async def _llm_hear_out(self: ScriptedCaller, speech: AgentSpeech) -> LlmTurn | None:
        """Listen to the agent's turn ``speech`` until it ends (None), or until the caller's LLM
        barged in on it (that turn, spoken). Backchannels are spoken and listening goes on."""
        if not self.scenario.caller.llm.interrupts:
            await self._end_of(speech)
            return None
        asked_upto = speech.start_ms
        self._llm_listening = True
        try:
            while not self.ended_early:
                recorded = self._replay_mid_turn()
                step = ASK_EVERY_MS if recorded is None else recorded["upto_offset_ms"]
                due = (speech.start_ms if recorded else asked_upto) + step

                def ready(due: float = due) -> Partial | bool | None:
                    if speech.decided_ms is not None:
                        return True
                    p = self._running(speech)
                    return p if p is not None and p.upto_ms >= due else None

                got = await self.ear.wait_for(ready)
                if not isinstance(got, Partial):
                    await self._end_of(speech)
                    return None
                asked_upto = got.upto_ms
                turn = await self._mid_turn_action(speech, got, recorded)
                if turn is None:
                    continue
                self.llm_turns.append(turn)
                await self._llm_line(turn, turn.heard_end_ms)
                if turn.action["action"] == "barge_in":
                    return turn
            return None
        finally:
            self._llm_listening = False

    def _replay_mid_turn(self: ScriptedCaller) -> dict | None:
        """The recorded call's next LLM turn, when it was spoken mid-turn and is being replayed."""
        index = len(self.llm_turns)
        if self._diverged or index >= len(self._replay):
            return None
        recorded = self._replay[index]
        offset = recorded.get("upto_offset_ms")
        return recorded if isinstance(offset, (int, float)) and offset >= 0 else None

    async def _mid_turn_action(
        self: ScriptedCaller, speech: AgentSpeech, heard: Partial, recorded: dict | None
    ) -> LlmTurn | None:
        """What the caller does now, mid-turn: a turn to speak, or None (keep listening)."""
        index = len(self.llm_turns)
        offset = round(heard.upto_ms - speech.start_ms, 1)
        if recorded is not None:
            if alike(*settled(heard.text, str(recorded.get("heard", "")))) >= REPLAY_MATCH:
                # Spoken as the recorded caller did: the same offset from the agent turn's start.
                point = float(recorded["upto_offset_ms"])
                return LlmTurn(index, heard.text, speech.start_ms + point,
                               dict(recorded["action"]), "replayed",
                               offset_ms=recorded.get("offset_ms"),
                               upto_offset_ms=point)  # fmt: skip
            self._diverged = True
            self._warn(
                CallerNote.REPLAY_DIVERGED,
                f"the agent diverged from the recorded call at LLM turn {index} (mid-turn): it "
                f"said {quote(heard.text, 60)} where the recording heard "
                f"{quote(str(recorded.get('heard', '')), 60)}; the LLM is asked from here on",
            )
        if self._replay and not self._diverged:
            return None  # replaying: the recorded caller did not speak here
        if self.llm_endpoint is None:
            return None  # said at the turn's end, where the caller needs its LLM
        messages = self._messages()
        if messages[-1]["role"] == "user":
            messages[-1]["content"] += " " + heard.text + UNFINISHED
        else:
            messages.append({"role": "user", "content": heard.text + UNFINISHED})
        self.llm_asked_mid_turn += 1
        try:
            reply = await llm.ask(
                self.llm_endpoint, self.scenario.caller.llm, messages, llm.MID_TURN_ACTIONS
            )
        except llm.CallerLlmError as exc:
            self._warn(
                CallerNote.LLM_FAILED,
                f"the caller's LLM at {self.llm_endpoint.describe()} failed mid-turn ({exc}); "
                "the caller waits for the agent's turn to end",
            )
            return None
        if reply.action.action not in SPOKEN_MID_TURN or speech.decided_ms is not None:
            return None
        return LlmTurn(index, heard.text, heard.upto_ms, reply.action.model_dump(), "llm",
                       latency_ms=round(reply.latency_ms, 1), messages=messages,
                       upto_offset_ms=offset)  # fmt: skip
