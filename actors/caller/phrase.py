"""Barge-ins and backchannels keyed on the agent's words (``barge_in_on: refund policy``).

Live, the caller is fed partial transcripts of the agent's running utterance (``Partial``: the
utterance so far, decoded every few hundred ms while a phrase line waits) and speaks the line
the moment one holds the phrase, normalised as WER is (``reactive.test``). Each such line
records when the phrase was found, up to where the agent's audio had been decoded, when the
phrase was spoken (the end of its last word by Whisper's word times, else the decoded audio's
end) and, once the line went out, the lag from the phrase to the barge-in.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import TYPE_CHECKING, Any

from turnscope.actors.caller.lines import LineRecord, quote
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.reactive import test
from turnscope.actors.caller.scenario import DEFAULT_THINK_MS, PHRASE_TRIGGERS, Condition, Line

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller
    from turnscope.actors.caller.ear import AgentSpeech

# The pipeline's endpointer and the caller's open the utterance at the same time; a little slack.
START_SLACK_MS = 50


@dataclass(frozen=True)
class Partial:
    """What the agent's running utterance (from ``start_ms``) had said up to ``upto_ms``, and
    when the caller had it."""

    start_ms: float
    upto_ms: float
    text: str
    words: tuple[tuple[str, float, float], ...]  # (word, start, end), call ms
    heard_ms: float


class SpokenFrom(str, Enum):
    """Where the estimate of when the phrase was spoken comes from."""

    WORD_TIMES = "word_times"  # the end of the phrase's last word
    PARTIAL_END = "partial_end"  # the end of the audio decoded (no word times matched it)


@dataclass(frozen=True)
class PhraseHit:
    """A phrase found in a partial transcript."""

    phrase: str
    found_ms: float  # when the partial holding it reached the caller
    upto_ms: float  # where that partial's audio ended
    spoken_ms: float  # when the phrase was spoken (estimated)
    spoken_from: SpokenFrom
    heard: str  # the partial's text
    partials: int  # partials of the agent's turn the caller had by then

    def to_dict(self, sent: dict[str, Any] | None) -> dict[str, Any]:
        d: dict[str, Any] = {
            "phrase": self.phrase,
            "found_ms": round(self.found_ms, 1),
            "upto_ms": round(self.upto_ms, 1),
            "spoken_ms": round(self.spoken_ms, 1),
            "spoken_from": self.spoken_from.value,
            "heard": self.heard,
            "partials": self.partials,
        }
        if sent and sent.get("start_ms") is not None:
            d["sent_ms"] = sent["start_ms"]
            d["lag_ms"] = round(sent["start_ms"] - self.spoken_ms, 1)  # phrase -> barge-in out
        return d


def words_through(words: list[str], phrase: str) -> int | None:
    """How many of ``words`` it takes to say ``phrase`` (its last word's position + 1)."""
    condition = Condition(says=[phrase])
    return next((k for k in range(1, len(words) + 1) if test(condition, " ".join(words[:k]))), None)


def spoken_at(partial: Partial, phrase: str) -> tuple[float, SpokenFrom]:
    """When ``phrase`` was spoken in ``partial``: its last word's end, else the audio's end."""
    k = words_through([w for w, _, _ in partial.words], phrase)
    if k is None:
        return partial.upto_ms, SpokenFrom.PARTIAL_END
    return partial.words[k - 1][2], SpokenFrom.WORD_TIMES


class PhraseTriggers:
    """The scripted caller's part for phrase lines (a mixin of ``ScriptedCaller``)."""

    def partial(self: ScriptedCaller, partial: Partial) -> None:
        """A partial transcript of the agent's running utterance (``turnscope.partials``)."""
        self.ear.partial(partial)

    def wants_partials(self: ScriptedCaller) -> bool:
        """Whether a phrase line is waiting for the agent's words (partials cost the worker)."""
        if self._llm_listening:
            return True
        rec = self.records[-1] if self.records else None
        if rec is None or rec.trigger not in PHRASE_TRIGGERS:
            return False
        return rec.status != "spoken" and rec.phrase is None

    async def _on_phrase(
        self: ScriptedCaller, index: int, line: Line, speech: AgentSpeech, rec: LineRecord
    ) -> str:
        """Wait for ``line.phrase`` in a partial of the agent's turn ``speech``; what the line
        is spoken as (an ordinary reply when the turn ends without it)."""
        phrase = str(line.phrase)
        rec.trigger_ms = None
        condition = Condition(says=[phrase])

        def mine() -> list[Partial]:
            return [p for p in self.ear.partials if p.start_ms >= speech.start_ms - START_SLACK_MS]

        def found() -> Partial | bool:
            hit = next((p for p in mine() if test(condition, p.text)), None)
            return hit or speech.decided_ms is not None

        hit = await self.ear.wait_for(found)
        if isinstance(hit, Partial):
            spoken, source = spoken_at(hit, phrase)
            partials = sum(1 for p in mine() if p.heard_ms <= hit.heard_ms)
            rec.phrase = PhraseHit(phrase, hit.heard_ms, hit.upto_ms, spoken, source, hit.text,
                                   partials)  # fmt: skip
            return line.kind
        what = "barge-in" if line.kind == "barge_in" else "backchannel"
        heard = mine()
        rec.agent_turn_ms = round(speech.length_ms, 1)
        self._warn(
            CallerNote.NOT_EXERCISED,
            f"script[{index}] {quote(line.text)}: planned as a {what} when the agent says "
            f"{phrase!r}, but its turn ended without it ({len(heard)} partial transcripts, last "
            f"{quote(heard[-1].text if heard else '')}); spoken as an ordinary reply (the {what} "
            "was not exercised)",
        )
        decided = speech.decided_ms or self.clock.now_ms()
        await self._quiet_then(decided + DEFAULT_THINK_MS, DEFAULT_THINK_MS, rec)
        return "line"
