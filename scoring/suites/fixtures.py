"""Fixtures: what a suite task runs, beside the voice-suite fields (seed 002's pattern).

A task's optional ``fixture`` block:
    source: recorded | synthetic
    audio: a recording to replay (wav/flac/...) OR a scenario YAML to call live
    synth: a synthetic recording as its recipe {scenario, snr_db, telephone, caller_voice,
           agent_voice, seed}: rendered with `turnscope synth` into a local cache, then replayed
    transcript: a transcript JSON to score directly (no audio: the fast, unit-test kind)
    redrive: a recorded call (two channels, or a turnscope bundle folder) whose real caller is
            re-driven live against the agent (`turnscope scenario from-recording`, made once
            into the fixture cache); its report sets the new call beside the recorded one
    caller_channel: left | right  which channel of a recording (audio, redrive) is the caller
            (default left)
    caller_voice: the voice a live scenario's caller speaks in (``en-gb-scotland``,
            ``piper:joe-us``, ``piper:PATH.onnx`` relative to the suite), replacing every voice
            the scenario gives its caller: one scenario, called in each voice a tag needs
    caller_from: a recorded call's bundle (or its result.json) whose LLM-driven caller a live
            scenario replays (`turnscope call --caller-from`): a suite pins its LLM caller, and
            the LLM is asked only where the agent diverges (with none named, that caller fails)
    references: a reference JSON for WER (default: the task's reference_dialogue)
    wer: false  no WER reference exists (a captured call whose only texts are the ASR's own):
            WER is not measured, never scored against the ASR's own transcript
    tags: [acoustic, speaker, language, complexity, conversational, adversarial] (one or more)
    floors: {DIMENSION: NUMBER}  the gate's floors (a ceiling for WER) for this task, over the
            defaults and --floor: a phone-band fixture's WER ceiling above the clean ones'
    expect: {intent, fields, missing, clarify_expected}  the structured outcome, when the agent
            reports one (in outcome.json next to the audio, or over the data channel); a live
            call whose agent reports none is scored on the reacting caller's side of it
            (scoring/conversation.py: the facts asked for, the goal reached)
Paths are relative to the suite file; a scenario (``audio``, ``synth.scenario``) named bare,
with no such file beside the suite, is the shipped scenario of that name (``refund-call.yaml``),
as ``--scenario`` takes it. Budgets and required_content stay where the voice suite
contract has them (the task), so the timing contract is the same for every kind of fixture.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from pydantic_core import PydanticCustomError

from turnscope.configs import shipped
from turnscope.errors import InputError
from turnscope.jsonio import every_problem, joined_problems
from turnscope.scoring.suites.defaults import TAGS
from turnscope.spelling import field_names

if TYPE_CHECKING:
    from turnscope.scoring.suites.suite import Suite, SuiteTask

Tag = Literal["acoustic", "speaker", "language", "complexity", "conversational", "adversarial"]
assert Tag.__args__ == TAGS  # type: ignore[attr-defined]  # one list: the type spells it
# The dimensions the gate holds to a floor (gate.DEFAULT_FLOORS checks it names the same).
GatedDim = Literal[
    "latency", "turn_taking", "barge_in", "content", "wer",
    "accuracy", "clarification", "containment", "graceful_failure",
]  # fmt: skip
AUDIO_SUFFIXES = (".wav", ".flac", ".ogg", ".opus", ".mp3", ".m4a")
SCENARIO_SUFFIXES = (".yaml", ".yml")


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


# A live scenario's keys, and what each says on any other fixture.
_LIVE_ONLY = {
    "caller_voice": "caller_voice is the voice of a live scenario's caller: give it with audio: "
    "SCENARIO.yaml (a synth recipe has its own synth.caller_voice), or leave it out",
    "caller_from": "caller_from replays a recorded LLM caller in a live scenario: give it with "
    "audio: SCENARIO.yaml (its caller.driver: llm), or leave it out",
}


class Fixture(BaseModel):
    """What a task runs: a recording, a synthetic recipe, a live-call scenario or a transcript."""

    model_config = ConfigDict(extra="forbid")
    source: Literal["recorded", "synthetic"]
    audio: str | None = None
    synth: SynthRecipe | None = None
    transcript: str | None = None
    redrive: str | None = None  # a recorded call whose caller is re-driven live
    caller_channel: Literal["left", "right"] = "left"  # of a recording (audio or redrive)
    caller_voice: str | None = None  # a live scenario's caller voice, over the scenario's
    caller_from: str | None = None  # a recorded call whose LLM caller a live scenario replays
    references: str | None = None
    wer: bool = True  # false: no reference texts exist, WER is not measured
    tags: list[Tag] = Field(min_length=1)
    # The gate's floors for this task (wer: a ceiling), over its defaults and --floor.
    floors: dict[GatedDim, Annotated[float, Field(ge=0, allow_inf_nan=False)]] | None = None
    expect: Expect | None = None

    @model_validator(mode="after")
    def _one_thing_to_run(self) -> Fixture:
        if sum(x is not None for x in (self.audio, self.transcript, self.synth, self.redrive)) != 1:
            raise PydanticCustomError(
                "fixture_kind", "give exactly one of audio, synth, transcript or redrive"
            )
        if self.synth is not None and self.source != "synthetic":
            raise PydanticCustomError(
                "fixture_source", "a synth recipe makes a synthetic fixture (source: synthetic)"
            )
        if self.audio is not None and not self.audio.endswith(
            (*AUDIO_SUFFIXES, *SCENARIO_SUFFIXES)
        ):
            raise PydanticCustomError(
                "fixture_audio",
                "audio {audio!r} is neither a recording nor a scenario",
                {"audio": self.audio},
            )
        live = self.audio is not None and self.audio.endswith(SCENARIO_SUFFIXES)
        for key, why in _LIVE_ONLY.items():  # keys of a live scenario's caller
            if getattr(self, key) is not None and not live:
                raise PydanticCustomError(f"fixture_{key}", why)
        if self.caller_channel != "left" and not self._recording():
            raise PydanticCustomError(
                "fixture_caller_channel",
                "caller_channel picks a recording's channel: give it with audio (a recording) "
                "or redrive, or leave it out",
            )
        return self

    def _recording(self) -> bool:
        """Whether it names a two-channel recording (a replay's audio or a redrive)."""
        return self.redrive is not None or (
            self.audio is not None and self.audio.endswith(AUDIO_SUFFIXES)
        )

    def kind(self) -> Literal["replay", "live", "transcript"]:
        if self.transcript is not None:
            return "transcript"
        if self.synth is not None:
            return "replay"
        if self.redrive is not None:
            return "live"
        assert self.audio is not None
        return "live" if self.audio.endswith(SCENARIO_SUFFIXES) else "replay"

    def missing_files(self, base: Path) -> list[str]:
        """Each file it names that does not exist under ``base`` (the suite's folder)."""
        named = [("synth scenario", self.synth.scenario if self.synth else None)]
        named += [(f"{n} file", getattr(self, n)) for n in ("audio", "transcript", "references")]
        named += [("redrive recording", self.redrive), ("caller_from bundle", self.caller_from)]
        return [f"{what} {value!r} does not exist" for what, value in named
                if value is not None and not located(base, value).exists()]  # fmt: skip


def parse_fixture(task: SuiteTask | Mapping[str, Any], suite_path: Path | None) -> Fixture | None:
    """The task's fixture, validated, with paths checked against the suite's folder (every
    problem in one line)."""
    raw = getattr(task, "fixture", None) if not isinstance(task, Mapping) else task.get("fixture")
    if raw is None:
        return None
    tid = task.get("id") if isinstance(task, Mapping) else task.id
    where = f"task {tid!r} fixture"
    try:
        fx = raw if isinstance(raw, Fixture) else Fixture.model_validate(raw)
    except ValidationError as exc:
        problems = every_problem(exc, prefix=where, known=field_names(Fixture))
        raise InputError(problems, path=suite_path) from None
    base = suite_path.parent if suite_path else Path.cwd()
    missing = fx.missing_files(base)
    if missing:
        raise InputError(f"{where}: " + "; ".join(missing), path=suite_path, fix=_relative_to(base))
    return fx


def check_fixtures(suite: Suite, suite_path: Path | None) -> None:
    """Every task's fixture files checked before anything runs: one InputError listing every
    file that is missing, in every task (the shapes were checked when the suite was loaded)."""
    base = suite_path.parent if suite_path else Path.cwd()
    problems = [
        f"task {t.id!r} fixture: {p}"
        for t in suite.tasks
        if t.fixture is not None
        for p in t.fixture.missing_files(base)
    ]
    if problems:
        raise InputError(joined_problems(problems), path=suite_path, fix=_relative_to(base))


def _relative_to(base: Path) -> str:
    """The fix for a fixture file that is not there."""
    return (
        f"a fixture's paths are relative to the suite's folder ({base}); a scenario may also be "
        "a shipped one's name, e.g. refund-call.yaml"
    )


def located(base: Path, relative: str) -> Path:
    """``relative`` under ``base`` (the suite's folder); a bare scenario name with no such file
    there (``refund-call.yaml``) is the shipped scenario of that name."""
    path = base / relative
    if path.exists() or not relative.endswith(SCENARIO_SUFFIXES):
        return path
    return shipped("scenarios", Path(relative).with_suffix(".yaml")) or path


def resolve(suite_path: Path | None, relative: str) -> Path:
    """A fixture's file, named relative to the suite (``located``)."""
    return located(suite_path.parent if suite_path else Path.cwd(), relative)


def recorded_twin(suite: Suite, suite_path: Path, caller: Any, agent: Any, rate: int) -> str | None:
    """The id of the suite's task whose recording holds exactly these two channels (float32
    arrays at ``rate``, as `fixture add` reads a bundle): the same call added twice. Only
    recordings of the same length and rate are decoded."""
    import numpy as np
    import soundfile as sf

    from turnscope.jsonio import native_path

    audio = np.zeros((max(len(caller), len(agent)), 2), dtype=np.float32)
    audio[: len(caller), 0], audio[: len(agent), 1] = caller, agent

    for task in suite.tasks:
        fx = task.fixture
        if fx is None or fx.audio is None or fx.kind() != "replay":
            continue
        path = resolve(suite_path, fx.audio)
        try:
            info = sf.info(native_path(path))
            if (info.frames, info.samplerate, info.channels) != (len(audio), rate, 2):
                continue
            theirs, _ = sf.read(native_path(path), dtype="float32", always_2d=True)
        except (sf.LibsndfileError, RuntimeError, OSError):
            continue  # unreadable: parse_fixture says so when it runs
        if np.array_equal(theirs, audio):
            return task.id
    return None
