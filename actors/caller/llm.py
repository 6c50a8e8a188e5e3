"""The LLM that drives a caller: any OpenAI-compatible chat-completions endpoint the user names.

It is given the persona, the goal and the facts, and the conversation so far (the agent's turns
as transcribed live, its own lines), and answers with one structured action. Everything that
comes back is untrusted input: read within limits, validated, and a failure is a ``CallerLlmError``
with a reason (an enum), never the agent's fault. The API key comes from an environment variable
and is registered as a secret (never written or printed).
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

import aiohttp
from pydantic import BaseModel, ConfigDict, ValidationError

from turnscope.actors.caller.fields import DTMF_DIGITS, MAX_LINE_CHARS, LlmCallerSpec
from turnscope.capture.urls import public_url
from turnscope.errors import printable
from turnscope.jsonio import MESSAGE_LIMITS, ParseError, loads

__all__ = [
    "SPOKEN_ACTIONS",
    "CallerAction",
    "CallerLlmError",
    "LlmEndpoint",
    "LlmFailure",
    "LlmReply",
    "ask",
    "ask_repairing",
    "system_prompt",
]

MAX_BODY = 1024 * 1024  # a chat completion of a few hundred tokens is a few KB
ACTIONS = ("say", "wait", "press", "hang_up", "goal_reached", "barge_in", "backchannel")
# While the agent is still speaking the caller can only let it go on or cut in.
MID_TURN_ACTIONS = ("wait", "barge_in", "backchannel")
SPOKEN_ACTIONS = ("say", "barge_in", "backchannel")  # the actions that are a line to say


def response_schema(actions: tuple[str, ...] = ACTIONS) -> dict[str, Any]:
    """OpenAI's structured output (llama.cpp's server, vLLM and Ollama take it too): the model
    can only answer with one of ``actions`` in this shape. A server that refuses it gets plain
    JSON mode instead (and the answer is checked here)."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "caller_action",
            "strict": True,
            "schema": {
                "type": "object",
                "properties": {
                    "action": {"type": "string", "enum": list(actions)},
                    "text": {"type": "string", "maxLength": 160},  # two short sentences
                    "keys": {"type": "string", "maxLength": 32},
                },
                "required": ["action", "text"],
                "additionalProperties": False,
            },
        },
    }


@dataclass(frozen=True)
class LlmEndpoint:
    """Where the caller's LLM is: the base URL (``http://HOST:PORT/v1``), the model, a key."""

    url: str
    model: str
    api_key: str | None = field(default=None, repr=False)

    @property
    def completions(self) -> str:
        return self.url.rstrip("/") + "/chat/completions"

    def describe(self) -> str:
        return f"{public_url(self.url)} (model {self.model})"


class LlmFailure(str, Enum):
    """Why the caller's LLM gave no usable action."""

    UNREACHABLE = "unreachable"
    TOO_SLOW = "too slow"
    HTTP_ERROR = "http error"
    MALFORMED = "malformed"
    UNKNOWN_ACTION = "unknown action"
    EMPTY_LINE = "empty line"
    LINE_TOO_LONG = "line too long"
    NO_WORDS = "no words"  # mostly symbols: nothing a person would say
    REFUSED = "refused"


# An answer of these can be asked for again, once: the model answered, but unusably.
REPAIRABLE = frozenset(
    {LlmFailure.MALFORMED, LlmFailure.UNKNOWN_ACTION, LlmFailure.EMPTY_LINE,
     LlmFailure.LINE_TOO_LONG, LlmFailure.NO_WORDS}
)  # fmt: skip
# What the model is told when its answer could not be used (``ask_repairing``).
REPAIR = (
    "(Not the agent: your last answer could not be used: {why}. Answer again with one JSON "
    'object, for example {{"action": "say", "text": "a short plain sentence"}}.)'
)
# Characters a spoken line is made of besides letters, digits and spaces.
SPOKEN_MARKS = frozenset(".,;:!?'\"-()%$&/")
MAX_ODD_SHARE = 0.2  # a line with more other characters than this is not words


