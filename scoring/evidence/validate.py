"""Validating voice artifact bundles (ours or anyone's) against the whole AgentClash contract.

Every rule the published JSON Schemas express, plus the checks the consumer enforces beyond
them (../shared/contracts/agentclash.md): unique artifact keys, checksums and sizes against the
files, no path traversal, integer sizes, passed/status coupling, whole counts, bounded ratios,
finite numbers, video-sync counts that agree with their pair rows, ordered ranges. Each
problem is one line: ``<file>: <where>: <what>``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from turnscope.scoring.evidence.bundle import (
    EXTRA_FILES,
    MANIFEST,
    REQUIRED_KINDS,
    SCHEMA_VERSION,
    sha256_file,
)

KINDS = (
    "caller_audio",
    "agent_audio",
    "mixed_audio",
    "transcript_json",
    "waveform_timeline_json",
    "media_policy_report_json",
    "live_continuity_report_json",
    "video_sync_report_json",
    "raw_provider_trace_json",
    "structured_output_json",
    "redaction_metadata_json",
)
UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
NIL_UUID = re.compile(r"^0{8}-0{4}-0{4}-0{4}-0{12}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
CONTINUITY_TYPE = re.compile(
    r"^\s*(agentclash\.voice\.live_continuity_eval\.v1|voicey\.live_continuity_eval)\s*$"
)
VIDEO_TYPE = re.compile(r"^\s*(agentclash\.voice\.video_sync_eval\.v1|voicey\.video_sync_eval)\s*$")
SEPARATION_TYPE = re.compile(
    r"^\s*(agentclash\.voice\.source_separation_eval\.v1|voicey\.source_separation_eval)\s*$"
)


class _Problems:
    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.lines.append(f"{self.source}: {where}: {what}" if where else f"{self.source}: {what}")


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _is_whole(x: Any) -> bool:
    return _is_number(x) and math.isfinite(x) and float(x).is_integer()


def _strict_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _nonblank(x: Any) -> bool:
    return isinstance(x, str) and x.strip() != ""


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def load_json(path: Path, problems: _Problems) -> Any:
    """Strict JSON: NaN/Infinity are errors, as are duplicate keys inside one object."""

    def pairs(items: list[tuple[str, Any]]) -> dict[str, Any]:
        seen: dict[str, Any] = {}
        for k, v in items:
            if k in seen:
                problems.add("", f"duplicate JSON key {k!r} in one object")
            seen[k] = v
        return seen

    try:
        return json.loads(
            path.read_text(encoding="utf-8"),
            parse_constant=_reject_constant,
            object_pairs_hook=pairs,
        )
    except (ValueError, UnicodeDecodeError) as exc:
        problems.add("", f"not valid JSON: {exc}")
        return None


# --- the manifest ---------------------------------------------------------------------------


def _check_uuid(m: Mapping[str, Any], field: str, p: _Problems) -> None:
    value = m.get(field)
    if not isinstance(value, str) or not UUID.match(value):
        p.add(field, f"must be a hyphenated UUID, got {value!r}")
    elif NIL_UUID.match(value):
        p.add(field, "must not be the nil UUID")


def _check_path(value: Any, where: str, p: _Problems) -> bool:
    if not isinstance(value, str) or value == "":
        p.add(where, "local_path artifacts need a non-empty relative path")
        return False
    ok = True
    if value.startswith("/"):
        p.add(where, f"path {value!r} is absolute; it must be relative to the bundle")
        ok = False
    if re.match(r"^[A-Za-z]:", value):
        p.add(where, f"path {value!r} starts with a drive letter")
        ok = False
    if ".." in re.split(r"[/\\]", value):
        p.add(where, f"path {value!r} has a '..' segment (it would leave the bundle)")
        ok = False
    return ok


def _check_artifact(a: Any, i: int, p: _Problems) -> None:
    where = f"artifacts[{i}]"
    if not isinstance(a, Mapping):
        p.add(where, "must be an object")
        return
    for field in ("key", "kind", "location", "checksum_sha256"):
        if field not in a:
            p.add(where, f"missing required field {field!r}")
    if "key" in a and not _nonblank(a["key"]):
        p.add(f"{where}.key", "must be non-blank")
    if "kind" in a and a["kind"] not in KINDS:
        p.add(f"{where}.kind", f"unknown kind {a['kind']!r}")
    loc = a.get("location")
    if "location" in a and loc not in ("local_path", "object_storage"):
        p.add(f"{where}.location", f"must be local_path or object_storage, not {loc!r}")
    if loc == "local_path":
        _check_path(a.get("path"), f"{where}.path", p)
        for field in ("bucket", "object_key"):
            if field in a:
                p.add(f"{where}.{field}", "local_path artifacts must not set bucket/object_key")
    elif loc == "object_storage":
        for field in ("bucket", "object_key"):
            if not _nonblank(a.get(field)):
                p.add(f"{where}.{field}", "object_storage artifacts need a non-blank value")
        if "path" in a:
            p.add(f"{where}.path", "object_storage artifacts must not set path")
    if "checksum_sha256" in a:
        c = a["checksum_sha256"]
        if not isinstance(c, str) or not SHA256.match(c):
            p.add(f"{where}.checksum_sha256", "must be 64 lowercase hex characters")
    if "size_bytes" in a:
        s = a["size_bytes"]
        if not _strict_int(s):
            p.add(f"{where}.size_bytes", f"must be a JSON integer, got {s!r}")
        elif s < 0:
            p.add(f"{where}.size_bytes", "must not be negative")
    if "content_type" in a and not isinstance(a["content_type"], str):
        p.add(f"{where}.content_type", "must be a string")


def check_manifest(m: Any, p: _Problems) -> list[Mapping[str, Any]]:
    """Problems of the manifest itself; returns its well-formed artifact entries."""
    if not isinstance(m, Mapping):
        p.add("", "the manifest must be a JSON object")
        return []
    if m.get("schema_version") != SCHEMA_VERSION:
        p.add("schema_version", f"must be {SCHEMA_VERSION!r}, got {m.get('schema_version')!r}")
    _check_uuid(m, "run_id", p)
    _check_uuid(m, "run_agent_id", p)
    if not _nonblank(m.get("voice_session_id")):
        p.add("voice_session_id", "must be a non-blank string")
    meta = m.get("metadata")
    if "metadata" in m:
        if not isinstance(meta, Mapping):
            p.add("metadata", "must be an object")
        else:
            for field in (
                "provider",
                "model",
                "input_language",
                "output_language",
                "transport",
                "streaming_mode",
            ):
                if field in meta and not isinstance(meta[field], str):
                    p.add(f"metadata.{field}", "must be a string")
    arts = m.get("artifacts")
    if not isinstance(arts, list) or not arts:
        p.add("artifacts", "must be a non-empty list")
        return []
    for i, a in enumerate(arts):
        _check_artifact(a, i, p)
    dicts = [a for a in arts if isinstance(a, Mapping)]
    kinds = {a.get("kind") for a in dicts}
    for kind in REQUIRED_KINDS:
        if kind not in kinds:
            p.add("artifacts", f"required kind {kind!r} is missing")
    seen: dict[str, int] = {}
    for i, a in enumerate(arts):
        if isinstance(a, Mapping) and isinstance(a.get("key"), str):
            key = a["key"]
            if key in seen:
                p.add(f"artifacts[{i}].key", f"duplicate key {key!r} (also artifacts[{seen[key]}])")
            else:
                seen[key] = i
    for i in range(len(arts)):
        for j in range(i):
            if arts[i] == arts[j]:
                p.add(f"artifacts[{i}]", f"is identical to artifacts[{j}]")
    return dicts


def _check_files(bundle: Path, arts: list[Mapping[str, Any]], p: _Problems) -> None:
    root = bundle.resolve()
    for i, a in enumerate(arts):
        if a.get("location") != "local_path" or not isinstance(a.get("path"), str):
            continue
        rel = a["path"]
        if rel.startswith("/") or ".." in re.split(r"[/\\]", rel) or re.match(r"^[A-Za-z]:", rel):
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
        if _strict_int(a.get("size_bytes")) and a["size_bytes"] != size:
            p.add(f"artifacts[{i}].size_bytes", f"{a['size_bytes']} but {rel!r} has {size} bytes")


def _check_extra_files(bundle: Path, manifest: Mapping[str, Any], p: _Problems) -> None:
    """A producer's files beside the artifacts (turnscope's result.json, report.html ...):
    each one present must be listed in the manifest's ``files`` with its checksum, so an
    edited verdict is caught. Bundles of other producers (no ``files`` list) are not held to
    turnscope's outputs."""
    files = manifest.get("files")
    if files is None:
        if (bundle / "result.json").is_file() and manifest.get("metadata", {}).get(
            "provider"
        ) == "turnscope":
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
        if not _check_path(rel, f"{where}.path", p):
            continue
        listed.add(rel)
        path = bundle / rel
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


