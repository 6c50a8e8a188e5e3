"""Seed 002's tags a fixture's caller implies: ``acoustic`` (noise, room, codec, loss, level),
``speaker`` (an accent or voice variant, pace, pitch, dysfluency) and ``language`` (an espeak-ng
voice of another language speaking English: non-native speech). Added to the tags a suite
gives, never removing one, so the per-tag scorecard separates such callers.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnscope.actors.caller.voices.spec import Engine, VoiceProblem, parse_voice
from turnscope.errors import TurnscopeError

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Scenario

PLAIN_VOICES = frozenset({"en-us", "en", "piper:joe-us"})  # a baseline voice: no tag
PLAIN_WPM = (150, 200)  # around espeak-ng's (and a Piper voice's own) 175
IMPLIED = ("acoustic", "speaker", "language")


def voice_tags(voice: str) -> set[str]:
    """What a caller voice implies: ``speaker`` for an accent or a variant, and ``language``
    too when it is another language's voice."""
    if voice in PLAIN_VOICES:
        return set()
    try:
        ref = parse_voice(voice)
    except VoiceProblem:
        return set()
    if ref.engine is Engine.PIPER:
        code = _piper_language(ref.path) if ref.path is not None else "en_US"
        if code is None or code == "en_US":
            return set()
        return {"speaker"} if code.startswith("en") else {"speaker", "language"}
    name = ref.name.lower()
    return {"speaker"} if name.startswith("en") else {"speaker", "language"}


def _piper_language(path: Path) -> str | None:
    try:
        config = json.loads(path.with_name(path.name + ".json").read_text(encoding="utf-8"))
        return str(config["language"]["code"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def scenario_tags(scenario: Scenario) -> set[str]:
    """The tags a scenario's caller implies (its voices, pace, dysfluency, acoustics)."""
    from turnscope.actors.caller.voices.default import caller_voice

    spec = scenario.caller
    tags: set[str] = set()
    voices = {caller_voice(scenario)}
    for line in scenario.script:
        if line.speaker != "caller":
            continue
        voices |= {v for v in [line.voice, *(b.voice for b in line.choose or [])] if v}
        if _acoustic(getattr(line, "acoustics", None)):
            tags.add("acoustic")
        if _dysfluent(getattr(line, "dysfluency", None)):
            tags.add("speaker")
    for voice in voices:
        tags |= voice_tags(voice)
    if spec.pitch is not None or (
        spec.rate_wpm is not None and not PLAIN_WPM[0] <= spec.rate_wpm <= PLAIN_WPM[1]
    ):
        tags.add("speaker")
    if _dysfluent(getattr(spec, "dysfluency", None)):
        tags.add("speaker")
    if _acoustic(getattr(spec, "acoustics", None)):
        tags.add("acoustic")
    return tags


def _acoustic(a: Any) -> bool:
    if a is None:
        return False
    keys = ("noise", "reverb", "telephone", "clip_at")
    changed = any(getattr(a, k, None) is not None for k in keys) or bool(getattr(a, "level_db", 0))
    return changed or bool(getattr(a, "loss", 0)) or bool(getattr(a, "jitter_ms", 0))


def _dysfluent(d: Any) -> bool:
    return d is not None and bool(d.fillers or d.restarts or d.self_correction)


def fixture_tags(fx: Any, suite_path: Path | None) -> list[str]:
    """A suite fixture's tags with those its caller implies added (a synth recipe's SNR,
    telephone and caller voice; a synthetic or live fixture's scenario). A scenario that
    cannot be read adds nothing here: running the fixture says what is wrong with it."""
    from turnscope.actors.caller.scenario_file import load_scenario, voice_named

    base = suite_path.parent if suite_path is not None else Path.cwd()
    tags: set[str] = set()
    scenario_path: str | None = None
    recipe = getattr(fx, "synth", None)
    if recipe is not None:
        scenario_path = recipe.scenario
        if recipe.snr_db is not None or recipe.telephone:
            tags.add("acoustic")
        if recipe.caller_voice:
            tags |= voice_tags(recipe.caller_voice)
    elif isinstance(fx.audio, str) and fx.audio.endswith((".yaml", ".yml")):
        scenario_path = fx.audio
    voice = getattr(fx, "caller_voice", None)  # a live fixture's, over the scenario's voices
    if scenario_path is not None:
        with contextlib.suppress(TurnscopeError):  # running it will say what is wrong
            voice = voice_named(voice, base, "fixture.caller_voice")
            tags |= scenario_tags(load_scenario(base / scenario_path, caller_voice=voice))
    given = list(fx.tags)
    return given + [t for t in IMPLIED if t in tags and t not in given]


def with_implied_tags(fx: Any, suite_path: Path | None) -> Any:
    """``fx`` (a suite `Fixture`) with its implied tags added."""
    tags = fixture_tags(fx, suite_path)
    return fx if tags == list(fx.tags) else fx.model_copy(update={"tags": tags})