class CallerLlmError(Exception):
    """The caller's LLM failed (the caller's fault, never the agent's)."""

    def __init__(self, reason: LlmFailure, detail: str, status: int | None = None) -> None:
        super().__init__(f"{reason.value}: {detail}")
        self.reason = reason
        self.detail = detail
        self.status = status


class CallerAction(BaseModel):
    """What the caller does next."""

    model_config = ConfigDict(extra="ignore")

    action: Literal["say", "wait", "press", "hang_up", "goal_reached", "barge_in", "backchannel"]
    # (the names of ACTIONS, spelled out for the type checker)
    text: str = ""
    keys: str = ""


@dataclass
class LlmReply:
    action: CallerAction
    latency_ms: float
    raw: str
    repaired: str | None = None  # the unusable first answer's failure, when asked again


def system_prompt(persona: str, goal: str, facts: dict[str, str], interrupts: bool = False) -> str:
    """The caller's instructions: who it is, what it wants, what it knows, how to answer (and,
    with ``interrupts``, that it hears the agent mid-sentence and may cut in)."""
    known = "; ".join(f"{k}: {v}" for k, v in facts.items()) or "nothing in particular"
    return (
        "You are a person phoning a company's voice agent. You are the CALLER, never the "
        "agent. "
        f"Who you are: {persona or 'an ordinary customer'}. "
        f"What you want from this call: {goal or 'to get help'}. "
        f"What you know: {known}. "
        "The user messages are what the agent said. Answer with ONLY a JSON object: "
        '{"action": "say", "text": "..."} to speak one or two short sentences as the caller; '
        '{"action": "wait"} to say nothing; {"action": "press", "keys": "123#"} to press '
        'phone keys; {"action": "goal_reached"} when you have what you wanted; '
        '{"action": "hang_up"} to end the call.'
    ) + (
        " An agent message that ends with ... is still being spoken: answer "
        '{"action": "wait"} to let the agent finish, {"action": "barge_in", "text": "..."} to '
        'interrupt it now, or {"action": "backchannel", "text": "mm-hmm"} to show you listen.'
        if interrupts
        else ""
    )


def _action(content: str, refusal: Any) -> CallerAction:
    if refusal:
        raise CallerLlmError(LlmFailure.REFUSED, printable(str(refusal), 200))
    try:
        data = loads(content, limits=MESSAGE_LIMITS)
        if isinstance(data, dict) and "action" not in data and data.get("text"):
            data = {**data, "action": "say"}  # small models often leave the action out
        action = CallerAction.model_validate(data)
    except ParseError as exc:
        raise CallerLlmError(
            LlmFailure.MALFORMED, f"not a JSON object ({exc}): {printable(content, 120)}"
        ) from None
    except ValidationError as exc:
        unknown = any(e.get("loc") == ("action",) for e in exc.errors())
        reason = LlmFailure.UNKNOWN_ACTION if unknown else LlmFailure.MALFORMED
        raise CallerLlmError(reason, printable(content, 200)) from None
    text = " ".join(action.text.split())
    if action.action in SPOKEN_ACTIONS:
        if not text:
            raise CallerLlmError(LlmFailure.EMPTY_LINE, "an empty line to say")
        odd = sum(1 for ch in text if not (ch.isalnum() or ch.isspace() or ch in SPOKEN_MARKS))
        if odd > MAX_ODD_SHARE * len(text) or not any(ch.isalnum() for ch in text):
            raise CallerLlmError(LlmFailure.NO_WORDS, printable(text, 80))
        if len(text) > MAX_LINE_CHARS:
            raise CallerLlmError(
                LlmFailure.LINE_TOO_LONG,
                f"a line of {len(text)} characters (at most {MAX_LINE_CHARS}: about a minute)",
            )
    if action.action == "press" and (not action.keys or set(action.keys) - set(DTMF_DIGITS)):
        raise CallerLlmError(LlmFailure.MALFORMED, f"keys {printable(action.keys, 40)!r}")
    return action.model_copy(update={"text": text})


