"""Bundles: what turnscope writes passes its own validator and the published JSON Schemas; broken
bundles are rejected with the right message, and both validators agree wherever the schemas
can express the rule."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from pydantic import ValidationError

from tests.conftest import ROOT, SHARED, turnscope_exe
from turnscope.capture.webrtc.call import CallOptions
from turnscope.live_call import write_setup_failure
from turnscope.scoring.evidence.documents import LiveContinuityReport, Transcript, WaveformTimeline
from turnscope.scoring.evidence.manifest import Manifest
from turnscope.scoring.evidence.report_rules import check_separation, check_video_sync
from turnscope.scoring.evidence.results import (
    RawProviderTrace,
    RedactionMetadata,
    ResultDocument,
    StructuredOutput,
)
from turnscope.scoring.evidence.validate import validate_bundle

SCHEMAS = SHARED / "contracts" / "agentclash-schemas"
SAMPLE = ROOT / "recordings" / "refund-call.wav"


def schema(name: str) -> jsonschema.Validator:
    doc = json.loads((SCHEMAS / name).read_text())
    return jsonschema.Draft202012Validator(doc, format_checker=jsonschema.FormatChecker())


@pytest.fixture(scope="module")
def bundle(sample_bundle: Path) -> Path:
    """The session's sample bundle (one replay for every test module that reads it)."""
    return sample_bundle


def needs_schemas():
    if not SCHEMAS.is_dir():
        pytest.skip("../shared is not present in this checkout")


def test_written_bundle_is_valid_for_both_validators(bundle):
    assert validate_bundle(bundle) == []
    manifest = json.loads((bundle / "voice_artifact_manifest.json").read_text())
    kinds = {a["kind"] for a in manifest["artifacts"]}
    assert {
        "caller_audio",
        "agent_audio",
        "transcript_json",
        "waveform_timeline_json",
        "structured_output_json",
        "mixed_audio",
        "live_continuity_report_json",
        "raw_provider_trace_json",
        "redaction_metadata_json",
    } <= kinds
    assert all(not a["path"].startswith("/") for a in manifest["artifacts"])
    needs_schemas()
    schema("voice-artifact-manifest.schema.json").validate(manifest)
    report = json.loads((bundle / "live_continuity_report.json").read_text())
    schema("voice-live-continuity-report.schema.json").validate(report)
    timeline = json.loads((bundle / "waveform_timeline.json").read_text())
    assert {m["key"] for m in timeline["markers"]} >= {
        "speech_start",
        "speech_stop",
        "output_start",
        "barge_in",
    }
    transcript = json.loads((bundle / "transcript.json").read_text())
    assert all("turn_index" in t and "start_ms" in t for t in transcript["turns"])
    structured = json.loads((bundle / "structured_output.json").read_text())
    assert structured["output"]["verifier"]["result"]["pass_fail"]["voice"] is True
    assert structured["output"]["producer"]["transport"] == "file"


def _mutated(bundle: Path, tmp_path: Path, mutate) -> Path:
    target = tmp_path / "b"
    shutil.copytree(bundle, target)
    mpath = target / "voice_artifact_manifest.json"
    manifest = json.loads(mpath.read_text())
    report_path = target / "live_continuity_report.json"
    report = json.loads(report_path.read_text())
    mutate(manifest, report, target)
    mpath.write_text(json.dumps(manifest))
    report_path.write_text(json.dumps(report))
    if "fix_report_checksum" not in manifest.get("metadata", {}):
        # Keep the report's checksum right so only the intended problem shows.
        from turnscope.scoring.evidence.bundle import sha256_file

        for a in manifest["artifacts"]:
            if a["kind"] == "live_continuity_report_json":
                a["checksum_sha256"] = sha256_file(report_path)
                a["size_bytes"] = report_path.stat().st_size
        mpath.write_text(json.dumps(manifest))
    return target


def art(manifest, kind):
    return next(a for a in manifest["artifacts"] if a["kind"] == kind)


