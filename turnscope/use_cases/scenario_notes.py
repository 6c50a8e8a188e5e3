"""What a live call (or a rendering) will do differently from what a scenario asks, said before
it is placed."""

from __future__ import annotations

from turnscope.actors.caller.fields import EARLY_MS
from turnscope.actors.caller.scenario import Scenario


def first_turn_mid(sc: Scenario) -> list[str]:
    """One line per ``barge_in_at: mid`` / ``backchannel_at: mid`` cutting into the agent's
    first turn: live, ``mid`` is half the agent's typical turn, learnt from the turns it has
    finished, and before its first there are none, so the line is placed as ``early``."""
    notes = []
    for i, line in enumerate(sc.script):
        key = next(
            (k for k in ("barge_in_at", "backchannel_at") if getattr(line, k, None) == "mid"),
            None,
        )
        if key is None:
            continue
        if sum(p.speaker == "agent" for p in sc.script[:i]) <= 1:  # it cuts into the first
            notes.append(
                f"script[{i}].{key}: mid on the agent's first turn is placed {EARLY_MS} ms into "
                "it (as early): live, mid is half the agent's typical turn, learnt from the turns "
                f"it has finished, and there are none yet; give {key[:-3]}_ms to choose the time"
            )
    return notes


def synth_asks_no_llm(sc: Scenario) -> str | None:
    """A line when ``sc``'s caller is LLM-driven: synth asks no LLM, so it renders the script's
    own lines and the agent lines after the last caller line follow each other unanswered."""
    if sc.caller.driver != "llm":
        return None
    return (
        f"{sc.source}: caller.driver is llm, and synth asks no LLM: it renders the script's own "
        "lines, so the agent lines after the last caller line follow each other unanswered "
        "(a call with its LLM caller: turnscope call --caller-llm URL)"
    )
