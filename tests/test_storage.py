"""Bundles in object storage (`bench --runs s3://BUCKET/PREFIX`), against a real S3 API on
127.0.0.1 (moto's server): every file uploaded, the manifest naming each artifact by bucket and
object key (the contract's object_storage location) with the uploaded bytes' checksums; a bucket
that cannot be written is one line before anything runs; a failed upload keeps the bundle."""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED, free_port, regression_suite, turnscope_exe


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    """A local S3 (moto) with a bucket "evals"; the environment that reaches it."""
    port = free_port()
    server = Path(sys.executable).with_name("moto_server")
    proc = subprocess.Popen([str(server), "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    env = {
        **os.environ,
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing-secret-key",
        "AWS_DEFAULT_REGION": "us-east-1",
        "TMPDIR": str(tmp_path_factory.mktemp("scratch")),
    }
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.2)
    saved = {k: os.environ.get(k) for k in env if k.startswith("AWS_")}
    os.environ.update({k: v for k, v in env.items() if k.startswith("AWS_")})
    import fsspec

    fs = fsspec.filesystem("s3", skip_instance_cache=True)
    fs.mkdir("evals")
    yield fs, env
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def suite(tmp_path_factory) -> Path:
    return regression_suite(tmp_path_factory.mktemp("suite"), 2)


def _bench(suite: Path, env: dict, *extra: str) -> subprocess.CompletedProcess:
    cmd = [*turnscope_exe(), "bench", str(suite), "-q", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)


def test_bundles_go_to_object_storage_with_object_keys(s3, suite, tmp_path):
    fs, env = s3
    done = _bench(suite, env, "--runs", "s3://evals/nightly/run1", "-o", str(tmp_path / "r.json"))
    assert done.returncode in (0, 1), done.stderr
    tasks = [t["id"] for t in json.loads(suite.read_text())["tasks"]]
    summary = ["r.json", "r.scorecard.html", "r.scorecard.json"]  # the run's, beside its bundles
    listed = sorted(p.rsplit("/", 1)[1] for p in fs.ls("evals/nightly/run1"))
    assert listed == sorted(tasks + summary)
    assert json.loads(fs.cat("evals/nightly/run1/r.json")) == json.loads(
        (tmp_path / "r.json").read_text()
    )
    for task in tasks:
        manifest = json.loads(fs.cat(f"evals/nightly/run1/{task}/voice_artifact_manifest.json"))
        assert manifest["artifacts"]
        for a in manifest["artifacts"]:
            assert a["location"] == "object_storage" and "path" not in a
            assert a["bucket"] == "evals"
            assert a["object_key"].startswith(f"nightly/run1/{task}/")
            body = fs.cat(f"evals/{a['object_key']}")
            assert hashlib.sha256(body).hexdigest() == a["checksum_sha256"]
        if SHARED.exists():
            import jsonschema

            schema = SHARED / "contracts/agentclash-schemas/voice-artifact-manifest.schema.json"
            jsonschema.validate(manifest, json.loads(schema.read_text()))
    # the scratch copies are gone once uploaded
    assert not list(Path(env["TMPDIR"]).rglob("transcript.json"))
    assert not list(Path(env["TMPDIR"]).glob("turnscope-*"))  # nor their scratch folder
    assert "per-task bundles in s3://evals/nightly/run1" in done.stdout
    assert "testing-secret-key" not in done.stdout + done.stderr


def test_a_bucket_that_cannot_be_written_is_one_line(s3, suite):
    _, env = s3
    done = _bench(suite, env, "--runs", "s3://no-such-bucket/x")
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "cannot write to s3://no-such-bucket/x" in done.stderr
    assert not list(Path(env["TMPDIR"]).glob("turnscope-*"))  # no scratch folder left


def test_a_failed_upload_keeps_the_bundle_and_says_where(s3, tmp_path):
    from turnscope.errors import UploadError
    from turnscope.storage import ObjectRuns

    runs = ObjectRuns("s3://no-such-bucket/x", scratch=tmp_path)
    folder = runs.folder("t1")
    folder.mkdir()
    (folder / "transcript.json").write_text("{}")
    with pytest.raises(UploadError, match=f"kept in {folder}"):
        runs.publish(folder, "t1")
    assert (folder / "transcript.json").exists()
