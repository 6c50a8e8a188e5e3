"""Piper voices, in-process: a VITS model run by onnxruntime on espeak-ng's phonemes.

Only the input format is Piper's (learnt from its public code, none of it used): the text in
clauses, each clause's IPA from ``espeak-ng -q --ipa`` (a separate process, as every espeak-ng
use here) with the clause's punctuation after it, decomposed to code points (NFD); per
sentence the ids ``^ _ p1 _ p2 _ ... pn _ $`` from the voice's ``phoneme_id_map``; the model's
inputs ``input``, ``input_lengths``, ``scales`` = (noise_scale, length_scale, noise_w) and, for a
voice of several speakers, ``sid``. Sentences are synthesised one by one and joined.

The model samples noise: onnxruntime's seed is set before each voice loads, so a process that
speaks the same lines in the same order speaks them identically; another order differs in the
noise (a few tens of ms in a line's length), never in the words.
"""

from __future__ import annotations

import json
import re
import subprocess
import threading
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from turnscope.actors.caller.voices import espeak
from turnscope.actors.caller.voices.spec import (
    PACKAGED,
    VOICES_FIX,
    Engine,
    VoiceRef,
    model_files,
    sha256,
)
from turnscope.errors import EnvironmentProblem, InputError

SEED = 7
DEFAULT_WPM = 175  # rate_wpm at which a Piper voice keeps its own pace (espeak-ng's default)
# Where a clause ends: punctuation followed by space (or the end), so "10.50" stays one word.
_CLAUSE = re.compile(r"(?<=[,.;:!?])\s+")
_SENTENCE_END = ".!?"
_LANGUAGE_FLAG = re.compile(r"\([a-z]{2,3}(?:-[a-z0-9]+)*\)")  # espeak-ng's "(en)" switches


@dataclass(frozen=True, eq=False)
class PiperVoice:
    """A loaded Piper voice."""

    ref: VoiceRef
    session: Any  # onnxruntime.InferenceSession
    inputs: frozenset[str]
    sample_rate: int
    espeak_voice: str
    ids: dict[str, list[int]]
    scales: tuple[float, float, float]  # noise_scale, length_scale, noise_w from its config
    model: Path
    sha256: str | None  # a user's file's, taken as it loads (off the call's event loop)
    lock: threading.Lock

    def phonemes(self, text: str) -> list[str]:
        """``text``'s sentences in IPA with their punctuation, as the voice was trained on."""
        sentences: list[str] = []
        current = ""
        for clause in _CLAUSE.split(text.strip()):
            words = clause.rstrip(",.;:!?")
            end = clause[len(words) :]
            mark = end[-1] if end else ""
            ipa = _ipa(words, self.espeak_voice) if words.strip() else ""
            current += ipa + (mark if mark in self.ids else "") + " "
            if mark in _SENTENCE_END and current.strip():
                sentences.append(current.strip())
                current = ""
        if current.strip():
            sentences.append(current.strip())
        return sentences

    def id_sequence(self, phonemes: str) -> list[int]:
        """The model's input ids for one sentence (phonemes it has no id for are left out)."""
        pad = self.ids["_"]
        out = [*self.ids["^"], *pad]
        for ch in unicodedata.normalize("NFD", phonemes):
            if ch in self.ids:
                out += [*self.ids[ch], *pad]
        return [*out, *self.ids["$"]]

    def length_scale(self, rate_wpm: int | None) -> float:
        base = self.scales[1]
        return base if rate_wpm is None else base * DEFAULT_WPM / rate_wpm

    def speak(self, text: str, rate_wpm: int | None = None) -> tuple[np.ndarray, int]:
        """``text`` spoken: float32 mono audio and its sample rate."""
        noise, _, noise_w = self.scales
        scales = np.array([noise, self.length_scale(rate_wpm), noise_w], dtype=np.float32)
        parts = []
        for sentence in self.phonemes(text):
            ids = np.array([self.id_sequence(sentence)], dtype=np.int64)
            feed = {"input": ids, "input_lengths": np.array([ids.shape[1]], np.int64)}
            feed["scales"] = scales
            if "sid" in self.inputs:
                feed["sid"] = np.array([0], dtype=np.int64)
            with self.lock:  # one run at a time: the noise sequence stays in the lines' order
                out = self.session.run(None, feed)[0]
            parts.append(np.asarray(out, dtype=np.float32).reshape(-1))
        if not parts:
            raise InputError(f"the Piper voice found nothing to say in {text!r}")
        return np.concatenate(parts), self.sample_rate

    def describe(self, rate_wpm: int | None) -> dict[str, Any]:
        """What the bundle records of this voice."""
        noise, _, noise_w = self.scales
        d: dict[str, Any] = {
            "engine": Engine.PIPER.value,
            "name": self.ref.name if self.ref.path is None else self.ref.path.name,
            "settings": {
                "length_scale": round(self.length_scale(rate_wpm), 4),
                "noise_scale": noise,
                "noise_w": noise_w,
                "sample_rate": self.sample_rate,
                "phonemes": f"espeak-ng {espeak.known_version()} -v {self.espeak_voice}",
                "seed": SEED,
            },
        }
        if self.ref.path is not None:
            d["path"] = str(self.ref.path)
            d["sha256"] = self.sha256
        else:
            d["licence"] = PACKAGED[self.ref.name][1]
        return d


