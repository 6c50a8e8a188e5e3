"""What the script puts into an agent line: the caller's backchannels and barge-ins said over
it. The reference agent takes a caller speaking over one of its lines for the next of them: a
backchannel it talks on through, as the synthetic call does (before, it yielded to every sound
as to a barge-in and answered the "mm-hmm" with its next line: the shipped backchannel scenario
came out "ahead of the script"), or stops at after the line's ``backchannel_yield_ms`` (a false
yield), answering it only where the script does."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from turnscope.actors.caller.scenario import Scenario

__all__ = ["IntoLine", "lines_into"]


class IntoLine(BaseModel):
    """A caller line the script puts into an agent line: a backchannel (the agent talks on) or
    a barge-in, and whether the script answers it (an agent line comes next)."""

    model_config = ConfigDict(extra="forbid")
    backchannel: bool
    answered: bool


def lines_into(scenario: Scenario, k: int) -> list[IntoLine]:
    """The backchannels and barge-ins right after agent line ``k`` of the script (said into
    it), each answered when an agent line follows it."""
    script, found = scenario.script, []
    for j in range(k + 1, len(script)):
        line = script[j]
        if line.speaker != "caller" or line.kind not in ("backchannel", "barge_in"):
            break
        answered = j + 1 < len(script) and script[j + 1].speaker == "agent"
        found.append(IntoLine(backchannel=line.kind == "backchannel", answered=answered))
    return found
