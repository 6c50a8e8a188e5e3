"""`turnscope fixture add`: turn a captured call into a recorded fixture, so a miss found once
can never silently return."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from turnscope.cli.console import say
from turnscope.errors import InputError

if TYPE_CHECKING:
    import numpy as np

app = typer.Typer(help="Manage suite fixtures.", no_args_is_help=True)
PLAIN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# turnscope.scoring.suites.fixtures.TAGS, without importing the scoring stack for --help
# (tests/test_cli_basics.py checks the two agree)
TAGS = ("acoustic", "speaker", "language", "complexity", "conversational", "adversarial")


def _channel(path: Path) -> tuple[np.ndarray, int]:
    import soundfile as sf

    from turnscope.jsonio import native_path

    try:
        return sf.read(native_path(path), dtype="float32")
    except (sf.LibsndfileError, RuntimeError) as exc:
        raise InputError(f"unreadable audio ({exc})", path=path) from None


@app.command("add")
def add(
    bundle: Path = typer.Argument(..., help="A run folder (bundle) from call, replay or demo."),
    suite: Path = typer.Option(..., "--suite", help="The suite JSON to add the fixture to."),
    tags: str = typer.Option(..., "--tags", help=f"Comma-separated, from: {', '.join(TAGS)}."),
    task_id: str | None = typer.Option(None, "--id", help="Task id (default: the bundle name)."),
    reference: Path | None = typer.Option(
        None,
        "--reference",
        help="What was really said, for WER (default: the reference the run was scored with: a "
        "replay's --reference, a scenario's lines; without one, WER is not measured).",
    ),
) -> int:
    """Copy the call's audio next to the suite, with its WER reference and contract, as a task.

    The WER reference is never the ASR's own transcript: it is --reference, else the one the run
    was scored with; a run that had none makes a fixture whose WER is not measured (said so).
    """
    import numpy as np
    import soundfile as sf

    from turnscope import __version__
    from turnscope.fixture_reference import fixture_reference
    from turnscope.jsonio import read_json, write_bytes, write_json
    from turnscope.scoring.evidence.bundle import inside
    from turnscope.scoring.suites.suite import load_suite

    tag_list = [t.strip() for t in tags.split(",") if t.strip()]
    unknown = [t for t in tag_list if t not in TAGS]
    if not tag_list or unknown:
        raise InputError(f"--tags: unknown tag(s) {unknown or tag_list}; use {', '.join(TAGS)}")
    for name in ("caller.wav", "agent.wav", "transcript.json", "result.json"):
        if not inside(bundle, name).exists():
            raise InputError(f"not a turnscope run folder: {name} is missing", path=bundle)
    data = load_suite(suite)
    if reference is not None and not reference.is_file():
        raise InputError("no such reference file", path=reference, fix="give the reference JSON")
    if task_id is not None and not PLAIN_ID.match(task_id):
        raise InputError(
            f"--id {task_id!r} is not a plain name (letters, digits, '.', '_' and '-'; it names "
            "the fixture's files, so no path separators or '..')"
        )
    tid = task_id or re.sub(r"[^A-Za-z0-9_-]+", "-", bundle.resolve().name).strip("-")
    if not PLAIN_ID.match(tid):
        raise InputError(f"cannot make a task id from {bundle.name!r}", fix="pass --id NAME")
    if any(str(t.get("id")) == tid for t in data["tasks"]):
        raise InputError(f"task id {tid!r} is already in the suite", path=suite, fix="pass --id")
    result = read_json(bundle / "result.json", what="result")
    ref = fixture_reference(bundle, result, reference)
    caller, rate = _channel(bundle / "caller.wav")
    agent, _ = _channel(bundle / "agent.wav")
    if (result.get("source") or {}).get("details", {}).get("channels_alike"):
        raise InputError(str(result.get("error")), path=bundle, fix="add a two-channel run")
    if result.get("verdict") == "error" or not (len(caller) or len(agent)):
        raise InputError(
            "holds no usable audio (the call never connected, or captured nothing): there is "
            "nothing to replay",
            path=bundle,
            fix="add a run that captured the call",
        )
    folder = suite.parent / "fixtures"
    folder.mkdir(parents=True, exist_ok=True)
    n = max(len(caller), len(agent))
    stereo = np.zeros((n, 2), dtype=np.float32)
    stereo[: len(caller), 0], stereo[: len(agent), 1] = caller, agent
    audio = folder / f"{tid}.flac"
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
    transcript = read_json(bundle / "transcript.json", what="transcript")
    turns = [
        {k: t[k] for k in ("speaker", "start_ms", "end_ms", "text", "interrupt")}
        for t in transcript.get("turns", [])
    ]
    references = folder / f"{tid}.reference.json"
    if ref is not None:
        write_json(references, ref.document)
    task_info = result.get("task") or {}
    task = {
        "id": tid,
        "instruction": f"Captured call {bundle.name}: must keep passing.",
        "budgets": task_info.get("budgets") or {"max_latency_ms": 1200},
        "required_content": task_info.get("required_content") or [],
        "reference_dialogue": turns,
        "fixture": {
            "source": "recorded",
            "audio": f"fixtures/{audio.name}",
            **({"references": f"fixtures/{references.name}"} if ref else {"wer": False}),
            "tags": tag_list,
        },
    }
    raw = read_json(suite, what="suite file")
    raw["tasks"].append(task)
    write_json(suite, raw)
    say(f"added task {tid!r} to {suite} ({audio}, tags {', '.join(tag_list)})")
    if ref is not None:
        say(f"WER reference: {ref.source}")
    else:
        say(
            f"no WER reference for {tid!r}: the run had none (only the ASR's own transcript), so "
            "its WER is not measured; give what was said with --reference FILE"
        )
    return 0


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="fixture")
