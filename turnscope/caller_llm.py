"""What an LLM-driven caller needs before a call: its endpoint (URL, model, a key from the
environment, registered as a secret) and, to replay a call, the recorded caller's decisions."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnscope import redact
from turnscope.actors.caller.llm import LlmEndpoint
from turnscope.actors.caller.scenario import Scenario
from turnscope.errors import InputError
from turnscope.jsonio import read_json

__all__ = ["CallerLlm", "caller_endpoint", "checked_llm", "recorded_turns", "suite_caller"]


@dataclass(frozen=True)
class CallerLlm:
    """The LLM a caller asks, as its flags name it (checked; the URL and key registered as
    secrets): each scenario's endpoint is made from it (its model, else the scenario's)."""

    url: str
    model: str | None = None
    key: str | None = field(default=None, repr=False)

    def endpoint(self, scenario: Scenario) -> LlmEndpoint:
        """The endpoint ``scenario``'s caller asks."""
        return LlmEndpoint(self.url, self.model or scenario.caller.llm.model or "default", self.key)


def checked_llm(url: str | None, model: str | None, key_env: str | None) -> CallerLlm | None:
    """The caller's LLM from the flags (None without ``url``); InputError for a bad URL, a key
    variable that is not set, or a model or key without a URL."""
    if url is None:
        if model is not None or key_env is not None:
            raise InputError("--caller-llm-model and --caller-llm-key-env need --caller-llm URL")
        return None
    if not url.startswith(("http://", "https://")):
        raise InputError(
            f"--caller-llm {url!r}: give the base URL of an OpenAI-compatible API "
            "(e.g. http://127.0.0.1:8000/v1)"
        )
    redact.register_url(url)
    key = None
    if key_env is not None:
        key = os.environ.get(key_env)
        if not key:
            raise InputError(f"--caller-llm-key-env {key_env}: that variable is not set")
        redact.register([key, f"Bearer {key}"])
    return CallerLlm(url, model, key)


def caller_endpoint(
    scenario: Scenario, url: str | None, model: str | None, key_env: str | None
) -> LlmEndpoint | None:
    """The caller's LLM endpoint from the flags (None without ``url``); InputError for a
    scenario whose caller no LLM drives (the flag would do nothing)."""
    if url is not None:
        _needs_llm_driver(scenario, "--caller-llm")
    llm = checked_llm(url, model, key_env)
    return None if llm is None else llm.endpoint(scenario)


def llm_for_load(scenario: Scenario, llm: CallerLlm | None) -> LlmEndpoint | None:
    """The endpoint a load run's callers ask (``llm``: the checked flags); InputError for an
    LLM-driven scenario without one (every call would fail) or one given for a scripted
    caller (nothing would use it)."""
    if llm is not None:
        _needs_llm_driver(scenario, "--caller-llm")
        return llm.endpoint(scenario)
    if scenario.caller.driver == "llm":
        raise InputError(
            "caller.driver is llm: every call's caller asks an LLM, and none was given",
            path=scenario.source,
            fix="give --caller-llm URL (an OpenAI-compatible chat-completions API, e.g. "
            "http://127.0.0.1:8000/v1), or a scripted scenario",
        )
    return None


def suite_caller(
    scenario: Scenario, caller_from: Path | None, llm: CallerLlm | None
) -> tuple[list[dict[str, Any]] | None, LlmEndpoint | None]:
    """A suite's live fixture's caller: the recorded turns it replays (``caller_from``) and the
    LLM it asks (bench ``--caller-llm``: where nothing is pinned, or where the agent diverges
    from the pinned call); InputError for an LLM-driven scenario with neither. A scripted
    caller asks no LLM."""
    if scenario.caller.driver != "llm":
        if caller_from is not None:
            _needs_llm_driver(scenario, "caller_from")  # the fixture's key, not call's flag
        return None, None
    replay = recorded_turns(caller_from, scenario, key="caller_from") if caller_from else None
    if replay is None and llm is None:
        raise InputError(
            "the scenario's caller is LLM-driven: give the fixture caller_from: BUNDLE (a call "
            "recorded with turnscope call --caller-llm URL), whose caller it replays, or run "
            "bench with --caller-llm URL",
            path=scenario.source,
        )
    return replay, None if llm is None else llm.endpoint(scenario)


def _needs_llm_driver(scenario: Scenario, flag: str) -> None:
    if scenario.caller.driver != "llm":
        raise InputError(
            f"{flag} is for an LLM-driven caller, and this scenario's caller is scripted "
            "(caller.driver: script): nothing would use it",
            path=scenario.source,
            fix=f"set caller.driver: llm with a goal and facts (docs/guide/caller.md; "
            f"configs/scenarios/order-status-llm.yaml), or leave {flag} out",
        )


def recorded_turns(
    bundle: Path, scenario: Scenario | None = None, *, key: str = "--caller-from"
) -> list[dict[str, Any]]:
    """The LLM caller's recorded turns of an earlier call's bundle (``--caller-from``, a
    suite fixture's ``caller_from``: ``key``), for ``scenario``: InputError when its caller
    is scripted (nothing would replay them) or the call was of another scenario (its turns
    answer another conversation)."""
    if scenario is not None:
        _needs_llm_driver(scenario, key)
    path = bundle / "result.json" if bundle.is_dir() else bundle
    doc = read_json(path, what="result.json of the call to replay")
    recorded = doc.get("scenario") if isinstance(doc, dict) else None
    if scenario is not None and isinstance(recorded, str) and recorded != scenario.name:
        raise InputError(
            f"{key}: this call was of scenario {recorded!r}, not {scenario.name!r}: its "
            "caller's turns answer another conversation",
            path=path,
            fix=f"replay it with scenario {recorded!r}, or record a call of {scenario.name!r} "
            "with turnscope call --caller-llm URL",
        )
    turns = (
        ((doc.get("script") or {}).get("llm") or {}).get("turns") if isinstance(doc, dict) else None
    )
    if not isinstance(turns, list) or not turns:
        raise InputError(
            "holds no LLM caller turns to replay (record a call with caller.driver: llm first)",
            path=path,
        )
    good = [t for t in turns if isinstance(t, dict) and isinstance(t.get("action"), dict)]
    if len(good) != len(turns):
        raise InputError("its script.llm.turns are not a recorded caller's turns", path=path)
    return good