async def ask(
    endpoint: LlmEndpoint,
    spec: LlmCallerSpec,
    messages: list[dict[str, str]],
    actions: tuple[str, ...] = ACTIONS,
) -> LlmReply:
    """One chat completion: the caller's next action, one of ``actions`` (CallerLlmError when
    there is none)."""
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": messages,
        "temperature": spec.temperature,
        "max_tokens": spec.max_tokens,
        "response_format": response_schema(actions),
    }
    if spec.seed is not None:
        body["seed"] = spec.seed
    headers = {"Authorization": f"Bearer {endpoint.api_key}"} if endpoint.api_key else {}
    deadline = spec.deadline_ms / 1000
    t0 = time.monotonic()
    try:
        try:
            raw = await asyncio.wait_for(_post(endpoint.completions, body, headers), deadline)
        except CallerLlmError as exc:
            if exc.reason is not LlmFailure.HTTP_ERROR or exc.status not in (400, 422):
                raise
            # A server without JSON-schema output: JSON of any shape, checked here.
            body["response_format"] = {"type": "json_object"}
            left = max(0.1, deadline - (time.monotonic() - t0))
            raw = await asyncio.wait_for(_post(endpoint.completions, body, headers), left)
    except (asyncio.TimeoutError, TimeoutError):
        raise CallerLlmError(
            LlmFailure.TOO_SLOW, f"no answer within the caller's {spec.deadline_ms} ms"
        ) from None
    except (aiohttp.ClientError, OSError) as exc:
        why = getattr(exc, "strerror", None) or printable(str(exc), 200) or type(exc).__name__
        raise CallerLlmError(LlmFailure.UNREACHABLE, why) from None
    latency = (time.monotonic() - t0) * 1000
    if len(raw) > MAX_BODY:
        raise CallerLlmError(LlmFailure.MALFORMED, f"an answer over {MAX_BODY // 1024} KiB")
    try:
        doc = loads(raw, limits=MESSAGE_LIMITS)
        message = doc["choices"][0]["message"]
        content = message.get("content") or ""
        refusal = message.get("refusal")
    except (ParseError, KeyError, IndexError, TypeError, AttributeError):
        raise CallerLlmError(
            LlmFailure.MALFORMED,
            f"not a chat completion: {printable(raw.decode('utf-8', 'replace'), 200)}",
        ) from None
    action = _action(str(content), refusal)
    if action.action not in actions:  # a server without structured output chose another
        raise CallerLlmError(LlmFailure.UNKNOWN_ACTION, f"{action.action} (here: {actions})")
    return LlmReply(action, latency, str(content)[:2000])


async def _post(url: str, body: dict[str, Any], headers: dict[str, str]) -> bytes:
    """POST ``body``; the answer's bytes (at most MAX_BODY + 1 of them are read)."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=body, headers=headers, allow_redirects=False) as resp,
    ):
        raw = await resp.content.read(MAX_BODY + 1)
        if resp.status != 200:
            text = printable(raw.decode("utf-8", "replace"), 200)
            raise CallerLlmError(LlmFailure.HTTP_ERROR, f"HTTP {resp.status}: {text}", resp.status)
        return raw


async def ask_repairing(
    endpoint: LlmEndpoint,
    spec: LlmCallerSpec,
    messages: list[dict[str, str]],
    actions: tuple[str, ...] = ACTIONS,
) -> LlmReply:
    """``ask``; an answer that came but cannot be used (REPAIRABLE) is asked for once more,
    the model told why, as a person would be asked again. Its latency is both answers'."""
    t0 = time.monotonic()
    try:
        return await ask(endpoint, spec, messages, actions)
    except CallerLlmError as exc:
        if exc.reason not in REPAIRABLE:
            raise
        first = exc
    again = [*messages, {"role": "user", "content": REPAIR.format(why=first)}]
    reply = await ask(endpoint, spec, again, actions)
    reply.latency_ms = (time.monotonic() - t0) * 1000
    reply.repaired = str(first)
    return reply
