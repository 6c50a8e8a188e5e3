"""The AgentClash contract's rules for any producer's JSON, beside the models that write
turnscope's documents (manifest.py, documents.py) and sharing their vocabulary: every rule the
published JSON Schemas express, plus the checks the consumer enforces beyond them
(../shared/contracts/agentclash.md). This module holds the manifest's rules and what the
report rules share; report_rules.py the reports'. Each problem is one line:
``<file>: <where>: <what>``.

The models do not run these rules when turnscope builds a document: a bundle cut short by a
full disk must still get its manifest, and ``turnscope validate`` then says what is missing.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from turnscope.scoring.evidence.manifest import (
    KINDS,
    LOCATIONS,
    REQUIRED_KINDS,
    SCHEMA_VERSION,
    ManifestMetadata,
)

UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
NIL_UUID = re.compile(r"^0{8}-0{4}-0{4}-0{4}-0{12}$")
SHA256 = re.compile(r"^[0-9a-f]{64}$")
ARTIFACT_FIELDS = ("key", "kind", "location", "checksum_sha256")  # required by the schema


class Problems:
    """The problems of one file, each as one line naming the file."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: list[str] = []

    def add(self, where: str, what: str) -> None:
        self.lines.append(f"{self.source}: {where}: {what}" if where else f"{self.source}: {what}")


def is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_whole(x: Any) -> bool:
    return is_number(x) and math.isfinite(x) and float(x).is_integer()


def strict_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def nonblank(x: Any) -> bool:
    return isinstance(x, str) and x.strip() != ""


def _segments(path: str) -> list[str]:
    return re.split(r"[/\\]", path)


def leaves_bundle(rel: str) -> bool:
    """An absolute path, a drive letter or a '..' segment: never to be opened."""
    return rel.startswith("/") or bool(re.match(r"^[A-Za-z]:", rel)) or ".." in _segments(rel)


# --- the manifest ---------------------------------------------------------------------------


def _check_uuid(m: Mapping[str, Any], field: str, p: Problems) -> None:
    value = m.get(field)
    if not isinstance(value, str) or not UUID.match(value):
        p.add(field, f"must be a hyphenated UUID, got {value!r}")
    elif NIL_UUID.match(value):
        p.add(field, "must not be the nil UUID")


def check_path(value: Any, where: str, p: Problems) -> bool:
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
    if ".." in _segments(value):
        p.add(where, f"path {value!r} has a '..' segment (it would leave the bundle)")
        ok = False
    return ok


def _check_artifact(a: Any, i: int, p: Problems) -> None:
    where = f"artifacts[{i}]"
    if not isinstance(a, Mapping):
        p.add(where, "must be an object")
        return
    for field in ("key", "kind", "location", "checksum_sha256"):
        if field not in a:
            p.add(where, f"missing required field {field!r}")
    if "key" in a and not nonblank(a["key"]):
        p.add(f"{where}.key", "must be non-blank")
    if "kind" in a and a["kind"] not in KINDS:
        p.add(f"{where}.kind", f"unknown kind {a['kind']!r}")
    loc = a.get("location")
    if "location" in a and loc not in LOCATIONS:
        p.add(f"{where}.location", f"must be local_path or object_storage, not {loc!r}")
    if loc == "local_path":
        check_path(a.get("path"), f"{where}.path", p)
        for field in ("bucket", "object_key"):
            if field in a:
                p.add(f"{where}.{field}", "local_path artifacts must not set bucket/object_key")
    elif loc == "object_storage":
        for field in ("bucket", "object_key"):
            if not nonblank(a.get(field)):
                p.add(f"{where}.{field}", "object_storage artifacts need a non-blank value")
        if "path" in a:
            p.add(f"{where}.path", "object_storage artifacts must not set path")
    if "checksum_sha256" in a:
        c = a["checksum_sha256"]
        if not isinstance(c, str) or not SHA256.match(c):
            p.add(f"{where}.checksum_sha256", "must be 64 lowercase hex characters")
    if "size_bytes" in a:
        s = a["size_bytes"]
        if not strict_int(s):
            p.add(f"{where}.size_bytes", f"must be a JSON integer, got {s!r}")
        elif s < 0:
            p.add(f"{where}.size_bytes", "must not be negative")
    if "content_type" in a and not isinstance(a["content_type"], str):
        p.add(f"{where}.content_type", "must be a string")


def check_manifest(m: Any, p: Problems) -> list[Mapping[str, Any]]:
    """Problems of the manifest itself; returns its well-formed artifact entries."""
    if not isinstance(m, Mapping):
        p.add("", "the manifest must be a JSON object")
        return []
    if m.get("schema_version") != SCHEMA_VERSION:
        p.add("schema_version", f"must be {SCHEMA_VERSION!r}, got {m.get('schema_version')!r}")
    _check_uuid(m, "run_id", p)
    _check_uuid(m, "run_agent_id", p)
    if not nonblank(m.get("voice_session_id")):
        p.add("voice_session_id", "must be a non-blank string")
    meta = m.get("metadata")
    if "metadata" in m:
        if not isinstance(meta, Mapping):
            p.add("metadata", "must be an object")
        else:
            for field in ManifestMetadata.model_fields:  # the fields the schema names
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