def _ipa(text: str, voice: str) -> str:
    proc = subprocess.run(
        [espeak.espeak(), "-q", "-v", voice, "--ipa"],
        input=text.encode("utf-8"),
        capture_output=True,
        check=False,
    )
    if proc.returncode != 0:
        raise InputError(f"espeak-ng could not phonemise for the Piper voice ({voice!r})")
    lines = proc.stdout.decode("utf-8", "replace").splitlines()
    return _LANGUAGE_FLAG.sub("", " ".join(line.strip() for line in lines if line.strip()))


def _read_config(path: Path) -> dict[str, Any]:
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
        missing = {"_", "^", "$"} - set(config["phoneme_id_map"])
        if missing:
            raise KeyError(f"phoneme_id_map lacks {sorted(missing)}")
        int(config["audio"]["sample_rate"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise InputError(
            f"not a Piper voice config ({type(exc).__name__}: {exc})",
            path=path,
            fix="give the .onnx.json that came with the voice",
        ) from None
    if config.get("phoneme_type", "espeak") != "espeak":
        raise InputError(
            f"phoneme_type {config['phoneme_type']!r}: only espeak-phonemised voices are read",
            path=path,
        )
    return config


_loaded: dict[VoiceRef, PiperVoice] = {}
_loading = threading.Lock()


def loaded(ref: VoiceRef) -> PiperVoice | None:
    """The voice if this process has loaded it (a lookup, no work)."""
    return _loaded.get(ref)


def load(ref: VoiceRef) -> PiperVoice:
    """The voice ``ref`` names, loaded once per process (about a second for a medium voice)."""
    with _loading:
        if ref not in _loaded:
            _loaded[ref] = _load(ref)
        return _loaded[ref]


def _load(ref: VoiceRef) -> PiperVoice:
    try:
        import onnxruntime as ort
    except ImportError:
        raise EnvironmentProblem(f"a Piper voice needs onnxruntime: {VOICES_FIX}") from None
    model, config_path = model_files(ref)
    config = _read_config(config_path)
    espeak.version()  # its phonemes' version, asked once (cached) off the call's event loop
    inference = config.get("inference") or {}
    options = ort.SessionOptions()
    # One thread: the lines are spoken before the call, often while other calls of this
    # process are live on the same cores.
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    ort.set_seed(SEED)
    try:
        session = ort.InferenceSession(
            str(model), sess_options=options, providers=["CPUExecutionProvider"]
        )
    except Exception as exc:  # onnxruntime raises its own exception types for a bad file
        raise InputError(f"onnxruntime cannot load the Piper voice: {exc}", path=model) from None
    ids = {k: [int(i) for i in v] for k, v in config["phoneme_id_map"].items()}
    return PiperVoice(
        ref=ref,
        session=session,
        inputs=frozenset(i.name for i in session.get_inputs()),
        sample_rate=int(config["audio"]["sample_rate"]),
        espeak_voice=str((config.get("espeak") or {}).get("voice", "en-us")),
        ids=ids,
        scales=(
            float(inference.get("noise_scale", 0.667)),
            float(inference.get("length_scale", 1.0)),
            float(inference.get("noise_w", 0.8)),
        ),
        model=model,
        sha256=sha256(model) if ref.path is not None else None,
        lock=threading.Lock(),
    )