# (name, mutation, expected message, does the published schema also reject it?)
BROKEN = [
    (
        "bad checksum",
        lambda m, r, d: (d / "caller.wav").write_bytes(b"RIFF tampered"),
        "does not match 'caller.wav'",
        False,
    ),
    (
        "traversing path",
        lambda m, r, d: art(m, "agent_audio").update(path="a/../agent.wav"),
        "has a '..' segment",
        True,
    ),
    (
        "absolute path",
        lambda m, r, d: art(m, "agent_audio").update(path="/etc/passwd"),
        "is absolute",
        True,
    ),
    (
        "drive letter",
        lambda m, r, d: art(m, "agent_audio").update(path="C:/agent.wav"),
        "drive letter",
        True,
    ),
    (
        "duplicate key",
        lambda m, r, d: art(m, "mixed_audio").update(key="caller-audio"),
        "duplicate key 'caller-audio'",
        False,
    ),
    (
        "missing kind",
        lambda m, r, d: m["artifacts"].remove(art(m, "waveform_timeline_json")),
        "required kind 'waveform_timeline_json' is missing",
        True,
    ),
    (
        "nil uuid",
        lambda m, r, d: m.update(run_id="00000000-0000-0000-0000-000000000000"),
        "nil UUID",
        True,
    ),
    (
        "blank session",
        lambda m, r, d: m.update(voice_session_id="   "),
        "voice_session_id: must be a non-blank string",
        False,
    ),
    (
        "float size",
        lambda m, r, d: art(m, "caller_audio").update(
            size_bytes=float(art(m, "caller_audio")["size_bytes"])
        ),
        "must be a JSON integer",
        False,
    ),
    (
        "wrong size",
        lambda m, r, d: art(m, "caller_audio").update(size_bytes=12),
        "but 'caller.wav' has",
        False,
    ),
    (
        "uppercase checksum",
        lambda m, r, d: art(m, "caller_audio").update(
            checksum_sha256=art(m, "caller_audio")["checksum_sha256"].upper()
        ),
        "64 lowercase hex",
        True,
    ),
    (
        "object storage with path",
        lambda m, r, d: art(m, "mixed_audio").update(
            location="object_storage", bucket="b", object_key="k"
        ),
        "must not set path",
        True,
    ),
    (
        "wrong schema version",
        lambda m, r, d: m.update(schema_version="2025-01-01"),
        "schema_version",
        True,
    ),
    (
        "passed/status mismatch",
        lambda m, r, d: r.update(status="warn", passed=True),
        "passed must equal",
        True,
    ),
    (
        "passed with degraded evidence",
        lambda m, r, d: (
            r.update(status="passed", passed=True),
            r["metrics"].update(evidence_status="degraded"),
        ),
        "cannot be passed when metrics.evidence_status is degraded",
        True,
    ),
    (
        "ratio above 1",
        lambda m, r, d: r["metrics"].update(speech_no_output_ratio=1.5),
        "must be a number in [0, 1]",
        True,
    ),
    (
        "fractional count",
        lambda m, r, d: r["metrics"].update(speech_start_count=2.5),
        "a count must be a whole non-negative number",
        True,
    ),
    (
        "negative ms",
        lambda m, r, d: r["metrics"].update(median_first_audio_ms=-3),
        "must be a finite number >= 0",
        True,
    ),
    (
        "unknown evidence status",
        lambda m, r, d: r["metrics"].update(evidence_status="maybe"),
        "must be available or degraded",
        True,
    ),
]


@pytest.mark.parametrize(
    ("name", "mutate", "needle", "schema_rejects"), BROKEN, ids=[b[0] for b in BROKEN]
)
def test_broken_bundles_are_rejected(bundle, tmp_path, name, mutate, needle, schema_rejects):
    broken = _mutated(bundle, tmp_path, mutate)
    problems = validate_bundle(broken)
    assert any(needle in line for line in problems), problems
    needs_schemas()
    manifest = json.loads((broken / "voice_artifact_manifest.json").read_text())
    report = json.loads((broken / "live_continuity_report.json").read_text())
    schema_ok = schema("voice-artifact-manifest.schema.json").is_valid(manifest) and schema(
        "voice-live-continuity-report.schema.json"
    ).is_valid(report)
    # Where the schema expresses the rule, both validators agree; the rest only we can check.
    assert schema_ok is (not schema_rejects), name


VIDEO = {
    "schema_version": "2026-05-13",
    "type": "agentclash.voice.video_sync_eval.v1",
    "summary": {
        "status": "warn",
        "paired_segments": 1,
        "missing_translation_segments": 1,
        "segment_coverage_ratio": 0.5,
        "interpretation": "late on long turns",
        "warn_duration_ratio_range": [0.8, 1.25],
    },
    "source_segments": [{"start_ms": 0, "end_ms": 900}, {"start_ms": 1000, "end_ms": 1900}],
    "translated_segments": [{"start_ms": 400, "end_ms": 1400}],
    "pairs": [
        {
            "status": "paired",
            "source_index": 0,
            "translated_index": 0,
            "source_start_ms": 0,
            "source_end_ms": 900,
            "translated_start_ms": 400,
            "translated_end_ms": 1400,
            "onset_lag_ms": 400,
            "duration_ratio": 1.1,
        },
        {"status": "missing_translation", "source_index": 1},
    ],
}
SEPARATION = {
    "schema_version": "2026-05-13",
    "type": "agentclash.voice.source_separation_eval.v1",
    "status": "degraded",
    "passed": False,
    "metrics": {
        "dialogue_retention_ratio": 0.91,
        "background_preservation_ratio": 0.54,
        "speech_drop_risk": 0.18,
    },
}


