"""voice_artifact_manifest.json: the contract's vocabulary (artifact kinds, which are required,
the file turnscope writes for each) and the manifest's models, as documents.py describes them.

The manifest, its artifacts and its metadata are open in the contract, so another producer's
extra fields are kept when a manifest is read.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import ConfigDict, Field

from turnscope.scoring.evidence.documents import CONTRACT_VERSION, Document, omitted

SCHEMA_VERSION = CONTRACT_VERSION
MANIFEST = "voice_artifact_manifest.json"

ArtifactKind = Literal[
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
]
KINDS: tuple[str, ...] = get_args(ArtifactKind)
REQUIRED_KINDS = (
    "caller_audio",
    "agent_audio",
    "transcript_json",
    "waveform_timeline_json",
    "structured_output_json",
)
Location = Literal["local_path", "object_storage"]
LOCATIONS: tuple[str, ...] = get_args(Location)

# kind -> (file name, artifact key, content type) of the artifacts turnscope writes
FILES: dict[str, tuple[str, str, str]] = {
    "caller_audio": ("caller.wav", "caller-audio", "audio/wav"),
    "agent_audio": ("agent.wav", "agent-audio", "audio/wav"),
    "mixed_audio": ("mixed.wav", "mixed-audio", "audio/wav"),
    "transcript_json": ("transcript.json", "transcript", "application/json"),
    "waveform_timeline_json": ("waveform_timeline.json", "timeline", "application/json"),
    "structured_output_json": ("structured_output.json", "structured-output", "application/json"),
    "live_continuity_report_json": (
        "live_continuity_report.json",
        "live-continuity",
        "application/json",
    ),
    "raw_provider_trace_json": ("raw_provider_trace.json", "raw-trace", "application/json"),
    "redaction_metadata_json": ("redaction_metadata.json", "redaction", "application/json"),
}

# Files a producer writes beside the contract's artifacts; the manifest covers them too (its
# "files" list, a turnscope extension the contract allows), so editing a verdict is detected.
EXTRA_FILES = (
    "result.json",
    "bench.json",
    "report.html",
    "timeline.png",
    "agent_truth.json",
    "report-error.txt",
)


class ArtifactRef(Document):
    """One artifact: a file in the bundle (local_path) or in object storage (bucket, key)."""

    model_config = ConfigDict(extra="allow")

    key: str = ""
    kind: ArtifactKind | None = None
    location: Location = "local_path"
    path: str | None = omitted()
    bucket: str | None = omitted()
    object_key: str | None = omitted()
    content_type: str | None = omitted()
    size_bytes: int | None = omitted()
    checksum_sha256: str = ""


class FileEntry(Document):
    """A file beside the artifacts (result.json, the report ...), with its checksum."""

    path: str = ""
    size_bytes: int = 0
    checksum_sha256: str = ""


class ManifestMetadata(Document):
    """The fields the manifest schema names (strings when present); others are kept."""

    model_config = ConfigDict(extra="allow")

    provider: str | None = omitted()
    model: str | None = omitted()
    input_language: str | None = omitted()
    output_language: str | None = omitted()
    transport: str | None = omitted()
    streaming_mode: str | None = omitted()


class Manifest(Document):
    """The manifest: run and agent UUIDs, the session id, the artifacts, the producer's metadata
    and (turnscope's extension) the other files of the bundle."""

    model_config = ConfigDict(extra="allow")

    schema_version: str = SCHEMA_VERSION
    run_id: str = ""
    run_agent_id: str = ""
    voice_session_id: str = ""
    artifacts: list[ArtifactRef] = Field(default_factory=list)
    metadata: ManifestMetadata = ManifestMetadata()
    files: list[FileEntry] = Field(default_factory=list)
