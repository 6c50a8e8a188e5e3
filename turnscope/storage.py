"""Where a suite's bundles go: a folder (every node reaching it at the same path), or object
storage (``s3://BUCKET/PREFIX``, ``gs://BUCKET/PREFIX`` through fsspec).

A bundle for object storage is written to a local scratch folder as usual (audio on disk as it
arrives), then uploaded under ``PREFIX/<task id>/``; its manifest then names every artifact by
the contract's ``object_storage`` location (bucket and object key, checksums unchanged), and the
scratch copy is removed. An upload that fails keeps the scratch copy and says where.
"""

from __future__ import annotations

import contextlib
import functools
import json
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turnscope import redact
from turnscope.errors import EnvironmentProblem, InputError, UploadError
from turnscope.errors import brief as one_line
from turnscope.outdir import remove_empty
from turnscope.scoring.evidence.bundle import MANIFEST

PROTOCOLS = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs"}  # the fsspec package each needs
EXTRAS = {"s3fs": "s3", "gcsfs": "gcs"}


def is_remote(where: str | Path | None) -> bool:
    return isinstance(where, str) and where.split("://", 1)[0] in PROTOCOLS and "://" in where


@dataclass
class LocalRuns:
    """Bundles in a folder: each task's own subfolder, nothing to publish."""

    root: Path
    # The folders this run made, the deepest first (``root``, then a ``runs/`` above it): left
    # empty when the run ends, they are removed.
    made: tuple[Path, ...] = ()

    def folder(self, task_id: str) -> Path:
        return self.root / task_id

    def publish(self, folder: Path, task_id: str) -> str:
        return str(folder)

    def describe(self) -> str:
        return str(self.root)

    def tidy(self) -> bool:
        """Remove the folders this run made that no task wrote a bundle in (every task void for
        bad input): no empty ``runs/bench-*`` is left. True when ``root`` was removed."""
        remove_empty(self.made)
        return not self.root.exists()


@dataclass
class ObjectRuns:
    """Bundles in object storage under ``url`` (``s3://BUCKET/PREFIX``)."""

    url: str
    scratch: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="turnscope-")))

    @property
    def bucket(self) -> str:
        return self.url.split("://", 1)[1].split("/", 1)[0]

    @property
    def prefix(self) -> str:
        rest = self.url.split("://", 1)[1]
        return rest.split("/", 1)[1].strip("/") if "/" in rest else ""

    def key(self, *parts: str) -> str:
        return "/".join(p for p in (self.prefix, *parts) if p)

    def fs(self) -> Any:
        return filesystem(self.url)

    def folder(self, task_id: str) -> Path:
        return self.scratch / task_id

    def publish(self, folder: Path, task_id: str) -> str:
        """Upload the bundle (the manifest last, naming object keys); its URL."""
        fs = self.fs()
        base = f"{self.bucket}/{self.key(task_id)}"
        try:
            if fs.exists(base):
                fs.rm(base, recursive=True)  # an earlier run's files: none may linger
            manifest = folder / MANIFEST
            doc = json.loads(manifest.read_text()) if manifest.exists() else None
            for path in sorted(folder.rglob("*")):
                rel = path.relative_to(folder).as_posix()
                if path.is_file() and rel != MANIFEST:
                    fs.put_file(str(path), f"{base}/{rel}")
            if doc is not None:
                fs.pipe_file(f"{base}/{MANIFEST}", json.dumps(self.located(doc, task_id),
                                                              indent=2).encode())  # fmt: skip
        except Exception as exc:  # credentials, a missing bucket, the network: one line
            raise _failed(f"the bundle to {self.url}/{task_id}", exc, folder) from None
        shutil.rmtree(folder, ignore_errors=True)
        return f"{self.url.rstrip('/')}/{task_id}"

    def put(self, path: Path) -> str:
        """Upload one file of the run (the result, the scorecard) under the prefix; its URL."""
        try:
            self.fs().put_file(str(path), f"{self.bucket}/{self.key(path.name)}")
        except Exception as exc:
            raise _failed(f"{self.url}/{path.name}", exc, path) from None
        return f"{self.url.rstrip('/')}/{path.name}"

    def located(self, manifest: dict[str, Any], task_id: str) -> dict[str, Any]:
        """The manifest with every local artifact named by bucket and object key."""
        out = dict(manifest)
        artifacts = []
        for a in manifest.get("artifacts") or []:
            a = dict(a)
            if a.get("location", "local_path") == "local_path" and "path" in a:
                a["location"] = "object_storage"
                a["bucket"] = self.bucket
                a["object_key"] = self.key(task_id, a.pop("path"))
            artifacts.append(a)
        out["artifacts"] = artifacts
        return out

    def describe(self) -> str:
        return self.url

    def tidy(self) -> bool:
        """Remove the scratch folder when every bundle in it was uploaded (or none was written);
        one whose upload failed stays, as said. False: the bundles are in the bucket."""
        with contextlib.suppress(OSError):
            self.scratch.rmdir()  # only an empty folder
        return False

    def check(self) -> None:
        """Write and remove a probe object, so a bucket that is missing or closed to us is one
        line before anything runs."""
        fs = self.fs()
        probe = f"{self.bucket}/{self.key('.turnscope-probe')}"
        try:
            fs.pipe_file(probe, b"turnscope")
            fs.rm(probe)
        except Exception as exc:
            if timed_out(exc):
                raise EnvironmentProblem(
                    f"cannot write to {self.url}: the store did not answer "
                    f"({redact.scrub(one_line(exc))}); check AWS_ENDPOINT_URL and the network, "
                    "or allow more time with TURNSCOPE_NETWORK_TIMEOUT_S"
                ) from None
            raise EnvironmentProblem(
                f"cannot write to {self.url} ({redact.scrub(one_line(exc))}): check the bucket "
                "name and the credentials (AWS_* / GOOGLE_APPLICATION_CREDENTIALS; "
                "AWS_ENDPOINT_URL for an S3-compatible store)"
            ) from None


