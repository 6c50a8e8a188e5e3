"""An LLM at the wheel of the caller: after the script's own caller lines, each agent turn heard
is answered by what the caller's LLM decides, and every decision is recorded so that a later
call can replay it (``--caller-from``).

A mixin of ``ScriptedCaller`` (its ear, track, records). The LLM's thinking and the synthesis of
its line are the caller's reaction time: they are measured and, past ``caller.llm.deadline_ms``,
warned about as the caller's delay, never counted against the agent (the verifier measures the
agent from the caller's end of turn). A caller LLM that fails ends the caller's part with one
line naming the endpoint and why; the call is kept and marked degraded as the caller's failure.

Replaying: a recorded call's turns are taken in order while the agent says the same things
(its words, normalised as WER is, at least REPLAY_MATCH alike); each recorded line is spoken at
the same offset from the agent's end of turn as it was. Where the agent diverges, the LLM is
asked from there on, and the record says where.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from turnscope.actors.caller import llm
from turnscope.actors.caller.lines import LineRecord, quote
from turnscope.actors.caller.notes import CallerNote
from turnscope.asr.normalise import normalise

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller
    from turnscope.actors.caller.ear import AgentSpeech

# How alike the agent's words must be to the recorded call's for its recorded line to be replayed
# (difflib's ratio on the normalised text, see ``alike``).
REPLAY_MATCH = 0.8
FRAME_MS = 20.0  # a replayed line is on time within one frame of the recorded one


@dataclass
class LlmTurn:
    """One decision of the caller's LLM (or a replayed one), with what it answered."""

    index: int
    heard: str  # the agent's last turn, as transcribed
    heard_end_ms: float  # when that turn ended (the endpointer's decision)
    action: dict[str, Any]
    source: str  # "llm" | "replayed"
    latency_ms: float | None = None  # the LLM's answer time (None: replayed)
    offset_ms: float | None = None  # when to start after heard_end_ms (recorded: as it was)
    sent_offset_ms: float | None = None  # when the line really went out after heard_end_ms
    heard_offset_ms: float | None = None  # when the caller had the agent's words, after it
    # Spoken while the agent spoke (caller.llm.interrupts): how far into the agent's turn its
    # audio had been decoded when the caller decided (heard_end_ms is that point then).
    upto_offset_ms: float | None = None
    messages: list[dict[str, str]] = field(default_factory=list)  # the conversation it answered
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and v != []}


def replayed_lines(replay: list[dict[str, Any]] | None) -> list[str]:
    """What a recorded LLM caller said (its spoken actions' texts): spoken ahead of a replay,
    so that each goes out at its recorded time rather than after its synthesis."""
    actions = [t.get("action") or {} for t in replay or []]
    spoken = llm.SPOKEN_ACTIONS
    return [str(a["text"]) for a in actions if a.get("action") in spoken and a.get("text")]


def late_replay(turn: LlmTurn) -> str | None:
    """Why a replayed line went out later than the recorded one (beyond one 20 ms frame), for
    the caller's warning; None when it was on time (or not replayed, or not sent)."""
    if turn.source != "replayed" or turn.offset_ms is None or turn.sent_offset_ms is None:
        return None
    late = turn.sent_offset_ms - turn.offset_ms
    if late <= FRAME_MS:
        return None
    heard = "" if turn.heard_offset_ms is None else (
        f"; the agent's words were transcribed {turn.heard_offset_ms:.0f} ms after its turn "
        "ended")  # fmt: skip
    return (
        f"LLM turn {turn.index} was replayed {late:.0f} ms later than recorded (the recorded "
        f"line went out {turn.offset_ms:.0f} ms after the agent's turn ended{heard}): this "
        "machine heard or spoke slower than the recording's, a caller delay, not the agent's"
    )


def alike(a: str, b: str) -> float:
    """How alike two things the agent said are, 0-1, on the normalised text's characters: the
    ASR hears the same reply a little differently from call to call ("what did your order
    number" / "what did you order, Amber": 0.93), a different reply is far off ("your order
    ships tomorrow" / "your order was cancelled": 0.54)."""
    na, nb = normalise(a), normalise(b)
    if not na and not nb:
        return 1.0
    return difflib.SequenceMatcher(None, na, nb).ratio()