def _problems(check, doc):
    from turnscope.scoring.evidence.rules import Problems as _Problems

    p = _Problems("report.json")
    check(doc, p)
    return p.lines


@pytest.mark.parametrize(
    ("check", "base", "schema_name", "mutate", "needle", "schema_rejects"),
    [
        (
            check_video_sync,
            VIDEO,
            "voice-video-sync-report.schema.json",
            lambda d: None,
            None,
            False,
        ),
        (
            check_video_sync,
            VIDEO,
            "voice-video-sync-report.schema.json",
            lambda d: d["summary"].pop("interpretation"),
            "interpretation",
            True,
        ),
        (
            check_video_sync,
            VIDEO,
            "voice-video-sync-report.schema.json",
            lambda d: d["summary"].update(paired_segments=2),
            "pairs has 1 paired rows",
            False,
        ),
        (
            check_video_sync,
            VIDEO,
            "voice-video-sync-report.schema.json",
            lambda d: d["summary"].update(status="passed"),
            "must be pass, warn or fail",
            True,
        ),
        (
            check_video_sync,
            VIDEO,
            "voice-video-sync-report.schema.json",
            lambda d: d["source_segments"][0].update(end_ms=-1),
            "must be a finite number",
            True,
        ),
        (
            check_video_sync,
            VIDEO,
            "voice-video-sync-report.schema.json",
            lambda d: d["summary"].update(warn_duration_ratio_range=[1.5, 0.5]),
            "reversed",
            False,
        ),
        (
            check_separation,
            SEPARATION,
            "voice-source-separation-report.schema.json",
            lambda d: None,
            None,
            False,
        ),
        (
            check_separation,
            SEPARATION,
            "voice-source-separation-report.schema.json",
            lambda d: d.update(status="warn"),
            "no warn",
            True,
        ),
        (
            check_separation,
            SEPARATION,
            "voice-source-separation-report.schema.json",
            lambda d: d.update(status="passed"),
            "must equal status",
            True,
        ),
        (
            check_separation,
            SEPARATION,
            "voice-source-separation-report.schema.json",
            lambda d: d["metrics"].pop("speech_drop_risk"),
            "speech_drop_risk",
            True,
        ),
        (
            check_separation,
            SEPARATION,
            "voice-source-separation-report.schema.json",
            lambda d: d["metrics"].update(speech_drop_risk=1.2),
            "[0, 1]",
            True,
        ),
    ],
)
def test_other_report_kinds(check, base, schema_name, mutate, needle, schema_rejects):
    doc = copy.deepcopy(base)
    mutate(doc)
    problems = _problems(check, doc)
    if needle is None:
        assert problems == []
    else:
        assert any(needle in line for line in problems), problems
    needs_schemas()
    assert schema(schema_name).is_valid(doc) is (not schema_rejects)


def test_validate_cli(bundle, tmp_path, cli):
    code, out, _ = cli("validate", str(bundle))
    assert code == 0 and "valid voice artifact bundle" in out
    broken = _mutated(bundle, tmp_path, lambda m, r, d: art(m, "agent_audio").update(key="x y"))
    (broken / "agent.wav").write_bytes(b"changed")
    code, out, _ = cli("validate", str(broken))
    assert code == 1 and "does not match 'agent.wav'" in out and "2 problem(s)" in out
    code, _, err = cli("validate", str(tmp_path / "nope"))
    assert code == 2 and "no such bundle" in err
    other = tmp_path / "other"  # a folder that neither is nor holds a bundle
    other.mkdir()
    (other / "notes.txt").write_text("x")
    code, out, _ = cli("validate", str(other))
    assert code == 1 and "not a voice artifact bundle" in out
    # Another of the bundle's files in the manifest's place is bad input naming the folder (it
    # was five schema problems and exit 1, as if the bundle were damaged).
    code, out, err = cli("validate", str(bundle / "result.json"))
    assert code == 2 and not out and "result.json: is not a bundle's manifest" in err, err
    assert f"give the bundle's folder, {bundle}" in err, err


# --- the documents' models ----------------------------------------------------------------------

MODELS = {
    "voice_artifact_manifest.json": Manifest,
    "transcript.json": Transcript,
    "result.json": ResultDocument,
    "waveform_timeline.json": WaveformTimeline,
    "structured_output.json": StructuredOutput,
    "live_continuity_report.json": LiveContinuityReport,
    "raw_provider_trace.json": RawProviderTrace,
    "redaction_metadata.json": RedactionMetadata,
}