# --- reports --------------------------------------------------------------------------------


def _check_metric_values(metrics: Mapping[str, Any], p: _Problems, prefix: str) -> None:
    for k, v in metrics.items():
        where = f"{prefix}.{k}"
        if k.endswith("_count"):
            if not _is_whole(v) or v < 0:
                p.add(where, f"a count must be a whole non-negative number, got {v!r}")
        elif k.endswith("_ms"):
            if not _is_number(v) or not math.isfinite(v) or v < 0:
                p.add(where, f"must be a finite number >= 0, got {v!r}")
        elif k.endswith("_ratio") or k.endswith("_risk"):
            if not _is_number(v) or not math.isfinite(v) or not 0 <= v <= 1:
                p.add(where, f"must be a number in [0, 1], got {v!r}")
        elif _is_number(v) and not math.isfinite(v):
            p.add(where, "must be finite")


def _check_strings(doc: Mapping[str, Any], field: str, p: _Problems) -> None:
    if field in doc and (
        not isinstance(doc[field], list) or not all(isinstance(x, str) for x in doc[field])
    ):
        p.add(field, "must be a list of strings")


def _check_status_report(
    doc: Mapping[str, Any],
    p: _Problems,
    type_re: re.Pattern,
    type_name: str,
    statuses: tuple[str, ...],
) -> str | None:
    """The header every status report shares: required fields, type, status and the passed
    coupling. Returns the status."""
    for field in ("schema_version", "type", "status", "passed", "metrics"):
        if field not in doc:
            p.add("", f"missing required field {field!r}")
    if "schema_version" in doc and not _nonblank(doc["schema_version"]):
        p.add("schema_version", "must be a non-blank string")
    if "type" in doc and (not isinstance(doc["type"], str) or not type_re.match(doc["type"])):
        p.add("type", f"must be {type_name}, got {doc['type']!r}")
    status = doc.get("status")
    if "status" in doc and status not in statuses:
        allowed = ", ".join(statuses) + ("" if "warn" in statuses else " (no warn)")
        p.add("status", f"must be one of {allowed}, not {status!r}")
    if "passed" in doc and not isinstance(doc["passed"], bool):
        p.add("passed", "must be a boolean")
    elif "passed" in doc and doc["passed"] != (status == "passed"):
        p.add(
            "passed",
            f"is {doc['passed']} but status is {status!r} (passed must equal status == 'passed')",
        )
    return status if isinstance(status, str) else None


