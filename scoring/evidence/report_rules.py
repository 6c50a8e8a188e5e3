"""The contract's rules for its three report types (live continuity, source separation,
video sync), for any producer's report; see rules.py. Statuses and the continuity type come
from the models turnscope writes its own report with (documents.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any, get_args

from turnscope.scoring.evidence.documents import CONTINUITY_TYPE as CONTINUITY_NAME
from turnscope.scoring.evidence.documents import ContinuityStatus, EvidenceStatus
from turnscope.scoring.evidence.rules import Problems, is_number, is_whole, nonblank, strict_int

CONTINUITY_TYPE = re.compile(
    r"^\s*(agentclash\.voice\.live_continuity_eval\.v1|voicey\.live_continuity_eval)\s*$"
)
VIDEO_TYPE = re.compile(r"^\s*(agentclash\.voice\.video_sync_eval\.v1|voicey\.video_sync_eval)\s*$")
SEPARATION_TYPE = re.compile(
    r"^\s*(agentclash\.voice\.source_separation_eval\.v1|voicey\.source_separation_eval)\s*$"
)


def _check_metric_values(metrics: Mapping[str, Any], p: Problems, prefix: str) -> None:
    for k, v in metrics.items():
        where = f"{prefix}.{k}"
        if k.endswith("_count"):
            if not is_whole(v) or v < 0:
                p.add(where, f"a count must be a whole non-negative number, got {v!r}")
        elif k.endswith("_ms"):
            if not is_number(v) or not math.isfinite(v) or v < 0:
                p.add(where, f"must be a finite number >= 0, got {v!r}")
        elif k.endswith("_ratio") or k.endswith("_risk"):
            if not is_number(v) or not math.isfinite(v) or not 0 <= v <= 1:
                p.add(where, f"must be a number in [0, 1], got {v!r}")
        elif is_number(v) and not math.isfinite(v):
            p.add(where, "must be finite")


def _check_strings(doc: Mapping[str, Any], field: str, p: Problems) -> None:
    if field in doc and (
        not isinstance(doc[field], list) or not all(isinstance(x, str) for x in doc[field])
    ):
        p.add(field, "must be a list of strings")


def _check_status_report(
    doc: Mapping[str, Any],
    p: Problems,
    type_re: re.Pattern,
    type_name: str,
    statuses: tuple[str, ...],
) -> str | None:
    """The header every status report shares: required fields, type, status and the passed
    coupling. Returns the status."""
    for field in ("schema_version", "type", "status", "passed", "metrics"):
        if field not in doc:
            p.add("", f"missing required field {field!r}")
    if "schema_version" in doc and not nonblank(doc["schema_version"]):
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


def check_continuity(doc: Any, p: Problems) -> None:
    """agentclash.voice.live_continuity_eval.v1 (and its legacy alias)."""
    if not isinstance(doc, Mapping):
        p.add("", "the report must be a JSON object")
        return
    status = _check_status_report(
        doc,
        p,
        CONTINUITY_TYPE,
        CONTINUITY_NAME,
        get_args(ContinuityStatus),
    )
    metrics = doc.get("metrics")
    if "metrics" in doc and not isinstance(metrics, Mapping):
        p.add("metrics", "must be an object")
    elif isinstance(metrics, Mapping):
        ev = metrics.get("evidence_status")
        if ev not in get_args(EvidenceStatus):
            p.add("metrics.evidence_status", f"must be available or degraded, got {ev!r}")
        if status == "passed" and ev == "degraded":
            p.add("status", "cannot be passed when metrics.evidence_status is degraded")
        _check_metric_values(metrics, p, "metrics")
    _check_strings(doc, "caveats", p)
    _check_strings(doc, "agentclash_notes", p)
    if "input" in doc and not isinstance(doc["input"], str):
        p.add("input", "must be a string")


def check_separation(doc: Any, p: Problems) -> None:
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


def _check_segments(doc: Mapping[str, Any], field: str, p: Problems) -> None:
    for i, seg in enumerate(doc.get(field) or []):
        where = f"{field}[{i}]"
        if not isinstance(seg, Mapping):
            p.add(where, "must be an object")
            continue
        for k in ("start_ms", "end_ms"):
            v = seg.get(k)
            if not is_number(v) or not math.isfinite(v) or v < 0:
                p.add(f"{where}.{k}", f"must be a finite number >= 0, got {v!r}")
        s, e = seg.get("start_ms"), seg.get("end_ms")
        if is_number(s) and is_number(e) and e < s:
            p.add(where, f"end_ms {e} is before start_ms {s}")


def check_video_sync(doc: Any, p: Problems) -> None:
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
    if not nonblank(summary.get("interpretation")):
        p.add("summary.interpretation", "is required (non-empty text)")
    for k, v in summary.items():
        where = f"summary.{k}"
        if k in ("paired_segments", "missing_translation_segments", "extra_translation_segments"):
            if not is_whole(v) or v < 0:
                p.add(where, f"a count must be a whole non-negative number, got {v!r}")
        elif k.endswith("_ratio_range"):
            if not (
                isinstance(v, list) and len(v) == 2 and all(is_number(x) and x >= 0 for x in v)
            ):
                p.add(where, "must be two non-negative numbers")
            elif v[0] > v[1]:
                p.add(where, f"range is reversed: {v}")
        elif k in ("first_onset_lag_ms", "median_onset_lag_ms", "p90_onset_lag_ms", "tail_lag_ms"):
            if not is_number(v) or not math.isfinite(v):
                p.add(where, "must be a finite number")
        elif k.endswith("_ms") or k.endswith("_duration_ratio") or k == "span_duration_ratio":
            if not is_number(v) or not math.isfinite(v) or v < 0:
                p.add(where, f"must be a finite number >= 0, got {v!r}")
        elif k in ("segment_coverage_ratio", "duration_fit_score") and (
            not is_number(v) or not 0 <= v <= 1
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
            if row.get(k) is not None and (not strict_int(row[k]) or row[k] < 0):
                p.add(f"{where}.{k}", "must be a non-negative integer")
        for a, b in (
            ("source_start_ms", "source_end_ms"),
            ("translated_start_ms", "translated_end_ms"),
        ):
            s, e = row.get(a), row.get(b)
            if is_number(s) and is_number(e) and e < s:
                p.add(where, f"{b} {e} is before {a} {s}")
        for idx, seg in (
            ("source_index", "source_segments"),
            ("translated_index", "translated_segments"),
        ):
            k = row.get(idx)
            if strict_int(k) and seg in doc and k >= len(doc[seg] or []):
                p.add(f"{where}.{idx}", f"{k} is out of range for {seg}")
    for status, field in (
        ("paired", "paired_segments"),
        ("missing_translation", "missing_translation_segments"),
    ):
        if field in summary and is_whole(summary[field]) and summary[field] != counts[status]:
            p.add(
                f"summary.{field}",
                f"is {summary[field]} but pairs has {counts[status]} {status} rows",
            )


REPORT_CHECKS: dict[str, Callable[[Any, Problems], None]] = {
    "live_continuity_report_json": check_continuity,
    "media_policy_report_json": check_separation,
    "video_sync_report_json": check_video_sync,
}
