"""`turnscope agent` as functions: the reference agent's behaviour from its knobs, served on
127.0.0.1 (SmallWebRTC, WHIP and a carrier's websocket) or on sound devices."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from turnscope.actors.agent.behaviour import AgentBehaviour, prompt_audio
from turnscope.actors.agent.server import AgentServer
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.configs import config_path
from turnscope.errors import InputError
from turnscope.jsonio import one_line
from turnscope.settle import ENDPOINTER_MODULES, settle_heap

if TYPE_CHECKING:  # the sound stack is imported only to serve on devices
    from turnscope.actors.agent.device import DeviceAgent, DeviceAgentOptions


def agent_behaviour(
    scenario: str | Path | None = None,
    lines: list[str] | None = None,
    knobs: Mapping[str, Any] | None = None,
) -> AgentBehaviour:
    """The agent's behaviour: a scenario's agent side (default: the refund call) or ``lines``
    as its prompts, with the ``knobs`` given (None: not given) on top."""
    given = {k: v for k, v in (knobs or {}).items() if v is not None}
    if lines and scenario is not None:  # one would be dropped without a word
        raise InputError("--scenario and --line are two ways to give the agent its prompts: "
                         "pick one")  # fmt: skip
    try:
        if lines:
            return AgentBehaviour.model_validate({"lines": [{"text": t} for t in lines], **given})
        sc = load_scenario(scenario or config_path("scenarios", "refund-call.yaml"))
        return AgentBehaviour.from_scenario(sc, **given)
    except ValidationError as exc:
        first = exc.errors()[0]
        if first["loc"] and first["loc"][0] in given:  # a command line's knob: name its flag
            flag = "--" + str(first["loc"][0]).replace("_", "-")
            raise InputError(f"{flag}: {first['msg']}") from None
        raise InputError(one_line(exc, prefix="agent")) from None


def wire_knobs_apply(behaviour: AgentBehaviour, *, device: bool, phone: str | None) -> None:
    """InputError for a knob that shapes a call's packets where it has none to shape:
    ``--drop-every``, ``--swap-every`` and ``--dtx`` on sound devices, ``--swap-every`` and
    ``--dtx`` on a phone line (``phone``: its dialect)."""
    if device and (behaviour.drop_every is not None or behaviour.swap_every or behaviour.dtx):
        raise InputError("--drop-every, --swap-every and --dtx shape packets on a call's wire; "
                         "they do not apply to --device")  # fmt: skip
    if phone and behaviour.swap_every:
        raise InputError(f"--swap-every reorders a WebRTC sender's packets; a phone line's "
                         f"websocket delivers in order: not with --transport {phone}")  # fmt: skip
    if behaviour.drop_in_pauses and (behaviour.drop_every is None or phone):
        raise InputError("--drop-in-pauses loses --drop-every's packets only in the "
                         "agent's pauses of a WebRTC call: give --drop-every N, not "
                         "--transport")  # fmt: skip
    if phone and behaviour.dtx:
        raise InputError(f"--dtx leaves a WebRTC sender's pauses unsent (Opus DTX); a phone "
                         f"line's media does not pause: not with --transport {phone}")  # fmt: skip


def append_truth(path: Path | None, truth: dict[str, Any]) -> None:
    """One call's ground truth appended to the truth log (JSON lines)."""
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(truth) + "\n")


def serve_agent(
    behaviour: AgentBehaviour,
    *,
    port: int = 8080,
    truth_log: Path | None = None,
    dialect: str | None = None,
    on_listening: Callable[[str], None] | None = None,
) -> None:
    """Serve the agent on 127.0.0.1:``port`` until Ctrl-C (``dialect``: the carrier whose
    messages /ws expects; None: WebRTC). ``on_listening`` hears the base URL."""

    async def serve() -> None:
        await asyncio.to_thread(prompt_audio, behaviour)  # its voice speaks, or says why not
        server = AgentServer(behaviour, port=port, truth_log=truth_log, dialect=dialect)
        try:
            base = await server.start()
        except OSError as exc:
            raise InputError(
                f"cannot listen on 127.0.0.1:{port}: {exc.strerror}", fix="pick another --port"
            ) from None
        # The agent hears its callers with the same endpointer: what that imports on a turn's
        # first close, imported now, so that it never holds up the replies being sent.
        settle_heap(ENDPOINTER_MODULES)
        if on_listening is not None:
            on_listening(base)
        try:
            await asyncio.Event().wait()
        finally:
            await server.stop()

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(serve())


def serve_on_devices(
    behaviour: AgentBehaviour,
    options: DeviceAgentOptions,
    *,
    truth_log: Path | None = None,
    on_ready: Callable[[DeviceAgent], None] | None = None,
    on_call_ended: Callable[[dict[str, Any]], None] | None = None,
) -> str | None:
    """Serve the agent on sound devices until Ctrl-C or SIGTERM, every call's truth appended
    to ``truth_log``; None, or why it stopped otherwise (a device gone). CallSetupError when
    the devices cannot be opened."""
    from turnscope.actors.agent.device import DeviceAgent

    def ended(truth: dict[str, Any]) -> None:
        append_truth(truth_log, truth)
        if on_call_ended is not None:
            on_call_ended(truth)

    async def serve() -> str | None:
        agent = DeviceAgent(behaviour, options, on_session_end=ended)
        settle_heap(ENDPOINTER_MODULES)  # as serve_agent's, before the devices run
        await agent.start()
        loop = asyncio.get_running_loop()
        for sig, why in ((signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")):
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.add_signal_handler(sig, agent.stop, why)
        if on_ready is not None:
            on_ready(agent)
        try:
            await agent.stopped.wait()
        finally:
            agent.close()
        reason = agent.stop_reason or ""
        return None if reason in ("interrupted", "terminated") else reason

    return asyncio.run(serve())