class LlmDriver:
    """What ``ScriptedCaller`` does when its scenario's ``caller.driver`` is ``llm``."""

    llm_endpoint: llm.LlmEndpoint | None
    llm_turns: list[LlmTurn]
    llm_asked_mid_turn: int
    _replay: list[dict[str, Any]]
    _diverged: bool

    def _init_llm(
        self, endpoint: llm.LlmEndpoint | None, replay: list[dict[str, Any]] | None
    ) -> None:
        self.llm_endpoint = endpoint
        self.llm_turns = []
        self._replay = list(replay or [])
        self._diverged = False
        self.llm_asked_mid_turn = 0

    def _messages(self: ScriptedCaller) -> list[dict[str, str]]:
        """The conversation so far, from the LLM's seat: the agent's turns are the user's."""
        sc = self.scenario
        goal = sc.goal.description if sc.goal else ""
        facts = {k: f.value for k, f in sc.facts.items()}
        msgs = [
            {
                "role": "system",
                "content": llm.system_prompt(
                    sc.caller.persona, goal, facts, sc.caller.llm.interrupts
                ),
            }
        ]
        spoken = sorted(
            (r.sent["start_ms"], r.text) for r in self.records if r.status == "spoken" and r.sent
        )
        said = sorted((start, text) for start, _, text in self.ear.texts if text)
        events = [(t, "assistant", x) for t, x in spoken] + [(t, "user", x) for t, x in said]
        for _, role, text in sorted(events):
            if msgs[-1]["role"] == role:
                msgs[-1]["content"] += " " + text
            else:
                msgs.append({"role": role, "content": text})
        return msgs

    async def _llm_converse(self: ScriptedCaller, last_end: float) -> float:
        """The caller's turns from the LLM until it hangs up, its goal is reached and ``until``
        says so, it runs out of turns, or it fails; the end of what the caller said."""
        spec = self.scenario.caller
        answering: AgentSpeech | None = None  # the agent's turn that went on through a barge-in
        while len(self.llm_turns) < spec.llm.max_turns and not self.ended_early:
            speech = answering or await self.ear.start_after(last_end, spec.reply_timeout_ms)
            answering = None
            if speech is None:
                self._warn(
                    CallerNote.LLM_AGENT_QUIET,
                    f"the agent said nothing within {spec.reply_timeout_ms} ms of the caller's "
                    "last line; the LLM caller hung up",
                )
                break
            if await self._llm_hear_out(speech) is not None:  # the LLM barged in on it
                barge = self.records[-1]
                last_end = (barge.sent or {}).get("end_ms") or self.clock.now_ms()
                answering = await self._answered_through(barge)
                if answering is not None:
                    barge.agent_answered = True
                    barge.notes.append("the agent talked through the barge-in")
                continue
            heard_end = speech.end_ms or self.clock.now_ms()
            heard = await self._heard(last_end)
            heard_offset = round(self.clock.now_ms() - heard_end, 1)
            if self._until_met(heard, None):
                break
            turn = await self._next_action(heard, heard_end)
            if turn is None:
                break  # the caller's LLM failed: said, the caller's part ends here
            turn.heard_offset_ms = heard_offset
            self.llm_turns.append(turn)
            kind = turn.action["action"]
            if kind in ("hang_up", "goal_reached"):
                if kind == "goal_reached":
                    self.goal_reached = True
                self.ended_early = f"the caller's LLM said {kind.replace('_', ' ')}"
                break
            if kind == "wait":
                last_end = heard_end
                continue
            last_end = await self._llm_line(turn, heard_end)
        else:
            if not self.ended_early:
                self._warn(
                    CallerNote.LLM_MAX_TURNS,
                    f"the LLM caller reached caller.llm.max_turns ({spec.llm.max_turns})",
                )
        return last_end

    async def _next_action(self: ScriptedCaller, heard: str, heard_end: float) -> LlmTurn | None:
        index = len(self.llm_turns)
        if self._replay and not self._diverged and index < len(self._replay):
            recorded = self._replay[index]
            mid_turn = recorded.get("upto_offset_ms") is not None  # the agent finished first
            if not mid_turn and alike(heard, str(recorded.get("heard", ""))) >= REPLAY_MATCH:
                return LlmTurn(index, heard, heard_end, dict(recorded["action"]), "replayed",
                               offset_ms=recorded.get("offset_ms"))  # fmt: skip
            self._diverged = True
            where = "finished its turn before the point where the recorded caller cut in" if (
                mid_turn) else f"said {quote(heard, 60)} where the recording heard " + quote(
                str(recorded.get("heard", "")), 60)  # fmt: skip
            self._warn(
                CallerNote.REPLAY_DIVERGED,
                f"the agent diverged from the recorded call at LLM turn {index}: it {where}; "
                "the LLM is asked from here on",
            )
        elif self._replay and not self._diverged and index >= len(self._replay):
            self._diverged = True
            self._warn(
                CallerNote.REPLAY_SHORT,
                f"the recorded call's caller had no LLM turn {index}; the LLM is asked",
            )
        if self.llm_endpoint is None:
            self._degrade(
                CallerNote.LLM_MISSING,
                "the caller needed its LLM and none was given (--caller-llm URL): the caller's "
                "part ended there (the caller's failure, not the agent's)",
            )
            return None
        messages = self._messages()
        spec = self.scenario.caller.llm
        try:
            reply = await llm.ask_repairing(self.llm_endpoint, spec, messages)
        except llm.CallerLlmError as exc:
            self._degrade(
                CallerNote.LLM_FAILED,
                f"the caller's LLM at {self.llm_endpoint.describe()} failed ({exc}); the caller's "
                "part ended there (the caller's failure, not the agent's): check the endpoint "
                "and caller.llm in the scenario",
            )
            return None
        turn = LlmTurn(index, heard, heard_end, reply.action.model_dump(), "llm",
                       latency_ms=round(reply.latency_ms, 1), messages=messages)  # fmt: skip
        notes = [f"asked again: its first answer could not be used ({reply.repaired})"] if (
            reply.repaired) else []  # fmt: skip
        if reply.action.action in ("barge_in", "backchannel"):
            notes.append(f"{reply.action.action} spoken as a reply (the agent had finished)")
        turn.note = "; ".join(notes) or None
        return turn

    async def _llm_line(self: ScriptedCaller, turn: LlmTurn, heard_end: float) -> float:
        """Speak (or press) the turn's action; the end of it."""
        action = turn.action
        text = action.get("keys") if action["action"] == "press" else action.get("text", "")
        rec = LineRecord(self._after_script(), str(text), "llm", "after_agent_ms", None)
        rec.notes.append(f"LLM turn {turn.index} ({turn.source})")
        self.records.append(rec)
        if action["action"] == "press":
            end = await self._press(str(text), rec)
            turn.offset_ms = round(rec.queued_ms - heard_end, 1) if rec.queued_ms else None
            return end
        audio = await self._audio(str(text), None)
        if turn.source == "replayed" and turn.offset_ms is not None:
            await self.ear.until(heard_end + turn.offset_ms)  # as the recorded caller did
        playback = self.track.play(audio, f"{rec.line}:{text}")
        rec.queued_ms = round(self.clock.now_ms(), 1)
        deadline = self.scenario.caller.llm.deadline_ms
        if turn.source == "llm" and rec.queued_ms - heard_end > deadline:
            self._warn(
                CallerNote.LLM_SLOW,
                f"the LLM caller took {rec.queued_ms - heard_end:.0f} ms to answer (over "
                f"caller.llm.deadline_ms {deadline}): the caller's delay, not the agent's",
            )
        await playback.done
        sent = playback.record
        mid_turn = turn.upto_offset_ms is not None
        rec.status, rec.spoken_as = "spoken", action["action"] if mid_turn else "line"
        rec.into_agent_speech = mid_turn or None
        rec.sent = sent.to_dict() if sent else None
        self.found.said(rec.spoken_as, sent)
        if rec.sent is not None:
            turn.sent_offset_ms = round(rec.sent["start_ms"] - heard_end, 1)
            if turn.offset_ms is None:
                turn.offset_ms = turn.sent_offset_ms
        if (late := late_replay(turn)) is not None:
            self._warn(CallerNote.REPLAY_LATE, late)
        return sent.end_ms if sent and sent.end is not None else self.clock.now_ms()

    def llm_report(self) -> dict[str, Any]:
        if self.scenario.caller.driver != "llm":
            return {}
        return {
            "llm": {
                "endpoint": self.llm_endpoint.describe() if self.llm_endpoint else None,
                "turns": [t.to_dict() for t in self.llm_turns],
                "replayed": sum(1 for t in self.llm_turns if t.source == "replayed"),
                "asked": sum(1 for t in self.llm_turns if t.source == "llm"),
                "asked_mid_turn": self.llm_asked_mid_turn,
            }
        }
