"""The local LLM the LLM-driven caller's tests talk to: a real OpenAI-compatible server on
127.0.0.1 (llama.cpp's, serving SmolLM2-135M-Instruct from .venv-llm) answers real
chat-completions requests, plain and JSON-constrained (``response_format: json_object``)."""

from __future__ import annotations

import json
import time
import urllib.request

from tests.interop.llm_server import llm_server

PROMPT = [
    {
        "role": "system",
        "content": "You are a customer calling a shop about a refund. Reply in JSON.",
    },
    {
        "role": "user",
        "content": 'Shop: "Hello, how can I help you?" Reply with a JSON object {"say": "..."}.',
    },
]


def chat(url: str, body: dict, timeout: float = 120.0) -> tuple[dict, float]:
    """POST {url}/chat/completions; (the JSON answer, seconds taken)."""
    req = urllib.request.Request(
        f"{url}/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    t0 = time.monotonic()
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        assert resp.status == 200
        answer = json.loads(resp.read())
    return answer, time.monotonic() - t0


def test_local_llm_answers_chat_completions(tmp_path):
    with llm_server(tmp_path) as llm:
        assert llm.url.startswith("http://127.0.0.1:") and llm.url.endswith("/v1")
        base = {
            "model": llm.model,
            "messages": PROMPT,
            "temperature": 0,
            "seed": 7,
            "max_tokens": 40,
        }
        plain, plain_s = chat(llm.url, base)
        constrained, constrained_s = chat(
            llm.url, {**base, "response_format": {"type": "json_object"}}
        )

    message = plain["choices"][0]["message"]
    assert message["role"] == "assistant"
    assert message["content"].strip(), plain
    # Grammar-constrained: the answer is a JSON object (unless cut short by max_tokens).
    choice = constrained["choices"][0]
    text = choice["message"]["content"]
    assert text.strip(), constrained
    if choice["finish_reason"] == "stop":
        assert isinstance(json.loads(text), dict), text
    else:
        assert text.lstrip().startswith("{"), text
    print(
        f"local LLM: startup {llm.startup_s:.2f} s; "
        f"plain {plain['usage']['completion_tokens']} tokens in {plain_s:.2f} s; "
        f"json_object {constrained['usage']['completion_tokens']} tokens in {constrained_s:.2f} s"
        f"\nplain: {message['content']!r}\njson_object: {text!r}"
    )
