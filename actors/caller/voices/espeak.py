"""espeak-ng voices: espeak-ng runs as a separate process (it is GPL; never linked)."""

from __future__ import annotations

import functools
import io
import shutil
import subprocess
from typing import Any

import numpy as np
import soundfile as sf

from turnscope.errors import EnvironmentProblem, InputError

ESPEAK = "espeak-ng"
INSTALL_FIX = "install espeak-ng: apt-get install -y espeak-ng or scripts/setup.sh"


def espeak() -> str:
    exe = shutil.which(ESPEAK)
    if exe is None:
        raise EnvironmentProblem(f"espeak-ng is not on PATH ({INSTALL_FIX})")
    return exe


def _voice_table(*args: str) -> list[list[str]]:
    proc = subprocess.run([espeak(), *args], capture_output=True, text=True, check=False)
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    return [r for r in rows if len(r) >= 5]


@functools.lru_cache(maxsize=1)
def _known_voices() -> tuple[frozenset[str], frozenset[str]]:
    """Lower-cased names espeak-ng accepts for ``-v``: (voices, variants)."""
    voices: set[str] = set()
    for row in _voice_table("--voices"):
        # Pty, Language, Age/Gender, VoiceName, File, (other-language priority) ...
        voices.update({row[1], row[3], row[4], row[4].rsplit("/", 1)[-1]})
        voices.update(cell.strip("()") for cell in row[5::2])
    variants: set[str] = set()
    for row in _voice_table("--voices=variant"):
        variants.update({row[3], row[4].rsplit("/", 1)[-1]})
    return frozenset(v.lower() for v in voices), frozenset(v.lower() for v in variants)


@functools.lru_cache(maxsize=1)
def english_voices() -> tuple[str, ...]:
    """The English voice names of ``espeak-ng --voices=en`` (MBROLA voices left out)."""
    rows = _voice_table("--voices=en")
    return tuple(sorted({r[1] for r in rows if not r[4].startswith(("mb/", "!v/"))}))


def unknown_voice(voice: str, detail: str = "") -> InputError:
    return InputError(
        f"unknown espeak-ng voice {voice!r}{detail}",
        fix=f"English voices: {', '.join(english_voices())}; add +f3, +m2 ... for a variant; "
        "`espeak-ng --voices` lists all; a neural voice: piper:joe-us or piper:PATH.onnx",
    )


def check_voice(voice: str) -> None:
    """Raise InputError unless espeak-ng knows ``voice`` (``name`` or ``name+variant``).

    espeak-ng silently falls back to a default voice for some unknown names (``en-sc`` speaks
    ``en``), so names are checked against its own voice list rather than its exit code.
    """
    voices, variants = _known_voices()
    name, _, variant = voice.partition("+")
    if name.lower() not in voices or (variant and variant.lower() not in variants):
        raise unknown_voice(voice)


def speak(text: str, voice: str, rate_wpm: int | None, pitch: int | None) -> tuple[np.ndarray, int]:
    """``text`` spoken by espeak-ng: float mono audio and its sample rate (22050 Hz)."""
    check_voice(voice)
    cmd = [espeak(), "-v", voice, "--stdout"]
    if rate_wpm is not None:
        cmd += ["-s", str(int(rate_wpm))]
    if pitch is not None:
        cmd += ["-p", str(int(pitch))]
    # The text goes in on stdin: no shell, and a text starting with "-" is not read as an option.
    proc = subprocess.run(cmd, input=text.encode("utf-8"), capture_output=True, check=False)
    if proc.returncode != 0 or not proc.stdout:
        detail = proc.stderr.decode("utf-8", "replace").strip().splitlines()
        raise unknown_voice(voice, f": espeak-ng says {detail[0]!r}" if detail else "")
    # espeak-ng writes 22050 Hz 16-bit wav; its header's length field is bogus on a pipe, which
    # libsndfile tolerates.
    audio, rate = sf.read(io.BytesIO(proc.stdout), dtype="float32", always_2d=True)
    version()  # asked here, off the call's event loop, for the record written at its end
    return audio.mean(axis=1), int(rate)


@functools.lru_cache(maxsize=1)
def version() -> str | None:
    """espeak-ng's version (``1.51``), for the record."""
    proc = subprocess.run([espeak(), "--version"], capture_output=True, text=True, check=False)
    words = proc.stdout.split()
    return next((w for w in words if w[:1].isdigit()), None)


def known_version() -> str | None:
    """espeak-ng's version if already asked (never a process on the call's event loop): every
    espeak-ng line and every Piper voice's loading asks it first."""
    return version() if version.cache_info().currsize else None


def describe(voice: str, rate_wpm: int | None, pitch: int | None) -> dict[str, Any]:
    """What the bundle records of an espeak-ng voice."""
    return {
        "engine": ESPEAK,
        "name": voice,
        "settings": {"rate_wpm": rate_wpm or 175, "pitch": 50 if pitch is None else pitch},
        "engine_version": known_version(),
    }
