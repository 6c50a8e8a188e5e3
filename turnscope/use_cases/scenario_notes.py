"""What a live call (or a rendering) will do differently from what a scenario asks, said before
it is placed."""

from __future__ import annotations

from turnscope.actors.caller.agent_lines import no_agent_lines
from turnscope.actors.caller.scenario import Scenario


def needs_phone_line(sc: Scenario) -> str | None:
    """A line when ``sc`` presses keys: dtmf goes only over a phone line (call and load refuse
    any other transport with it; scenario check notes it)."""
    if not sc.dtmf_lines:
        return None
    return (
        f"script[{sc.dtmf_lines[0]}] presses keys (dtmf): that needs a phone-line call "
        "(a ws:// URL with --transport twilio, telnyx, plivo or exotel)"
    )


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


def synth_has_no_agent(sc: Scenario) -> str | None:
    """A line when ``sc``'s script is the caller's lines alone: live, each answers the agent's
    turn; synth has no agent, so it renders them back to back."""
    if not no_agent_lines(sc):
        return None
    return (
        f"{sc.source}: the script has no agent line: synth renders its caller lines back to "
        "back, with no agent between them (a live call waits for the agent's answer to each: "
        "turnscope call URL --scenario FILE)"
    )
