"""``reply_gap_ms``: a caller line spoken that long after the agent's voice stops, as the
recorded caller it comes from answered (``from_recording.py``).

``after_agent_ms`` counts from the end of turn the endpointer decides, ``end_of_turn_ms`` (600)
after the agent's last word: a caller who answered sooner, as people do, cannot be reproduced
with it. This counts from the stop itself (known one VAD hangover after it, so a gap shorter
than that is late by the difference), and when the agent speaks again within the gap, from its
next stop: a pause inside the agent's turn longer than the gap is taken for its end, as the
recorded caller's quick reply would have taken it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from turnscope.actors.caller.ear import AgentEar, AgentSpeech

if TYPE_CHECKING:
    from turnscope.actors.caller.lines import LineRecord
    from turnscope.actors.caller.scenario import Line


def last_stop(ear: AgentEar, speech: AgentSpeech) -> float:
    """When the agent's voice last stopped, from ``speech`` on (call ms)."""
    stops = [s for s in ear.stops if s >= speech.start_ms]
    ends = [s.end_ms for s in ear.speeches if s.end_ms is not None and s.end_ms >= speech.start_ms]
    return max([*stops, *ends], default=ear.clock.now_ms())


async def after_stop(ear: AgentEar, speech: AgentSpeech, gap_ms: int) -> float:
    """Wait until the agent, heard speaking in ``speech``, has been quiet for ``gap_ms`` since
    its voice stopped; return when it stopped."""
    while True:
        await ear.wait_for(lambda: not ear.speaking)
        stopped = last_stop(ear, speech)
        resumed = await ear.wait_for(lambda: ear.speaking, stopped + gap_ms)
        if not resumed:
            return stopped


def reply_context(
    script: Sequence[Line], index: int, records: Sequence[LineRecord]
) -> tuple[str | None, float]:
    """For the ``reply_gap_ms`` line ``script[index]``: whom it answers, the speaker of the
    nearest line before it that is no backchannel (a backchannel is no turn: the line still
    answers the agent's turn it was spoken into; after a barge-in, the agent's turn that
    follows it or went on through it), and when the caller's last such line went out (call ms;
    0 before any)."""
    prior = [line for line in script[:index] if line.kind != "backchannel"]
    previous = None if not prior else "agent" if prior[-1].kind == "barge_in" else prior[-1].speaker
    ends = [
        r.sent["end_ms"]
        for r in records
        if r.kind != "backchannel" and r.sent and r.sent.get("end_ms") is not None
    ]
    return previous, (ends[-1] if ends else 0.0)
