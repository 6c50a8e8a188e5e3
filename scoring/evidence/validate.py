"""Validating voice artifact bundles (ours or anyone's) against the whole AgentClash contract.

The rules are beside the models (rules.py for the manifest, report_rules.py for the reports);
this module reads the bundle: strict JSON, every artifact's file against its checksum and size,
the producer's other files against the manifest's ``files`` list, and each report through its
rules. Each problem is one line: ``<file>: <where>: <what>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from turnscope.errors import InputError
from turnscope.jsonio import FILE_LIMITS, loads, native_path
from turnscope.scoring.evidence.bundle import sha256_file
from turnscope.scoring.evidence.manifest import EXTRA_FILES, MANIFEST
from turnscope.scoring.evidence.report_rules import REPORT_CHECKS
from turnscope.scoring.evidence.rules import (
    Problems,
    check_manifest,
    check_path,
    leaves_bundle,
    strict_int,
)


def load_json(path: Path, problems: Problems) -> Any:
    """Strict JSON: NaN/Infinity are errors, as are duplicate keys inside one object."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in items:
            if k in seen:
                problems.add("", f"duplicate JSON key {k!r} in one object")
            seen[k] = v
        return seen

    try:
        # within jsonio's limits: NaN/Infinity, a number that does not fit and a nesting too
        # deep are not valid JSON either (and never reach json's recursion)
        return loads(path.read_text(encoding="utf-8"), limits=FILE_LIMITS, object_pairs_hook=pairs)
    except (ValueError, UnicodeDecodeError) as exc:
        problems.add("", f"not valid JSON: {exc}")
        return None


def _check_files(bundle: Path, arts: list[Mapping[str, Any]], p: Problems) -> None:
    root = bundle.resolve()
    for i, a in enumerate(arts):
        if a.get("location") != "local_path" or not isinstance(a.get("path"), str):
            continue
        rel = a["path"]
        if leaves_bundle(rel):
            continue  # already reported; never open it
        path = (root / PurePosixPath(rel)).resolve()
        if root not in path.parents and path != root:
            p.add(f"artifacts[{i}].path", f"{rel!r} resolves outside the bundle")
            continue
        if not path.is_file():
            p.add(f"artifacts[{i}].path", f"file {rel!r} does not exist in the bundle")
            continue
        digest = sha256_file(path)
        if isinstance(a.get("checksum_sha256"), str) and a["checksum_sha256"] != digest:
            p.add(
                f"artifacts[{i}].checksum_sha256",
                f"does not match {rel!r} (its SHA-256 is {digest})",
            )
        size = path.stat().st_size
        if strict_int(a.get("size_bytes")) and a["size_bytes"] != size:
            p.add(f"artifacts[{i}].size_bytes", f"{a['size_bytes']} but {rel!r} has {size} bytes")


def _check_extra_files(bundle: Path, manifest: Mapping[str, Any], p: Problems) -> None:
    """A producer's files beside the artifacts (turnscope's result.json, report.html ...):
    each one present must be listed in the manifest's ``files`` with its checksum, so an
    edited verdict is caught. Bundles of other producers (no ``files`` list) are not held to
    turnscope's outputs."""
    files = manifest.get("files")
    if files is None:
        meta = manifest.get("metadata")
        ours = isinstance(meta, Mapping) and meta.get("provider") == "turnscope"
        if ours and (bundle / "result.json").is_file():
            p.add("files", "missing: result.json and the report are covered by no checksum")
        return
    if not isinstance(files, list):
        p.add("files", "must be a list of {path, size_bytes, checksum_sha256}")
        return
    listed: set[str] = set()
    for i, f in enumerate(files):
        where = f"files[{i}]"
        if not isinstance(f, Mapping) or not isinstance(f.get("path"), str):
            p.add(where, "must be an object with a path")
            continue
        rel = f["path"]
        if not check_path(rel, f"{where}.path", p):
            continue
        listed.add(rel)
        path = bundle / rel
        if not path.resolve().is_relative_to(bundle.resolve()):
            p.add(f"{where}.path", f"{rel!r} resolves outside the bundle (a link): not read")
            continue
        if not path.is_file():
            p.add(f"{where}.path", f"file {rel!r} does not exist in the bundle")
            continue
        digest = sha256_file(path)
        if f.get("checksum_sha256") != digest:
            p.add(
                f"{where}.checksum_sha256",
                f"does not match {rel!r}: the file was changed after the run wrote it",
            )
    for name in EXTRA_FILES:
        if (bundle / name).is_file() and name not in listed:
            p.add("files", f"{name} is in the bundle but covered by no checksum")


