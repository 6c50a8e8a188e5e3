"""Fixtures: what a suite task runs, beside the voice-suite fields (seed 002's pattern).

A task's optional ``fixture`` block:
    source: recorded | synthetic
    audio: a recording to replay (wav/flac/...) OR a scenario YAML to call live
    synth: a synthetic recording as its recipe {scenario, snr_db, telephone, caller_voice,
           agent_voice, seed}: rendered with `turnscope synth` into a local cache, then replayed
    transcript: a transcript JSON to score directly (no audio: the fast, unit-test kind)
    references: a reference JSON for WER (default: the task's reference_dialogue)
    wer: false  no WER reference exists (a captured call whose only texts are the ASR's own):
            WER is not measured, never scored against the ASR's own transcript
    tags: [acoustic, speaker, language, complexity, conversational, adversarial] (one or more)
    expect: {intent, fields, missing, clarify_expected}  the structured outcome, when the agent
            reports one (in outcome.json next to the audio, or over the data channel); a live
            call whose agent reports none is scored on the reacting caller's side of it
            (scoring/conversation.py: the facts asked for, the goal reached)
Paths are relative to the suite file. Budgets and required_content stay where the voice suite
contract has them (the task), so the timing contract is the same for every kind of fixture.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turnscope.errors import InputError
from turnscope.jsonio import one_line

Tag = Literal["acoustic", "speaker", "language", "complexity", "conversational", "adversarial"]
TAGS: tuple[str, ...] = Tag.__args__  # type: ignore[attr-defined]
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".opus", ".mp3", ".m4a")


class Expect(BaseModel):
    """The outcome the agent should resolve: the ticket, never the wording."""

    model_config = ConfigDict(extra="forbid")
    intent: str
    fields: dict[str, Any] = Field(default_factory=dict)
    missing: list[str] = Field(default_factory=list)
    clarify_expected: bool = False


class SynthRecipe(BaseModel):
    """How a synthetic fixture's recording is made (deterministic for one espeak-ng version)."""

    model_config = ConfigDict(extra="forbid")
    scenario: str
    snr_db: float | None = None
    telephone: bool = False
    caller_voice: str | None = None
    agent_voice: str | None = None
    seed: int = 0


class Fixture(BaseModel):
    model_config = ConfigDict(extra="forbid")
    source: Literal["recorded", "synthetic"]
    audio: str | None = None
    synth: SynthRecipe | None = None
    transcript: str | None = None
    references: str | None = None
    wer: bool = True  # false: no reference texts exist, WER is not measured
    tags: list[Tag] = Field(min_length=1)
    expect: Expect | None = None

    def kind(self) -> Literal["replay", "live", "transcript"]:
        if self.transcript is not None:
            return "transcript"
        if self.synth is not None:
            return "replay"
        assert self.audio is not None
        return "live" if self.audio.endswith((".yaml", ".yml")) else "replay"


def parse_fixture(task: Mapping[str, Any], suite_path: Path | None) -> Fixture | None:
    """The task's fixture, validated, with paths checked against the suite's folder."""
    raw = task.get("fixture")
    if raw is None:
        return None
    where = f"task {task.get('id')!r} fixture"
    try:
        fx = Fixture.model_validate(raw)
    except ValidationError as exc:
        raise InputError(one_line(exc, prefix=where), path=suite_path) from None
    if sum(x is not None for x in (fx.audio, fx.transcript, fx.synth)) != 1:
        raise InputError(
            f"{where}: give exactly one of audio, synth or transcript", path=suite_path
        )
    if fx.synth is not None and fx.source != "synthetic":
        raise InputError(
            f"{where}: a synth recipe makes a synthetic fixture (source: synthetic)",
            path=suite_path,
        )
    if fx.audio is not None and not fx.audio.endswith((*AUDIO_SUFFIXES, ".yaml", ".yml")):
        raise InputError(
            f"{where}: audio {fx.audio!r} is neither a recording nor a scenario", path=suite_path
        )
    base = suite_path.parent if suite_path else Path.cwd()
    if fx.synth is not None and not (base / fx.synth.scenario).exists():
        raise InputError(
            f"{where}: synth scenario {fx.synth.scenario!r} does not exist", path=suite_path
        )
    for name in ("audio", "transcript", "references"):
        value = getattr(fx, name)
        if value is not None and not (base / value).exists():
            raise InputError(f"{where}: {name} file {value!r} does not exist", path=suite_path)
    return fx


def resolve(suite_path: Path | None, relative: str) -> Path:
    return (suite_path.parent if suite_path else Path.cwd()) / relative
