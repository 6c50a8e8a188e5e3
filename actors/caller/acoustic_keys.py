"""The caller's acoustics and dysfluencies as scenario keys: ``caller.acoustics`` /
``caller.dysfluency`` (the whole call) and a line's own ``acoustics`` / ``dysfluency``.

What the keys mean is in `acoustics.py` (how the audio is made) and `dysfluency.py` (how the
text is changed); this module only checks them, each problem one line naming the key and the
fix.
"""

from __future__ import annotations

import math
from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from turnscope.capture.file.health import MIN_RATE, rate_problem

SNR_RANGE_DB = (-10.0, 60.0)
AUDIO_SUFFIXES = {".wav", ".flac", ".ogg", ".mp3", ".aiff", ".aif", ".opus", ".m4a"}
NOISE_FILE_MIN_RATE = MIN_RATE  # the rule every recording read for speech or noise follows


class NoiseKind(str, Enum):
    """A generated background (`noise.py`)."""

    STREET = "street"
    OFFICE = "office"
    CAR = "car"
    BABBLE = "babble"


class Room(str, Enum):
    """A generated room impulse response (`room.py`): its RT60."""

    SMALL = "small"
    OFFICE = "office"
    HALL = "hall"


class Telephone(str, Enum):
    """The caller's line: a band and a codec (`room.py`)."""

    BAND = "band"  # 8 kHz, G.712 300-3400 Hz, no codec
    G711 = "g711"  # ... and G.711 mu-law
    G711A = "g711a"  # ... and G.711 A-law
    AMR_NB = "amr-nb"  # AMR-NB 12.2 kbit/s (FFmpeg's libopencore_amrnb; the band without it)
    OPUS = "opus"  # Opus at 10 kbit/s, 16 kHz


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


# Each number's range, and what a sensible value looks like (the fix in its message).
RANGES: dict[str, tuple[float, float, str]] = {
    "snr_db": (*SNR_RANGE_DB, "15 (a busy café) or 5 (a loud street)"),
    "level_db": (-40.0, 30.0, "-12 (a quiet caller) or 10 (a loud one)"),
    "clip_at": (0.02, 1.0, "0.3 (a hot microphone)"),
    "loss": (0.0, 0.5, "0.05 (5% of packets)"),
    "jitter_ms": (0.0, 500.0, "30"),
    "jitter_buffer_ms": (20.0, 1000.0, "60"),
    "fillers": (0.0, 0.5, "0.1"),
    "restarts": (0.0, 1.0, "0.3"),
    "self_correction": (0.0, 1.0, "0.3"),
    "rate_wpm": (80.0, 450.0, "140 (a slow caller) or 220 (a quick one)"),  # espeak-ng's -s
    "pitch": (0.0, 99.0, "35 (lower) or 65 (higher)"),  # espeak-ng's -p
}


def in_range(value: float | None, info: ValidationInfo) -> float | None:
    """A number within its key's range, else one line naming the key, the range and a value."""
    if value is None:
        return None
    lo, hi, example = RANGES[str(info.field_name)]
    if not (math.isfinite(value) and lo <= value <= hi):
        raise PydanticCustomError(
            "acoustics_range",
            "{key} is {value}: give {lo} to {hi}, e.g. {example}",
            {
                "key": info.field_name,
                "value": f"{value:g}",
                "lo": f"{lo:g}",
                "hi": f"{hi:g}",
                "example": example,
            },
        )
    return value