def check_continuity(doc: Any, p: _Problems) -> None:
    """agentclash.voice.live_continuity_eval.v1 (and its legacy alias)."""
    if not isinstance(doc, Mapping):
        p.add("", "the report must be a JSON object")
        return
    status = _check_status_report(
        doc,
        p,
        CONTINUITY_TYPE,
        "agentclash.voice.live_continuity_eval.v1",
        ("passed", "warn", "failed", "degraded"),
    )
    metrics = doc.get("metrics")
    if "metrics" in doc and not isinstance(metrics, Mapping):
        p.add("metrics", "must be an object")
    elif isinstance(metrics, Mapping):
        ev = metrics.get("evidence_status")
        if ev not in ("available", "degraded"):
            p.add("metrics.evidence_status", f"must be available or degraded, got {ev!r}")
        if status == "passed" and ev == "degraded":
            p.add("status", "cannot be passed when metrics.evidence_status is degraded")
        _check_metric_values(metrics, p, "metrics")
    _check_strings(doc, "caveats", p)
    _check_strings(doc, "agentclash_notes", p)
    if "input" in doc and not isinstance(doc["input"], str):
        p.add("input", "must be a string")


def check_separation(doc: Any, p: _Problems) -> None:
    """agentclash.voice.source_separation_eval.v1."""
    if not isinstance(doc, Mapping):
        p.add("", "the report must be a JSON object")
        return
    _check_status_report(
        doc,
        p,
        SEPARATION_TYPE,
        "agentclash.voice.source_separation_eval.v1",
        ("passed", "failed", "degraded"),
    )
    metrics = doc.get("metrics")
    if isinstance(metrics, Mapping):
        for field in (
            "dialogue_retention_ratio",
            "background_preservation_ratio",
            "speech_drop_risk",
        ):
            if field not in metrics:
                p.add("metrics", f"missing required metric {field!r}")
        _check_metric_values(metrics, p, "metrics")
    elif "metrics" in doc:
        p.add("metrics", "must be an object")
    _check_strings(doc, "caveats", p)
    _check_strings(doc, "agentclash_notes", p)


