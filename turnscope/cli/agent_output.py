"""What `turnscope agent` says while it serves: where it listens and how to call it, its sound
devices' timing, each call that ended; and its exit code."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnscope.cli.console import fail_line, out, say
from turnscope.cli.exit_codes import ExitCode
from turnscope.errors import CallSetupError

if TYPE_CHECKING:
    from turnscope.actors.agent.behaviour import AgentBehaviour
    from turnscope.actors.agent.device import DeviceAgent, DeviceAgentOptions


def say_listening(base: str, phone: str | None) -> None:
    """Where the agent listens, and the command that calls it."""
    ws = base.replace("http://", "ws://") + "/ws"
    if phone:
        say(f"reference agent on {ws} (a {phone} media stream)")
        call = f"turnscope call {ws} --transport {phone}"
    else:
        say(
            f"reference agent on {base}: SmallWebRTC {base}/api/offer, WHIP {base}/whip, "
            f"phone-line websocket {ws}"
        )
        call = f"turnscope call {base}/api/offer --loopback-only"
    say(f"call it: {call} --scenario configs/scenarios/refund-call.yaml")


def serve_devices(
    behaviour: AgentBehaviour, options: DeviceAgentOptions, truth_log: Path | None
) -> int:
    """Run the device agent until Ctrl-C or SIGTERM; every call's truth goes to the log."""
    from turnscope.use_cases.agent_serve import serve_on_devices

    def ready(agent: DeviceAgent) -> None:
        cal = agent.calibration
        timing = (
            f"calibrated ({cal.correction_ms:+.2f} ms, spread {cal.spread_ms:.2f} ms)"
            if cal
            else f"not calibrated ({agent.uncalibrated})"
        )
        out.print(
            f"reference agent on sound devices: hears {agent.capture.name!r}, speaks into "
            f"{agent.player.name!r}; timing {timing}",
            soft_wrap=True,
        )
        say("waiting for a call (a device call opens with its ring)")

    def ended(truth: dict[str, Any]) -> None:
        say(f"call ended ({truth['end_reason']}): {len(truth['utterances'])} prompts")

    try:
        problem = serve_on_devices(behaviour, options, truth_log=truth_log, on_ready=ready,
                                   on_call_ended=ended)  # fmt: skip
    except CallSetupError as exc:
        fail_line(str(exc))
        return ExitCode.INCOMPLETE  # a device stopped while serving
    if problem:
        fail_line(f"{problem}; the device was unplugged or its sound server went away")
        return ExitCode.INCOMPLETE  # a device stopped while serving
    return 0
