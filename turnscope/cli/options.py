"""Options shared by the commands that run the pipeline (replay, call, demo, bench)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from turnscope.errors import InputError

if TYPE_CHECKING:
    from turnscope.asr.settings import Settings


def check_transport(transport: str) -> str:
    """``--transport``: a registered transport that calls a URL (webrtc, a phone line's
    dialect, or one a plug-in registered)."""
    from turnscope.use_cases.checks import networked_transport

    return networked_transport(transport)


def ray_option(what: str) -> Any:
    """``--ray [ADDRESS]``: ``what`` runs on a Ray cluster, or on a local Ray when alone."""
    return typer.Option(
        None,
        "--ray",
        help=f"{what} on Ray: a cluster's address (ray://HOST:10001, HOST:6379, auto), or --ray "
        "alone for a local Ray.",
    )


def caller_voice_option() -> Any:
    """``--caller-voice``: the voice of every caller line, over the scenario's (call, synth)."""
    return typer.Option(
        None,
        "--caller-voice",
        help="Voice for every caller line, over the scenario's: espeak-ng (en-gb-scotland) or "
        "Piper (piper:joe-us, whose weights derive from the lessac voice: its data licence "
        "restricts commercial use; or piper:PATH.onnx).",
    )


# The settings key each pipeline flag overrides, so a bad value is reported against the flag
# (not against configs/settings/default.yaml, which the user never touched).
FLAGS = {
    ("asr", "model"): "--model",
    ("asr", "compute_type"): "--compute-type",
    ("asr", "beam_size"): "--beam-size",
    ("asr", "cpu_threads"): "--threads",
    ("asr", "word_timestamps"): "--words",
    ("vad", "aggressiveness"): "--vad-aggressiveness",
    ("vad", "frame_ms"): "--frame-ms",
    ("confirm", "silero"): "--silero",
}


# The flag that gives each transport option (``turnscope.transports.options``), so that an
# option a transport does not take is reported as the flag that was typed.
TRANSPORT_FLAGS = {
    "signaling": "--signaling",
    "headers": "--header",
    "ice_servers": "--ice-server",
    "loopback_only": "--loopback-only",
    "connect_timeout_s": "--connect-timeout",
    "media_timeout_s": "--media-timeout",
    "params": "--param",
    "codec": "--codec",
    "caller_side": "--caller-side",
    "calibrate": "--no-calibrate",
}


def number(
    low: float | None = None, high: float | None = None, *, above: bool = False
) -> Callable[..., Any]:
    """A typer callback: the option must be a finite number, at least ``low`` (more than
    ``low`` with ``above``) and at most ``high``; the error names the flag."""

    def check(param: typer.CallbackParam, value: float | int | None) -> float | int | None:
        if value is None:
            return value
        if not math.isfinite(value):
            raise typer.BadParameter("must be a finite number", param=param)
        if low is not None and (value <= low if above else value < low):
            raise typer.BadParameter(
                f"must be {'more than' if above else 'at least'} {low:g}", param=param
            )
        if high is not None and value > high:
            raise typer.BadParameter(f"must be at most {high:g}", param=param)
        return value

    return check


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
        from pydantic import ValidationError

        from turnscope.asr.settings import load_settings

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
        base = load_settings(self.settings_file)  # its errors name the settings file
        try:
            return base.with_overrides(overrides)
        except ValidationError as exc:
            first = exc.errors()[0]
            flag = FLAGS.get(tuple(str(x) for x in first["loc"][:2]), "an option")
            raise InputError(f"{flag}: {first['msg']}") from None