def number_in_range(value: Any, info: ValidationInfo) -> Any:
    """``in_range`` for a number given as one (before its type's own check: a word, or a
    fraction where a whole number belongs, keeps that check's message)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return in_range(value, info)
    return value


# What a value that names no file is taken for: a generated kind's name, misspelt.
UNKNOWN = {"noise": "noise bed", "impulse response": "room"}


def _looks_like_a_file(value: str) -> bool:
    """A path separator or an audio file's suffix: meant as a file, not as a kind's name."""
    return "/" in value or "\\" in value or Path(value).suffix.lower() in AUDIO_SUFFIXES


def _resolved(value: str, info: ValidationInfo, kinds: type[Enum], what: str) -> str:
    """A kind's name as given, or an audio file resolved against the scenario's folder."""
    if value in {k.value for k in kinds}:
        return value
    base = (info.context or {}).get("base_dir")
    path = Path(value).expanduser()
    path = path if path.is_absolute() or base is None else Path(base) / path
    names = ", ".join(k.value for k in kinds)
    if not path.is_file() and not _looks_like_a_file(value):
        raise PydanticCustomError(
            "acoustics_name",
            "unknown {kind} {value}: give one of {names} or a path to a WAV/FLAC file",
            {"kind": UNKNOWN[what], "value": repr(value), "names": names},
        )
    if not path.is_file():
        raise PydanticCustomError(
            "acoustics_file",
            "no such {what} file {path}: give one of {names} or an audio file (relative to the "
            "scenario file)",
            {"what": what, "path": str(path), "names": names},
        )
    problem = audio_problem(path, what)
    if problem:
        raise PydanticCustomError(
            "acoustics_audio", "{path}: {problem}", {"path": str(path), "problem": problem}
        )
    return str(path.absolute())


def file_stamp(value: str | None) -> tuple[int, int] | None:
    """A named audio file's size and change time (None for a kind's name): a per-process cache
    of audio made from the file is keyed by it too, so a file edited in place is read again."""
    if value is None or not Path(value).is_absolute():  # files are resolved to absolute paths
        return None
    try:
        st = Path(value).stat()
    except OSError:
        return None
    return st.st_size, st.st_mtime_ns


# What a silent file of each kind should hold instead.
_HEARD = {
    "noise": "noise",
    "impulse response": "a room's response to a click or a sweep",
    "recording": "the line spoken",
}


def audio_problem(path: Path, what: str) -> str | None:
    """What is wrong with a noise, impulse-response or line recording file, read from its
    header (and its samples, for silence)."""
    import soundfile as sf

    try:
        info = sf.info(str(path))
    except (sf.LibsndfileError, RuntimeError, OSError) as exc:
        reason = getattr(exc, "error_string", None) or str(exc)  # no repr of its name
        return f"cannot read the {what} file ({reason.rstrip('.')}): give a WAV or FLAC"
    if (slow := rate_problem(info.samplerate, what)) is not None:
        return slow
    if what == "noise":
        if info.channels > 2:
            return f"the noise has {info.channels} channels: give mono or stereo (mixed to mono)"
        if info.frames < 1.25 * info.samplerate:
            return "the noise is shorter than 1.25 s: give a longer recording (it loops)"
    elif what == "impulse response" and info.channels != 1:
        return (
            f"the impulse response has {info.channels} channels: give a mono one (one microphone's)"
        )
    if _silent(path):
        return f"the {what} file is silent: give a recording of {_HEARD[what]}"
    if what == "impulse response" and (held := _held_db(path)) is not None:
        return (
            f"the impulse response does not die away (its last quarter only {held:.0f} dB under "
            "its start): give a room's measured response (a room dies away 20 dB and more "
            "within 2 s), not a recording of sound in it"
        )
    return None


def _held_db(path: Path, decay_db: float = 20.0) -> float | None:
    """How far (dB) the last quarter of a response's first 2 s from its peak (what room.py
    uses) stands under its first 50 ms, where that is less than ``decay_db``: a recording of
    speech or noise given as a room, not a response that dies away. None when it decays."""
    import numpy as np
    import soundfile as sf

    try:
        x, rate = sf.read(str(path), frames=30 * 48000, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError, OSError):
        return None  # unreadable past its header: reading it for the call says so
    y = x[:, 0].astype(np.float64)
    y = y[int(np.argmax(np.abs(y))) :][: 2 * rate]
    head, tail = y[: rate // 20], y[len(y) * 3 // 4 :]
    if len(y) < rate // 5 or not np.any(head):
        return None  # too short to judge: a response that short has died away
    held = 10 * np.log10(np.mean(head**2) / max(float(np.mean(tail**2)), 1e-20))
    return float(held) if held < decay_db else None


def line_recording(value: Path | None, info: ValidationInfo) -> Path | None:
    """A line's ``audio:`` resolved against the scenario's folder: a readable recording at
    8 kHz or more that is not silent (checked as the scenario loads, before any output)."""
    if value is None:
        return None
    base = (info.context or {}).get("base_dir")
    path = value if value.is_absolute() or base is None else Path(base) / value
    if not path.is_file():
        raise PydanticCustomError(
            "audio_missing",
            "no such audio file {path} (paths are relative to the scenario file)",
            {"path": str(path)},
        )
    problem = audio_problem(path, "recording")
    if problem:
        raise PydanticCustomError(
            "audio_unusable", "{path}: {problem}", {"path": str(path), "problem": problem}
        )
    return path


def _silent(path: Path) -> bool:
    """Whether an audio file holds nothing over -80 dBFS (read a block at a time, stopping at
    the first sound: a noise recording may be minutes long)."""
    import numpy as np
    import soundfile as sf

    try:
        for block in sf.blocks(str(path), blocksize=1 << 16, dtype="float32", always_2d=True):
            if np.any(np.abs(block) > 1e-4):
                return False
    except (sf.LibsndfileError, RuntimeError, OSError):
        return False  # unreadable past its header: reading it for the call says so
    return True


class LineAcoustics(_Strict):
    """What one line's audio goes through (see `acoustics.py`); a line's keys override the
    call's. ``noise`` / ``snr_db`` here: a noise heard during this line only, over the call's
    bed."""

    noise: str | None = None  # heard during this line only, over the call's bed
    snr_db: float | None = None  # under this line's speech at the microphone, before band and codec
    reverb: str | None = None  # the room this line is said in (the call's otherwise)
    telephone: Telephone | None = None
    level_db: float | None = None
    clip_at: float | None = None

    _numbers = field_validator("snr_db", "level_db", "clip_at")(in_range)

    @field_validator("noise")
    @classmethod
    def _noise(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _resolved(value, info, NoiseKind, "noise")

    @field_validator("reverb")
    @classmethod
    def _reverb(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _resolved(value, info, Room, "impulse response")

    @model_validator(mode="before")
    @classmethod
    def _call_keys(cls, data: Any) -> Any:
        if cls is LineAcoustics and isinstance(data, dict):
            for key in ("loss", "jitter_ms", "jitter_buffer_ms", "seed"):
                if key in data:
                    raise PydanticCustomError(
                        "line_acoustics",
                        "{key} is the whole call's line: give it in caller.acoustics",
                        {"key": key},
                    )
        return data

    @model_validator(mode="after")
    def _snr_with_noise(self) -> LineAcoustics:
        if self.snr_db is not None and self.noise is None:
            raise PydanticCustomError(
                "snr_noise", "snr_db needs a noise: street, office, car, babble or a file"
            )
        return self


class Acoustics(LineAcoustics):
    """``caller.acoustics``: the caller's line for the whole call (see `acoustics.py`).

    - ``noise``: a background bed (street, office, car, babble: generated) or an audio file;
      continuous, between the lines too; ``snr_db``: its level under the caller's speech
      (default 15), at the caller's microphone: before the line's band and codec, which take
      more of most noises (their low end) than of speech, so on the line it is higher
      (result.json's ``script.acoustics.snr_db_sent``).
    - ``reverb``: a room (small, office, hall) or an impulse response file (mono).
    - ``telephone``: band, g711, g711a, amr-nb, opus.
    - ``loss``: the chance a 20 ms packet is lost (silence); ``jitter_ms``: the spread of packet
      delays, a packet later than ``jitter_buffer_ms`` (60) lost too.
    - ``level_db``: the caller's speech louder or quieter; ``clip_at``: hard clipping at that
      fraction of full scale (a hot microphone).
    - ``seed``: every random choice (noise, room, losses) follows from it.
    """

    loss: float = 0.0
    jitter_ms: float = 0.0
    jitter_buffer_ms: float = 60.0
    seed: int = 0

    _call_numbers = field_validator("loss", "jitter_ms", "jitter_buffer_ms")(in_range)

    @property
    def noisy(self) -> bool:
        """Whether the call carries a background bed."""
        return self.noise is not None


class Dysfluency(_Strict):
    """``caller.dysfluency`` (or a line's): how the caller's words stumble (`dysfluency.py`).

    - ``fillers``: the chance of a filler ("um", "uh", "you know") before each word.
    - ``restarts``: the chance a line starts over after a word or two.
    - ``self_correction``: the chance a line says a wrong number, day or month first and
      corrects it ("four, sorry, I mean five").
    - ``seed``: which words (with the line's text).
    """

    fillers: float = 0.0
    restarts: float = 0.0
    self_correction: float = 0.0
    seed: int = 0

    _numbers = field_validator("fillers", "restarts", "self_correction")(in_range)
