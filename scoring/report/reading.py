"""Reading a bundle's files for the report: which file is which (the manifest's word), each
document through its model, tolerantly (a missing, unreadable or malformed piece is a note,
never a failure), and the waveform envelopes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import soundfile as sf

from turnscope.errors import InputError
from turnscope.jsonio import FILE_LIMITS, loads, native_path
from turnscope.scoring.evidence.bundle import inside
from turnscope.scoring.evidence.documents import Document
from turnscope.scoring.evidence.manifest import EXTRA_FILES, FILES, MANIFEST, Manifest

D = TypeVar("D", bound=Document)

REQUIRED = ("transcript_json", "waveform_timeline_json")


@dataclass(frozen=True)
class Envelope:
    """Peak amplitude per bin, normalised to the channel's loudest bin (0..1)."""

    bin_ms: float
    peaks: np.ndarray


def bundle_files(bundle: Path) -> dict[str, Path]:
    """Artifact kind -> file, from the manifest where it names one inside the bundle."""
    paths = {kind: bundle / spec[0] for kind, spec in FILES.items()}
    manifest = _load(bundle / MANIFEST)
    if manifest is None:
        return paths
    root = bundle.resolve()
    for a in Manifest.read(manifest).artifacts:
        if a.kind not in paths or not a.path:
            continue
        p = (bundle / a.path).resolve()
        if p.is_relative_to(root):  # a manifest never sends the report outside its folder
            paths[a.kind] = p
    return paths


def check_bundle(bundle: Path) -> dict[str, Path]:
    """The bundle's files; InputError naming what is missing when this is not a bundle."""
    fix = "give the output folder of turnscope replay, call or demo"
    if not bundle.exists():
        raise InputError("no such bundle folder", path=bundle, fix=fix)
    if not bundle.is_dir():
        raise InputError("is a file, not a bundle folder", path=bundle, fix=fix)
    for name in (MANIFEST, *(spec[0] for spec in FILES.values()), *EXTRA_FILES):
        inside(bundle, name)  # never read (nor write) through a link out of the bundle
    paths = bundle_files(bundle)
    missing = [MANIFEST] if not (bundle / MANIFEST).is_file() else []
    missing += [paths[k].name for k in REQUIRED if not paths[k].is_file()]
    if missing:
        raise InputError(
            f"not a voice artifact bundle: missing {', '.join(missing)}", path=bundle, fix=fix
        )
    return paths


def wav_ms(path: Path) -> float:
    try:
        info = sf.info(native_path(path))
    except (OSError, RuntimeError, sf.LibsndfileError):
        return 0.0
    return info.frames * 1000.0 / info.samplerate if info.samplerate else 0.0


def _load(path: Path, notes: list[str] | None = None) -> dict[str, Any] | None:
    """A JSON object, or None (missing, unreadable or not an object: noted when it exists)."""
    if not path.is_file():
        return None
    try:
        doc = loads(path.read_text(encoding="utf-8"), limits=FILE_LIMITS)
    except (OSError, ValueError) as exc:
        if notes is not None:
            notes.append(f"{path.name} could not be read ({type(exc).__name__}); shown without it")
        return None
    if not isinstance(doc, dict):
        if notes is not None:
            notes.append(f"{path.name} is not a JSON object; shown without it")
        return None
    return doc


def read_document(model: type[D], path: Path, notes: list[str]) -> D:
    """The document at ``path`` through its model, tolerantly: a missing file is the empty
    document; an unreadable one too, with a note; malformed values are their empty values,
    and the note names them."""
    doc = _load(path, notes)
    if doc is None:
        return model()
    repaired: list[str] = []
    out = model.read(doc, repaired)
    if repaired:
        names = ", ".join(dict.fromkeys(repaired))
        notes.append(f"{path.name} has malformed values ({names}); shown without them")
    return out


def number(x: Any, default: float = 0.0) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return default
    return v if np.isfinite(v) else default


def envelope(path: Path, bin_ms: float, notes: list[str]) -> Envelope | None:
    """Peak envelope of a wav, read in blocks so a long call never sits in memory."""
    if not path.is_file():
        notes.append(f"{path.name} is missing: no waveform for that channel")
        return None
    try:
        with sf.SoundFile(native_path(path)) as f:
            rate = f.samplerate
            hop = max(1, round(rate * bin_ms / 1000))
            block = hop * max(1, (rate * 10) // hop)  # ~10 s per read, whole bins only
            peaks: list[np.ndarray] = []
            rest = np.zeros(0, dtype=np.float32)
            while True:
                x = f.read(block, dtype="float32", always_2d=True)
                if not len(x):
                    break
                x = np.concatenate([rest, np.abs(x).max(axis=1)])
                whole = len(x) // hop * hop
                peaks.append(x[:whole].reshape(-1, hop).max(axis=1))
                rest = x[whole:]
            if len(rest):
                peaks.append(rest.max(keepdims=True))
    except (RuntimeError, sf.LibsndfileError) as exc:
        notes.append(f"{path.name} could not be decoded ({exc}); no waveform for that channel")
        return None
    p = np.concatenate(peaks) if peaks else np.zeros(0, dtype=np.float32)
    # Normalise per channel, but never blow a near-silent channel's hiss up to full height.
    scale = max(float(p.max()) if len(p) else 0.0, 0.05)
    return Envelope(bin_ms, np.clip(p / scale, 0.0, 1.0))
