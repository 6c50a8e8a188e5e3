"""The live caller's voice when a scenario names none: the neural Piper voice where it is
installed (above all on a phone line, where tiny.en loses 35-58% of an espeak-ng caller's words
and about 8% of the Piper voice's: benchmarks/voices.py), else espeak-ng ``en-us``, named as the
fallback. A scenario that names a voice (or a pitch, which is espeak-ng's) keeps it; ``turnscope
synth`` keeps espeak-ng, so a synthetic corpus does not change with what is installed.
"""

from __future__ import annotations

import functools
import importlib.util
from typing import TYPE_CHECKING

from turnscope.actors.caller.voices.spec import PACKAGED, VOICES_FIX

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Scenario

NEURAL = "piper:joe-us"
FALLBACK = "en-us"


@functools.lru_cache(maxsize=1)
def neural_installed() -> bool:
    """Whether the packaged Piper voice and onnxruntime are installed (a lookup, no import)."""
    package = PACKAGED[NEURAL.split(":", 1)[1]][0]
    return all(importlib.util.find_spec(m) is not None for m in (package, "onnxruntime"))


def chosen(scenario: Scenario) -> bool:
    """Whether the scenario names the caller's voice itself (or a pitch: espeak-ng's)."""
    spec = scenario.caller
    return bool({"voice", "pitch"} & spec.model_fields_set)


def caller_voice(scenario: Scenario) -> str:
    """The voice a live call's caller speaks in by default (a line's own ``voice`` still wins)."""
    if chosen(scenario):
        return scenario.caller.voice
    return NEURAL if neural_installed() else FALLBACK


def speaks_own_voice(scenario: Scenario, *, llm: bool = False) -> bool:
    """Whether the caller's own voice speaks anything: a caller line (or branch) without
    ``audio:``, a fact's answer, an LLM caller's lines (``llm``)."""
    if llm or scenario.facts:
        return True
    return any(line.speaker == "caller" and line.spoken and line.audio is None
               for line in scenario.script)  # fmt: skip


def default_note(scenario: Scenario, *, llm: bool = False, flag: str | None = None) -> str | None:
    """What the run prints about a default caller voice (None: the scenario chose one, or
    every caller line is a recording and nothing else speaks in it); ``flag``: the option that
    named the voice (``--caller-voice``), said to change nothing when nothing speaks in it."""
    if not speaks_own_voice(scenario, llm=llm):
        if flag is None:
            return None
        return f"{flag}: changes nothing: every caller line of this scenario is a recording"
    if chosen(scenario):
        return None
    if neural_installed():
        return (
            f"caller voice: {NEURAL} (the neural default; caller.voice: en-us for espeak-ng; its "
            "weights' training data restricts commercial use)"
        )
    return (
        f"caller voice: espeak-ng {FALLBACK} (the fallback: robot speech an agent's recogniser "
        f"may mishear, worst on a phone line; for the neural default {VOICES_FIX})"
    )
