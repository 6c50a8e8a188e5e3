"""Which voices a scenario's caller speaks in, as result.json's ``script.voices`` records them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from turnscope.actors.caller import speech
from turnscope.actors.caller.voices.default import NEURAL, caller_voice, chosen

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Scenario


def caller_voices(scenario: Scenario) -> list[dict[str, Any]]:
    """Per voice the caller speaks in: its engine, name, settings (and a user file's path and
    SHA-256, a packaged voice's licence) and the script lines spoken in it. The caller's own
    voice (``default``) also speaks the facts' answers and an LLM caller's lines; a line with
    ``audio:`` is ``engine: recorded``. A Piper voice that spoke nothing in this process is
    left out. Cheap: called as the call ends, on its event loop."""
    spec = scenario.caller
    own_voice = caller_voice(scenario)  # the neural default where none is named (default.py)
    uses: dict[str, list[int]] = {own_voice: []}
    recorded: list[int] = []
    for i, line in enumerate(scenario.script):
        if line.speaker != "caller" or not line.spoken:
            continue
        if line.audio is not None:
            recorded.append(i)
            continue
        own = line.voice or own_voice
        for voice in dict.fromkeys([own, *(b.voice or own for b in line.choose or [])]):
            uses.setdefault(voice, []).append(i)
    out = []
    for voice, lines in uses.items():
        is_espeak = speech.parse_voice(voice).engine is speech.Engine.ESPEAK
        d = speech.describe(voice, spec.rate_wpm, spec.pitch if is_espeak else None)
        if d is not None:
            out.append({**d, "default": voice == own_voice, "lines": lines})
            if voice == own_voice and not chosen(scenario):
                out[-1]["chosen"] = "neural default" if voice == NEURAL else "espeak-ng fallback"
    if recorded:
        out.append({"engine": "recorded", "default": False, "lines": recorded})
        if scenario.recorded is not None and scenario.recorded.words == "asr":
            out[-1]["words"] = "asr"  # a re-driven caller's: its ASR is not graded by itself
    return out
