"""Options shared by the commands that run the pipeline (replay, call, demo, bench)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnscope.asr.settings import Settings, load_settings


@dataclass
class PipelineOptions:
    """Command-line overrides of the pipeline settings (None = keep the settings file's value)."""

    settings_file: Path | None = None
    model: str | None = None
    compute_type: str | None = None
    beam_size: int | None = None
    threads: int | None = None
    words: bool | None = None
    aggressiveness: int | None = None
    frame_ms: int | None = None
    silero: bool | None = None

    def settings(self) -> Settings:
        asr: dict[str, Any] = {}
        for key, value in (
            ("model", self.model),
            ("compute_type", self.compute_type),
            ("beam_size", self.beam_size),
            ("cpu_threads", self.threads),
            ("word_timestamps", self.words),
        ):
            if value is not None:
                asr[key] = value
        vad: dict[str, Any] = {}
        if self.aggressiveness is not None:
            vad["aggressiveness"] = self.aggressiveness
        if self.frame_ms is not None:
            vad["frame_ms"] = self.frame_ms
        overrides: dict[str, Any] = {"asr": asr, "vad": vad}
        if self.silero is not None:
            overrides["confirm"] = {"silero": self.silero}
        return load_settings(self.settings_file, **overrides)
