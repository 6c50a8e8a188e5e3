"""What the scripted caller did, as result.json's ``script`` and the caller channel's truth (a
mixin of ``ScriptedCaller``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnscope.actors.caller.acoustics import acoustics_of
from turnscope.actors.caller.lines import LineRecord, quote
from turnscope.actors.caller.recorded import recorded_of
from turnscope.actors.caller.voices.record import caller_voices

if TYPE_CHECKING:
    from turnscope.actors.caller.caller import ScriptedCaller


class CallerReport:
    """Per line, what was spoken and how; the caller channel's truth."""

    def planned(self: ScriptedCaller, kind: str) -> int:
        return sum(1 for _, line, _ in self.lines if line.kind == kind)

    def exercised(self: ScriptedCaller, kind: str) -> int:
        return sum(1 for r in self.records if r.kind == kind and r.spoken_as == kind)

    def report(self: ScriptedCaller) -> dict[str, Any]:
        """Per line what was spoken and how, the greeting, barge-ins and backchannels planned
        and exercised, and how the script ended (result.json's ``script``)."""
        done = {r.line for r in self.records}
        unspoken = [LineRecord.unspoken(i, line) for i, line, _ in self.lines if i not in done]
        # By line, and within a line in the order spoken (a fact given before the line itself).
        records = sorted(
            [*self.records, *unspoken],
            key=lambda r: (r.line, r.queued_ms if r.queued_ms is not None else float("inf")),
        )
        opens_with_agent = self.scenario.script[0].speaker == "agent"
        return {
            "finished": self.finished_reason,
            "timed_out": self.timed_out,
            **({"error": self.error} if self.error else {}),
            "greeting": self.greeting or {"expected": opens_with_agent, "heard": None},
            "lines": [r.to_dict() for r in records],
            "spoken": sum(1 for r in records if r.status == "spoken"),
            "not_spoken": [r.line for r in records if r.status != "spoken"],
            "barge_ins": {
                "planned": self.planned("barge_in"),
                "exercised": self.exercised("barge_in"),
            },
            "backchannels": {
                "planned": self.planned("backchannel"),
                "exercised": self.exercised("backchannel"),
            },
            "unanswered_lines": [r.line for r in records if r.agent_answered is False],
            "warnings": list(self.warnings),
            "pauses": list(self.found.pauses),  # made inside its lines, on the call clock
            "voices": caller_voices(self.scenario),
            **acoustics_of(self.scenario, self.bed),
            **recorded_of(self.scenario),
            **self.reactions_report(),
            **self.llm_report(),
        }

    def timeout_line(self: ScriptedCaller) -> str:
        """The one line a call that hit ``caller.timeout_s`` says: what was and was not spoken."""
        spoken = {r.line for r in self.records if r.status == "spoken"}
        unspoken = [(i, line) for i, line, _ in self.lines if i not in spoken]
        said = f"{len(spoken)} of {len(self.lines)} caller lines spoken"
        if unspoken:
            said += "; not spoken: " + ", ".join(
                f"script[{i}] {quote(line.text, 30)}" for i, line in unspoken
            )
        limit = self.scenario.caller.timeout_s
        return f"the call reached the scenario's {limit:g} s timeout ({said})"

    def truth(self: ScriptedCaller) -> dict[str, Any]:
        """When each caller line really went out (the caller channel's ground truth)."""
        return {
            "utterances": [r.to_dict() for r in self.track.log],
            "trace": [r.to_dict() for r in self.records],
            "finished": self.finished_reason,
        }
