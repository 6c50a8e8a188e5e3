"""The flags that name the LLM an LLM-driven caller asks, shared by `call`, `bench` and `load`."""

from __future__ import annotations

from typing import Any

import typer


def caller_llm_options() -> tuple[Any, Any, Any]:
    """``--caller-llm``, ``--caller-llm-model``, ``--caller-llm-key-env``: the LLM an
    LLM-driven caller asks (call, bench, load)."""
    return (
        typer.Option(
            None,
            "--caller-llm",
            help="caller.driver llm: the OpenAI-compatible API its LLM answers on "
            "(http://HOST:PORT/v1: Ollama, llama.cpp's server, vLLM, a hosted API).",
        ),
        typer.Option(
            None, "--caller-llm-model", help="The model name to ask (default: caller.llm.model)."
        ),
        typer.Option(
            None,
            "--caller-llm-key-env",
            help="Environment variable holding the API key (never saved).",
        ),
    )