AUDIO_SLACK_MS = 50.0  # rounding of turn times against whole samples


def _local(bundle: Path, arts: list[Mapping[str, Any]], kind: str) -> Path | None:
    """The bundle's file of an artifact kind, when it is one inside the bundle."""
    root = bundle.resolve()
    for a in arts:
        rel = a.get("path")
        if a.get("kind") != kind or a.get("location") != "local_path" or not isinstance(rel, str):
            continue
        if leaves_bundle(rel):
            return None
        path = (root / PurePosixPath(rel)).resolve()
        return path if path.is_relative_to(root) and path.is_file() else None
    return None


def _check_audio_covers_transcript(
    bundle: Path, arts: list[Mapping[str, Any]], lines: list[str]
) -> None:
    """Each party's turns must lie within that party's recording: a transcript whose turns
    end after the audio does (the folder emptied during the run, a file cut short) is
    evidence of a call the bundle no longer holds."""
    import soundfile as sf

    transcript = _local(bundle, arts, "transcript_json")
    if transcript is None:
        return
    doc = load_json(transcript, Problems(str(transcript)))
    turns = doc.get("turns") if isinstance(doc, Mapping) else None
    if not isinstance(turns, list):
        return
    for speaker in ("caller", "agent"):
        audio = _local(bundle, arts, f"{speaker}_audio")
        ends = [
            (i, t["end_ms"])
            for i, t in enumerate(turns)
            if isinstance(t, Mapping)
            and t.get("speaker") == speaker
            and isinstance(t.get("end_ms"), (int, float))
            and not isinstance(t.get("end_ms"), bool)
        ]
        if audio is None or not ends:
            continue
        try:
            info = sf.info(native_path(audio))
        except (sf.LibsndfileError, RuntimeError, OSError):
            continue  # not audio libsndfile reads: nothing to measure it by
        audio_ms = info.frames * 1000.0 / info.samplerate if info.samplerate else 0.0
        i, end = max(ends, key=lambda x: x[1])
        if end > audio_ms + AUDIO_SLACK_MS:
            lines.append(
                f"{transcript}: turns[{i}].end_ms: the {speaker}'s turn ends at {end:g} ms but "
                f"{audio.name} holds only {audio_ms:.0f} ms of audio: the recording of the call "
                "is not all there"
            )


def _looks_like_a_manifest(doc: Any) -> bool:
    """Whether a JSON document is a manifest at all (a damaged one is still one: its problems
    are listed), not another file given in its place (a result.json, a suite)."""
    return isinstance(doc, Mapping) and bool({"schema_version", "artifacts"} & set(doc))


def validate_bundle(target: Path) -> list[str]:
    """Every problem of the bundle at ``target`` (a folder, or its manifest file)."""
    manifest_path = target / MANIFEST if target.is_dir() else target
    bundle = manifest_path.parent
    p = Problems(str(manifest_path))
    if not manifest_path.is_file():
        p.add(
            "",
            "missing: not a voice artifact bundle (give the output folder of turnscope replay, "
            "call or demo)",
        )
        return p.lines
    if not manifest_path.resolve().is_relative_to(bundle.resolve()):
        p.add("", "the manifest is a link to a file outside the bundle: not read")
        return p.lines
    manifest = load_json(manifest_path, p)
    if target.is_file() and target.name != MANIFEST and not _looks_like_a_manifest(manifest):
        parent = target.parent / MANIFEST
        raise InputError(
            "is not a bundle's manifest (it has no schema_version nor artifacts)",
            path=target,
            fix=f"give the bundle's folder, {target.parent}"
            if parent.is_file()
            else "give the output folder of turnscope replay, call or demo",
        )
    arts = check_manifest(manifest, p) if manifest is not None else []
    _check_files(bundle, arts, p)
    if isinstance(manifest, Mapping):
        _check_extra_files(bundle, manifest, p)
    lines = list(p.lines)
    for a in arts:
        check = REPORT_CHECKS.get(str(a.get("kind")))
        rel = a.get("path")
        if check is None or a.get("location") != "local_path" or not isinstance(rel, str):
            continue
        path = bundle / rel
        if leaves_bundle(rel) or _local(bundle, [a], str(a.get("kind"))) is None:
            continue  # outside the bundle (named above) or missing: never read
        rp = Problems(str(path))
        doc = load_json(path, rp)
        if doc is not None:
            check(doc, rp)
        lines += rp.lines
    _check_audio_covers_transcript(bundle, arts, lines)
    return lines
