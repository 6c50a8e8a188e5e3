"""Pipeline settings: loaded from configs/settings/default.yaml (the one documented source of
defaults) and optionally overridden by a user YAML with any subset of the keys."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turnscope.configs import config_path
from turnscope.errors import InputError
from turnscope.jsonio import every_problem, read_yaml
from turnscope.spelling import field_names


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class AudioSettings(_Strict):
    chunk_ms: int = Field(gt=0, le=1000)


class VadSettings(_Strict):
    aggressiveness: int = Field(ge=0, le=3)
    frame_ms: Literal[10, 20, 30]
    start_window_ms: int = Field(gt=0)
    start_voiced_ms: int = Field(gt=0)
    hangover_ms: int = Field(ge=0)
    end_of_turn_ms: int = Field(gt=0)
    min_utterance_ms: int = Field(ge=0)
    max_utterance_ms: int = Field(gt=1000)
    preroll_ms: int = Field(ge=0)
    energy_gate_db: float = Field(ge=0)
    noise_window_ms: int = Field(ge=500)
    background_gate_db: float = Field(default=0.0, ge=0)
    span_over_background_db: float = Field(default=0.0, ge=0)  # 0: every span is speech


class RefineSettings(_Strict):
    enabled: bool
    window_ms: float = Field(gt=0)
    below_peak_db: float = Field(gt=0)
    noise_margin_db: float = Field(ge=0)
    upper_margin_db: float = Field(default=0.0, ge=0)
    headroom_db: float = Field(default=30.0, ge=0)
    weak_db: float = Field(default=0.0, ge=0)
    weak_min_ms: int = Field(default=0, ge=0)
    blip_ms: int = Field(default=0, ge=0)
    blip_gap_ms: int = Field(default=0, ge=0)
    search_ms: int = Field(ge=0)
    max_dip_ms: float = Field(ge=0)
    stretch_search_ms: int = Field(default=0, ge=0)  # 0: no per-stretch background (stretch.py)
    stretch_weak_db: float = Field(default=0.0, ge=0)  # a stretch's lead this far under: not speech
    tail_band_db: float = Field(default=0.0, ge=0)  # 0: a turn's end by its envelope alone
    tail_below_db: float = Field(default=20.0, ge=0)  # tail.py: within this of the words' level
    head_band_db: float = Field(default=0.0, ge=0)  # 0: a turn's start by its envelope alone


class ConfirmSettings(_Strict):
    silero: bool
    min_speech_ratio: float = Field(ge=0, le=1)


class GpuSettings(_Strict):
    """What a worker on a node with a GPU runs instead (Ray): its device, compute type, and
    optionally a larger model (a folder every GPU node has at that path)."""

    device: Literal["cuda"] = "cuda"
    compute_type: str = "float16"
    model: str | None = None


class AsrSettings(_Strict):
    model: str
    compute_type: str
    device: Literal["cpu", "cuda", "auto"] = "cpu"
    on_gpu: GpuSettings | None = None  # None: GPU nodes run the CPU settings too
    beam_size: int = Field(ge=1)
    cpu_threads: int = Field(ge=0)
    language: str
    word_timestamps: bool
    pad_ms: int = Field(ge=0)
    no_speech_max: float = Field(ge=0, le=1)
    no_speech_max_long: float = Field(default=0.9, ge=0, le=1)
    short_max_ms: int = Field(ge=0)
    short_prompt: str
    context_min_ms: int = Field(default=0, ge=0)
    context_max_ms: int = Field(default=0, ge=0)
    context_gap_ms: int = Field(default=0, ge=0)
    min_window_s: int = Field(ge=1, le=30)
    window_pad_s: float = Field(ge=0)
    max_pending: int = Field(ge=1)
    batch_size: int = Field(default=1, ge=1, le=64)
    temperature: tuple[float, ...] = Field(default=(0.0,), min_length=1)

    def no_speech_limit(self, duration_ms: float) -> float:
        """The no-speech probability over which a decoded segment of a window this long is
        dropped: with a short window Whisper's own check lets "you" through on silence (speech
        peaked at 0.53, non-speech at 0.93 or more); a longer one is held to a looser bound
        (clipped speech scored up to 0.62 there)."""
        return self.no_speech_max if duration_ms <= self.short_max_ms else self.no_speech_max_long


class AssemblySettings(_Strict):
    merge_gap_ms: int = Field(ge=0)
    yield_split_ms: int = Field(ge=0)
    answer_pause_ms: int = Field(default=0, ge=0)
    answer_margin_ms: int = Field(default=0, ge=0)
    backchannel_max_ms: int = Field(ge=0)
    backchannel_max_words: int = Field(ge=0)
    backchannel_words: tuple[str, ...]
    backchannel_phrases: tuple[str, ...]
    backchannel_fillers: tuple[str, ...] = ()


class Settings(_Strict):
    """Everything the pipeline's stages are configured by."""

    audio: AudioSettings
    vad: VadSettings
    refine: RefineSettings
    confirm: ConfirmSettings
    asr: AsrSettings
    assembly: AssemblySettings

    def on_gpu(self) -> Settings:
        """The settings of a worker given a GPU: ``asr.on_gpu`` applied (unchanged without)."""
        gpu = self.asr.on_gpu
        if gpu is None:
            return self
        asr = {"device": gpu.device, "compute_type": gpu.compute_type}
        if gpu.model is not None:
            asr["model"] = gpu.model
        return self.with_overrides({"asr": asr})

    def with_overrides(self, overrides: Mapping[str, Any]) -> Settings:
        """A copy with a nested mapping of overrides applied and validated."""
        return Settings.model_validate(_merge(self.model_dump(), overrides))


DEFAULT_PATH = config_path("settings", "default.yaml")


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def load_settings(path: str | Path | None = None, **overrides: Any) -> Settings:
    """The shipped defaults, merged with the YAML at ``path`` and then ``overrides``."""
    data = read_yaml(DEFAULT_PATH, what="settings file")
    source: str | Path = DEFAULT_PATH
    if path is not None:
        user = read_yaml(path, what="settings file") or {}
        if not isinstance(user, Mapping):
            raise InputError("a settings file must be a YAML mapping", path=path)
        data = _merge(data, user)
        source = path
    data = _merge(data, overrides)
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise InputError(every_problem(exc, known=field_names(Settings)), path=source) from None