def _check_segments(doc: Mapping[str, Any], field: str, p: _Problems) -> None:
    for i, seg in enumerate(doc.get(field) or []):
        where = f"{field}[{i}]"
        if not isinstance(seg, Mapping):
            p.add(where, "must be an object")
            continue
        for k in ("start_ms", "end_ms"):
            v = seg.get(k)
            if not _is_number(v) or not math.isfinite(v) or v < 0:
                p.add(f"{where}.{k}", f"must be a finite number >= 0, got {v!r}")
        s, e = seg.get("start_ms"), seg.get("end_ms")
        if _is_number(s) and _is_number(e) and e < s:
            p.add(where, f"end_ms {e} is before start_ms {s}")


def check_video_sync(doc: Any, p: _Problems) -> None:
    """agentclash.voice.video_sync_eval.v1: summary, segments and pair rows, cross-checked."""
    if not isinstance(doc, Mapping):
        p.add("", "the report must be a JSON object")
        return
    if (
        "type" in doc
        and doc["type"] not in ("", None)
        and (not isinstance(doc["type"], str) or not VIDEO_TYPE.match(doc["type"]))
    ):
        p.add("type", f"must be agentclash.voice.video_sync_eval.v1, got {doc['type']!r}")
    summary = doc.get("summary")
    if not isinstance(summary, Mapping):
        p.add("summary", "is required and must be an object")
        return
    if summary.get("status") not in ("pass", "warn", "fail"):
        p.add("summary.status", f"must be pass, warn or fail, got {summary.get('status')!r}")
    if not _nonblank(summary.get("interpretation")):
        p.add("summary.interpretation", "is required (non-empty text)")
    for k, v in summary.items():
        where = f"summary.{k}"
        if k in ("paired_segments", "missing_translation_segments", "extra_translation_segments"):
            if not _is_whole(v) or v < 0:
                p.add(where, f"a count must be a whole non-negative number, got {v!r}")
        elif k.endswith("_ratio_range"):
            if not (
                isinstance(v, list) and len(v) == 2 and all(_is_number(x) and x >= 0 for x in v)
            ):
                p.add(where, "must be two non-negative numbers")
            elif v[0] > v[1]:
                p.add(where, f"range is reversed: {v}")
        elif k in ("first_onset_lag_ms", "median_onset_lag_ms", "p90_onset_lag_ms", "tail_lag_ms"):
            if not _is_number(v) or not math.isfinite(v):
                p.add(where, "must be a finite number")
        elif k.endswith("_ms") or k.endswith("_duration_ratio") or k == "span_duration_ratio":
            if not _is_number(v) or not math.isfinite(v) or v < 0:
                p.add(where, f"must be a finite number >= 0, got {v!r}")
        elif k in ("segment_coverage_ratio", "duration_fit_score") and (
            not _is_number(v) or not 0 <= v <= 1
        ):
            p.add(where, f"must be a number in [0, 1], got {v!r}")
    _check_segments(doc, "source_segments", p)
    _check_segments(doc, "translated_segments", p)
    pairs = doc.get("pairs")
    if pairs is None:
        return
    if not isinstance(pairs, list):
        p.add("pairs", "must be a list")
        return
    counts = {"paired": 0, "missing_translation": 0}
    for i, row in enumerate(pairs):
        where = f"pairs[{i}]"
        if not isinstance(row, Mapping) or row.get("status") not in counts:
            p.add(where, "needs status paired or missing_translation")
            continue
        counts[row["status"]] += 1
        required = (
            (
                "source_index",
                "translated_index",
                "source_start_ms",
                "source_end_ms",
                "translated_start_ms",
                "translated_end_ms",
                "onset_lag_ms",
                "duration_ratio",
            )
            if row["status"] == "paired"
            else ("source_index",)
        )
        for k in required:
            if row.get(k) is None:
                p.add(where, f"a {row['status']} row needs {k}")
        for k in ("source_index", "translated_index"):
            if row.get(k) is not None and (not _strict_int(row[k]) or row[k] < 0):
                p.add(f"{where}.{k}", "must be a non-negative integer")
        for a, b in (
            ("source_start_ms", "source_end_ms"),
            ("translated_start_ms", "translated_end_ms"),
        ):
            s, e = row.get(a), row.get(b)
            if _is_number(s) and _is_number(e) and e < s:
                p.add(where, f"{b} {e} is before {a} {s}")
        for idx, seg in (
            ("source_index", "source_segments"),
            ("translated_index", "translated_segments"),
        ):
            k = row.get(idx)
            if _strict_int(k) and seg in doc and k >= len(doc[seg] or []):
                p.add(f"{where}.{idx}", f"{k} is out of range for {seg}")
    for status, field in (
        ("paired", "paired_segments"),
        ("missing_translation", "missing_translation_segments"),
    ):
        if field in summary and _is_whole(summary[field]) and summary[field] != counts[status]:
            p.add(
                f"summary.{field}",
                f"is {summary[field]} but pairs has {counts[status]} {status} rows",
            )


REPORT_CHECKS = {
    "live_continuity_report_json": check_continuity,
    "media_policy_report_json": check_separation,
    "video_sync_report_json": check_video_sync,
}


def validate_bundle(target: Path) -> list[str]:
    """Every problem of the bundle at ``target`` (a folder, or its manifest file)."""
    manifest_path = target / MANIFEST if target.is_dir() else target
    bundle = manifest_path.parent
    p = _Problems(str(manifest_path))
    if not manifest_path.is_file():
        p.add("", "no voice_artifact_manifest.json: not a voice artifact bundle")
        return p.lines
    manifest = load_json(manifest_path, p)
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
        if ".." in re.split(r"[/\\]", rel) or rel.startswith("/") or not path.is_file():
            continue
        rp = _Problems(str(path))
        doc = load_json(path, rp)
        if doc is not None:
            check(doc, rp)
        lines += rp.lines
    return lines
