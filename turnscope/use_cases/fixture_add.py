"""`turnscope fixture add` as a function: a captured call kept as a suite's recorded fixture (its
audio as stereo FLAC beside the suite, its WER reference and its contract), so a miss found once
can never silently return."""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from turnscope import __version__
from turnscope.errors import InputError
from turnscope.fixture_reference import FixtureReference, fixture_reference
from turnscope.jsonio import native_path, read_json, write_bytes, write_json
from turnscope.scoring.evidence.bundle import inside
from turnscope.scoring.suites.fixtures import TAGS, recorded_twin
from turnscope.scoring.suites.suite import load_suite
from turnscope.use_cases.checks import PLAIN_ID, as_path

BUNDLE_FILES = ("caller.wav", "agent.wav", "transcript.json", "result.json")


@dataclass(frozen=True)
class AddedFixture:
    """The task added: its id, the suite, the fixture's audio, its tags and where its WER
    reference came from (None: the run had none, so its WER is not measured)."""

    task_id: str
    suite: Path
    audio: Path
    tags: list[str]
    reference_source: str | None


def add_fixture(
    bundle: str | Path,
    suite: str | Path,
    tags: list[str],
    *,
    task_id: str | None = None,
    reference: str | Path | None = None,
    keep_degraded: bool = False,
) -> AddedFixture:
    """Add the run in ``bundle`` (of call, replay or demo) to ``suite`` as a recorded task
    tagged ``tags``, named ``task_id`` (default: the bundle's folder name). The WER reference
    is never the ASR's own transcript: it is ``reference``, else the one the run was scored
    with, else none (WER not measured). A run whose evidence is degraded (interrupted, lost
    audio, a caller that failed) is refused unless ``keep_degraded``: a fixture is the call a
    suite holds the agent to. InputError for bad input, before anything is written."""
    bundle, suite, reference = Path(bundle), Path(suite), as_path(reference)
    unknown = [t for t in tags if t not in TAGS]
    if not tags or unknown:
        raise InputError(f"--tags: unknown tag(s) {unknown or tags}; use {', '.join(TAGS)}")
    for name in BUNDLE_FILES:
        if not inside(bundle, name).exists():
            raise InputError(f"not a turnscope run folder: {name} is missing", path=bundle)
    data = load_suite(suite)
    if reference is not None and not reference.is_file():
        raise InputError("no such reference file", path=reference, fix="give the reference JSON")
    caller, rate = _channel(bundle / "caller.wav")
    agent, _ = _channel(bundle / "agent.wav")
    twin = recorded_twin(data, suite, caller, agent, rate)
    if twin is not None:  # said before the id, which would only suggest another --id
        raise InputError(
            f"already holds this call, as task {twin!r}: the same recording added twice",
            path=suite,
            fix=f"keep task {twin!r}, or remove it from the suite to add the call again",
        )
    tid = _task_id(bundle, task_id, data, suite)
    result = read_json(bundle / "result.json", what="result")
    ref = fixture_reference(bundle, result, reference)
    if (result.get("source") or {}).get("details", {}).get("channels_alike"):
        raise InputError(str(result.get("error")), path=bundle, fix="add a two-channel run")
    if result.get("verdict") == "error" or not (len(caller) or len(agent)):
        raise InputError(
            "holds no usable audio (the call never connected, or captured nothing): there is "
            "nothing to replay",
            path=bundle,
            fix="add a run that captured the call",
        )
    if (degraded := result.get("degraded")) and not keep_degraded:
        raise InputError(
            f"its evidence is degraded ({'; '.join(map(str, degraded))}): a fixture is the call "
            "the suite holds the agent to",
            path=bundle,
            fix="record the call again, or add it as it is with --keep-degraded",
        )
    folder = suite.parent / "fixtures"
    folder.mkdir(parents=True, exist_ok=True)
    audio = _write_audio(folder / f"{tid}.flac", caller, agent, rate)
    references = folder / f"{tid}.reference.json"
    task = _task(tid, bundle, result, audio, references, ref, tags)
    if ref is not None:
        write_json(references, ref.document)
    raw = read_json(suite, what="suite file")
    raw["tasks"].append(task)
    write_json(suite, raw)
    return AddedFixture(tid, suite, audio, tags, ref.source if ref is not None else None)


def _task_id(bundle: Path, given: str | None, data: Any, suite: Path) -> str:
    """``--id``, or one made from the bundle's name: a plain name, new in the suite."""
    if given is not None and not PLAIN_ID.match(given):
        raise InputError(
            f"--id {given!r} is not a plain name (letters, digits, '.', '_' and '-'; it names "
            "the fixture's files, so no path separators or '..')"
        )
    tid = given or re.sub(r"[^A-Za-z0-9_-]+", "-", bundle.resolve().name).strip("-")
    if not PLAIN_ID.match(tid):
        raise InputError(f"cannot make a task id from {bundle.name!r}", fix="pass --id NAME")
    if any(str(t.get("id")) == tid for t in data["tasks"]):
        raise InputError(f"task id {tid!r} is already in the suite", path=suite, fix="pass --id")
    return tid


def _channel(path: Path) -> tuple[np.ndarray, int]:
    try:
        return sf.read(native_path(path), dtype="float32")
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise InputError(f"unreadable audio ({exc})", path=path) from None


def _write_audio(audio: Path, caller: np.ndarray, agent: np.ndarray, rate: int) -> Path:
    n = max(len(caller), len(agent))
    stereo = np.zeros((n, 2), dtype=np.float32)
    stereo[: len(caller), 0], stereo[: len(agent), 1] = caller, agent
    encoded = io.BytesIO()
    try:
        with sf.SoundFile(encoded, "w", samplerate=rate, channels=2, format="FLAC") as f:
            # Says turnscope wrote it: its exact zeros between turns are an idle party
            # (asr/audio_checks.py: own_recording), not lost audio.
            f.software = f"turnscope {__version__} fixture add"
            f.write(stereo)
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise InputError(f"cannot write the fixture's audio ({exc})", path=audio) from None
    write_bytes(audio, encoded.getvalue())  # atomic, and only over a regular file
    return audio


def _task(tid: str, bundle: Path, result: dict[str, Any], audio: Path, references: Path,
          ref: FixtureReference | None, tags: list[str]) -> dict[str, Any]:  # fmt: skip
    """The suite task: the run's budgets and required content, its turns as the reference
    dialogue, and the recorded fixture."""
    transcript = read_json(bundle / "transcript.json", what="transcript")
    turns = [
        {k: t[k] for k in ("speaker", "start_ms", "end_ms", "text", "interrupt")}
        for t in transcript.get("turns", [])
    ]
    task_info = result.get("task") or {}
    return {
        "id": tid,
        "instruction": f"Captured call {bundle.name}: must keep passing.",
        "budgets": task_info.get("budgets") or {"max_latency_ms": 1200},
        "required_content": task_info.get("required_content") or [],
        "reference_dialogue": turns,
        "fixture": {
            "source": "recorded",
            "audio": f"fixtures/{audio.name}",
            **({"references": f"fixtures/{references.name}"} if ref else {"wer": False}),
            "tags": tags,
        },
    }
