"""Voice artifact bundles: every run's output folder, described by voice_artifact_manifest.json.

The manifest follows the AgentClash voice artifact contract (schema_version 2026-05-13): run and
agent UUIDs, a session id, and one entry per artifact with a relative path, content type, size
and SHA-256 computed from the bytes on disk. The five required kinds are always present (a call
that never connected still leaves empty channel files and says why).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import uuid
import wave
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
from pydantic import BaseModel

from turnscope.errors import InputError, OutputError
from turnscope.jsonio import check_output, native_path, write_json
from turnscope.scoring.evidence.manifest import (
    EXTRA_FILES,
    FILES,
    MANIFEST,
    ArtifactRef,
    FileEntry,
    Manifest,
    ManifestMetadata,
)


def inside(bundle: Path, name: str) -> Path:
    """``bundle/name``, refused (InputError) when it resolves outside the bundle: a symbolic
    link out of it is never followed, by any command that reads or writes a bundle."""
    path = Path(bundle) / name
    if not os.path.lexists(path):
        return path
    root = Path(bundle).resolve()
    if not path.resolve().is_relative_to(root):
        raise InputError(
            f"{name} is a symbolic link to {path.resolve()}, outside the bundle: not followed",
            path=bundle,
            fix="replace the link with the file itself",
        )
    return path


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def empty_wav(path: Path, rate: int = 16000) -> None:
    """A valid, empty mono wav (a channel nothing was captured on)."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)


def mix_channels(caller: Path, agent: Path, out: Path) -> None:
    """What a listener on the line heard: both channels summed (clipped), streamed in blocks,
    written beside ``out`` and renamed (OutputError when the disk will not take it)."""
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    check_output(out)  # only a regular file is ever replaced
    try:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # never write through whatever a stale name is
        with sf.SoundFile(native_path(caller)) as c, sf.SoundFile(native_path(agent)) as a:
            rate = c.samplerate
            with sf.SoundFile(native_path(tmp), "w", rate, 1, subtype="PCM_16", format="WAV") as m:
                while True:
                    x = c.read(rate * 10, dtype="float32")
                    y = a.read(rate * 10, dtype="float32")
                    n = max(len(x), len(y))
                    if n == 0:
                        break
                    block = np.zeros(n, dtype=np.float32)
                    block[: len(x)] += x
                    block[: len(y)] += y
                    m.write(np.clip(block, -1.0, 1.0))
        os.replace(tmp, out)
    except (OSError, sf.LibsndfileError) as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(_as_os_error(exc, out), out) from None


def _as_os_error(exc: Exception, path: Path) -> OSError:
    """libsndfile says only "System error." when a write fails: ask the file system why."""
    if isinstance(exc, OSError):
        return exc
    try:
        stat = os.statvfs(path.parent)
        full = stat.f_bavail * stat.f_frsize < (1 << 20)
    except OSError:
        full = False
    return OSError(
        errno.ENOSPC if full else errno.EIO, os.strerror(errno.ENOSPC if full else errno.EIO)
    )


@dataclass(frozen=True)
class BundleIds:
    run_id: str
    run_agent_id: str
    voice_session_id: str

    @classmethod
    def new(cls, session: str) -> BundleIds:
        return cls(str(uuid.uuid4()), str(uuid.uuid4()), session)


Attempt = Callable[[str, Callable[[], Any]], Any]


def _now(name: str, write: Callable[[], Any]) -> Any:
    return write()


def write_document(path: Path, doc: BaseModel | Mapping[str, Any]) -> Path:
    """A document as JSON (scrubbed, atomic); a plain mapping is written as it is (a bundle
    put together by hand, as the tests do)."""
    return write_json(path, doc.model_dump(mode="json") if isinstance(doc, BaseModel) else doc)


def write_bundle(
    outdir: Path,
    documents: Mapping[str, BaseModel | Mapping[str, Any]],
    *,
    ids: BundleIds,
    metadata: ManifestMetadata | Mapping[str, Any],
    attempt: Attempt = _now,
) -> Path:
    """Write the JSON documents (by kind, in the order given), the mixed audio, and the
    manifest over everything.

    ``documents`` maps JSON artifact kinds to their models; the channel wavs must already be in
    ``outdir`` (they are written while the audio arrives). ``attempt(name, write)`` runs each
    write: the default raises at the first failure; a caller that must keep going on a full
    disk passes one that notes the failure and goes on (the manifest then lists what exists).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    for kind in ("caller_audio", "agent_audio"):
        path = outdir / FILES[kind][0]
        if not path.exists():
            attempt(path.name, lambda path=path: empty_wav(path))
    for kind, doc in documents.items():
        name = FILES[kind][0]
        attempt(name, lambda name=name, doc=doc: write_document(outdir / name, doc))
    attempt(
        FILES["mixed_audio"][0],
        lambda: mix_channels(
            outdir / FILES["caller_audio"][0],
            outdir / FILES["agent_audio"][0],
            outdir / FILES["mixed_audio"][0],
        ),
    )
    meta = ManifestMetadata.model_validate(metadata)
    return attempt(MANIFEST, lambda: write_manifest(outdir, ids=ids, metadata=meta))


def _sizes(path: Path) -> dict[str, Any]:
    return {"size_bytes": path.stat().st_size, "checksum_sha256": sha256_file(path)}


def write_manifest(outdir: Path, *, ids: BundleIds, metadata: ManifestMetadata) -> Path:
    """The manifest over every artifact (and every other output) in ``outdir``. An artifact
    that could not be written (a full disk) is left out: validate then names what is missing."""
    artifacts = [
        ArtifactRef(
            key=key,
            kind=kind,
            location="local_path",
            path=name,
            content_type=content_type,
            **_sizes(outdir / name),
        )
        for kind, (name, key, content_type) in FILES.items()
        if (outdir / name).exists()
    ]
    manifest = Manifest(
        run_id=ids.run_id,
        run_agent_id=ids.run_agent_id,
        voice_session_id=ids.voice_session_id,
        artifacts=artifacts,
        metadata=metadata,
        files=file_entries(outdir),
    )
    return write_document(outdir / MANIFEST, manifest)


def file_entries(outdir: Path) -> list[FileEntry]:
    """The files beside the artifacts that are in ``outdir``, with their checksums."""
    return [
        FileEntry(path=name, **_sizes(outdir / name))
        for name in EXTRA_FILES
        if (outdir / name).is_file()
    ]


def seal(outdir: Path) -> Path:
    """Bring the manifest's checksums of the files beside the artifacts (result.json,
    report.html ...) up to date, after they were (re)written."""
    path = outdir / MANIFEST
    # Only the files list is replaced: the manifest may be another producer's (``turnscope
    # report`` on its bundle), whose every other field stays as written.
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["files"] = [f.model_dump(mode="json") for f in file_entries(outdir)]
    return write_json(path, manifest)