def _round_trip(bundle: Path) -> None:
    """Each document read back through its model (strictly: no unknown key, no wrong type) and
    written again is the same bytes; reading it tolerantly repairs nothing."""
    for name, model in MODELS.items():
        text = (bundle / name).read_text(encoding="utf-8")
        doc = model.model_validate_json(text)
        again = json.dumps(doc.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"
        assert again == text, name
        repaired: list[str] = []
        assert model.read(json.loads(text), repaired) == doc and repaired == [], name


def test_every_document_round_trips_through_its_model(bundle):
    _round_trip(bundle)


def test_a_failed_set_up_writes_the_same_models_with_empty_values(tmp_path):
    options = CallOptions(url="http://127.0.0.1:9/api/offer", headers={"X-Api-Key": "k"})
    write_setup_failure(tmp_path, options, "cannot reach the agent")
    assert validate_bundle(tmp_path) == []
    _round_trip(tmp_path)
    result = ResultDocument.model_validate_json((tmp_path / "result.json").read_text())
    assert result.verdict == "error" and result.degraded == ["cannot reach the agent"]
    assert result.counts is None and result.verifier.model_dump() == {} and result.source.realtime
    assert result.turnscope_version and result.error == "cannot reach the agent"
    structured = json.loads((tmp_path / "structured_output.json").read_text())["output"]
    assert structured["continuity"]["status"] == "degraded"
    assert structured["run"]["degraded"] == ["cannot reach the agent"]
    redaction = json.loads((tmp_path / "redaction_metadata.json").read_text())
    assert [r["what"] for r in redaction["redacted"]] == ["HTTP header X-Api-Key"]
    trace = json.loads((tmp_path / "raw_provider_trace.json").read_text())
    assert "header_names" not in trace["details"] and trace["error"] == "cannot reach the agent"


def test_building_a_document_with_an_unknown_or_mistyped_field_fails():
    with pytest.raises(ValidationError):
        ResultDocument(verdict="pass", scenaro="typo")
    with pytest.raises(ValidationError):
        Transcript(turns=[{"speaker": "caller", "start_ms": "soon"}])


def test_tolerant_reading_keeps_what_is_well_formed_and_names_the_rest():
    repaired: list[str] = []
    doc = Transcript.read(
        {
            "turns": [
                {"speaker": "caller", "start_ms": "soon", "end_ms": 900, "x-extra": 1},
                "not a turn",
                {"speaker": "agent", "start_ms": 1000.5, "end_ms": 2000},
            ],
            "duration_ms": [],
            "producer_specific": {"kept": "out"},
        },
        repaired,
    )
    assert [(t.speaker, t.start_ms, t.end_ms) for t in doc.turns] == [
        ("caller", 0, 900),
        ("agent", 1000.5, 2000),
    ]
    assert doc.duration_ms == 0.0 and set(repaired) == {"start_ms", "turns", "duration_ms"}


def test_a_narrow_terminal_does_not_break_a_line_the_cli_says(bundle):
    """COLUMNS=40 (a CI log, a split pane): the path and what follows it stay on one line."""
    done = subprocess.run([*turnscope_exe(), "validate", str(bundle)], capture_output=True,
                          text=True, timeout=60, env={**os.environ, "COLUMNS": "40"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{bundle}: valid voice artifact bundle\n" in done.stdout


def test_validate_a_folder_of_bundles_checks_each(bundle, tmp_path, cli):
    """A bench run's folder (its tasks' bundles side by side): each checked, the damaged one's
    problems named by its path, a count; it said "not a voice artifact bundle", exit 1."""
    import shutil

    run = tmp_path / "bench-run"
    for name in ("task-a", "task-b"):
        shutil.copytree(bundle, run / name)
    code, out, err = cli("validate", str(run))
    assert code == 0 and f"{run}: all 2 bundles are valid" in out + err
    # a bench's -o folder: the bundles of the runs its scorecard names
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    (out_dir / "bench.scorecard.json").write_text(
        json.dumps({"kind": "turnscope.scorecard.v1", "runs": "../bench-run"})
    )
    code, out, err = cli("validate", str(out_dir))
    assert code == 0 and f"all 2 bundles are valid (in {run.resolve()})" in out + err, out + err
    (run / "task-b" / "agent.wav").write_bytes(b"changed")
    code, out, err = cli("validate", str(run))
    assert code == 1 and f"{run / 'task-b'}" in out and "does not match 'agent.wav'" in out, out
    assert "1 of 2 bundles has problems" in out + err and "the others are valid" in out + err