def _failed(what: str, exc: Exception, kept: Path) -> UploadError:
    """The one line for an upload that failed (the store's own words, scrubbed), and where the
    local copy is."""
    return UploadError(
        f"could not upload {what} ({redact.scrub(one_line(exc))}); it is kept in {kept}"
    )


# An endpoint that takes the connection and never answers held a run silent for minutes
# (botocore's 60 s read timeout, its retries, and s3fs's own five tries of each): each wait is
# bounded and a request is tried twice (s3fs's tries; botocore's own are one each), so such an
# endpoint is one line within about a minute.
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 30.0
S3_TRIES = 2


def s3_options() -> dict[str, Any]:
    """s3fs's options: botocore's connect and read timeouts (TURNSCOPE_NETWORK_TIMEOUT_S
    replaces both), its attempts, and the session that sends uploads whole."""
    from turnscope.timeouts import network_timeout_s

    return {
        "session": _s3_session(),
        "config_kwargs": {
            "connect_timeout": network_timeout_s(CONNECT_TIMEOUT_S),
            "read_timeout": network_timeout_s(READ_TIMEOUT_S),
            "retries": {"mode": "standard", "total_max_attempts": 1},
        },
    }


@functools.lru_cache(maxsize=1)
def _s3_session() -> Any:
    """An aiobotocore session whose uploads carry no ``Expect: 100-continue``: aiohttp waits
    for the continue with no read timeout, so an endpoint that never answered held an upload
    (and the bucket check) forever. Without it the body follows the headers at once and the
    read timeout bounds the wait for the answer."""
    from aiobotocore.session import AioSession
    from botocore.handlers import add_expect_header

    session = AioSession()
    session.unregister("before-call.s3", add_expect_header)
    return session


def timed_out(exc: BaseException) -> bool:
    """Whether ``exc`` is a network wait that passed its bound (botocore's or the OS's)."""
    try:
        from botocore.exceptions import ConnectTimeoutError, ReadTimeoutError
    except ImportError:
        return isinstance(exc, TimeoutError)
    return isinstance(exc, (TimeoutError, ConnectTimeoutError, ReadTimeoutError))


def filesystem(url: str) -> Any:
    """The fsspec filesystem for ``url``'s protocol (its package missing: one line)."""
    protocol = url.split("://", 1)[0]
    package = PROTOCOLS[protocol]
    try:
        import fsspec

        if protocol != "s3":
            return fsspec.filesystem(protocol)
        fs = fsspec.filesystem(protocol, **s3_options())
        fs.retries = S3_TRIES  # s3fs's own tries (around botocore's one)
        return fs
    except ImportError:
        raise EnvironmentProblem(
            f"{protocol}:// bundles need {package}: pip install 'turnscope[{EXTRAS[package]}]'"
        ) from None


def bundle_store(where: str | Path) -> LocalRuns | ObjectRuns:
    """The store for ``--runs``: a folder, or an object-storage URL (checked)."""
    if is_remote(where):
        store = ObjectRuns(str(where))
        if not store.bucket:
            raise InputError(f"--runs {where}: no bucket", fix="give s3://BUCKET/PREFIX")
        return store
    return LocalRuns(Path(where))
