"""``turnscope scenario from-recording``: a recorded call replayed into its turns, and its caller
written out as a scenario that re-drives it against an agent (actors/caller/from_recording.py).

The replay's bundle is kept in the scenario's folder (``recorded/``): a call placed with the
scenario names it in result.json and its report sets the new call beside it. A recording that
holds no call (one channel silent, or the same audio on both) is refused in one line naming the
file and the fix; the recording itself is only read.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from turnscope.actors.caller.from_recording import CLIPS, Built, write_scenario
from turnscope.asr.assembly import assemble
from turnscope.asr.settings import Settings
from turnscope.capture.frames import CALLER
from turnscope.errors import InputError
from turnscope.outdir import claim_output_dir

if TYPE_CHECKING:
    from turnscope.runner import RunOutput

RECORDED = "recorded"  # the replay's bundle, inside the scenario's folder
SCENARIO = "scenario.yaml"
CHANNELS = {"left": 0, "right": 1}
CHANNEL_FLAG = "--caller-channel"  # the command's name for it (a suite's: caller_channel)
SAME_SIGNAL = 0.98  # two channels' sample correlation from which they are one signal


@dataclass
class Redrive:
    """What ``scenario_from_recording`` made: the scenario and the recorded call's bundle."""

    folder: Path
    built: Built
    bundle: Path
    caller_turns: int
    agent_turns: int
    degraded: tuple[str, ...] = ()  # the recorded run's own, and the replay's: a partial call


def _degraded(call: Path) -> list[str]:
    """What a bundle's own result.json says degraded its evidence (a call cut short, lost
    audio): the scenario re-drives only what it captured."""
    from turnscope.jsonio import read_json

    if not (call.is_dir() and (call / "result.json").is_file()):
        return []
    doc = read_json(call / "result.json", what="result")
    return [str(d) for d in doc.get("degraded") or []] if isinstance(doc, dict) else []


def _inputs(call: Path) -> tuple[dict[str, Path], str]:
    """The replay's inputs: a stereo file, or a bundle folder's two channels."""
    if call.is_dir():
        mono = {ch: call / f"{ch}.wav" for ch in ("caller", "agent")}
        if not all(p.is_file() for p in mono.values()):
            raise InputError(
                "is a folder without caller.wav and agent.wav",
                path=call,
                fix="give a two-channel recording, or a turnscope bundle folder",
            )
        return mono, call.name
    if not call.is_file():
        raise InputError("no such recording", path=call, fix="give a two-channel recording")
    from turnscope.capture.file.decode import open_audio
    from turnscope.capture.file.health import rate_problem

    reader = open_audio(call)
    if (slow := rate_problem(reader.rate, "recording")) is not None:  # as a noise file's rule
        raise InputError(slow, path=call)
    channels = reader.channels
    if channels != 2:
        raise InputError(
            f"has {channels} channel{'s' if channels != 1 else ''}; re-driving needs the caller "
            "and the agent each on its own channel",
            path=call,
            fix="give the call's dual-channel (stereo) recording",
        )
    return {"call": call}, call.stem


def _folder(outdir: Path | None, stem: str, force: bool) -> tuple[Path, tuple[Path, ...]]:
    folder, made = claim_output_dir(outdir, f"redrive-{stem}", force=force)
    if (folder / SCENARIO).exists():
        if not force:
            raise InputError(
                "already holds a scenario", path=folder, fix="--force, or choose another -o"
            )
        shutil.rmtree(folder / CLIPS, ignore_errors=True)
    return folder, made


def _same(caller: np.ndarray, agent: np.ndarray) -> float | None:
    """The two channels' sample correlation when they are one signal (too little speech for
    the pipeline's envelope test, ``channels_alike``, to tell), else None."""
    n = min(len(caller), len(agent))
    a, b = caller[:n].astype(np.float64), agent[:n].astype(np.float64)
    den = float(np.sqrt((a * a).sum() * (b * b).sum()))
    r = float((a * b).sum() / den) if den > 0 else 0.0
    return r if r >= SAME_SIGNAL else None


def _no_call(
    run: RunOutput, caller_channel: str, caller: np.ndarray, agent: np.ndarray
) -> str | None:
    """Why the replay holds no call to re-drive (the message's body), if it does not."""
    alike = run.result.channels_alike
    r = alike.correlation if alike is not None else _same(caller, agent)
    if r is not None:
        return (
            f"both channels hold the same audio (correlation {r:.2f}): a mono mix, not two "
            "parties; give the dual-channel recording, each party on its own channel"
        )
    other = "right" if caller_channel == "left" else "left"
    for speaker in ("caller", "agent"):
        if not any(t.speaker == speaker for t in run.result.assembly.turns):
            side = caller_channel if speaker == "caller" else other
            return (
                f"no speech on the {speaker} channel ({side}): a silent or muted channel; give "
                f"the recording with both parties, or {CHANNEL_FLAG} {other} if they are "
                "the other way round"
            )
    return None


def scenario_from_recording(
    call: str | Path,
    *,
    outdir: str | Path | None = None,
    caller_channel: str = "left",
    reference: str | Path | None = None,
    settings: Settings | None = None,
    force: bool = False,
    name: str | None = None,
) -> Redrive:
    """Replay ``call`` (a two-channel recording, or a turnscope bundle folder) and write a
    scenario whose caller lines are the recorded caller's turns into ``outdir``. ``reference``:
    a reference JSON with turns, whose caller words replace the ASR's. InputError for bad
    input (nothing is written then)."""
    from turnscope import api
    from turnscope.asr.settings import load_settings
    from turnscope.outdir import forget_run
    from turnscope.scoring.contract import load_reference

    call = Path(call)
    if caller_channel not in CHANNELS:
        raise InputError(f"{CHANNEL_FLAG} must be left or right, not {caller_channel!r}")
    inputs, stem = _inputs(call)
    if "call" not in inputs and caller_channel != "left":  # said, not ignored
        raise InputError(
            f"{CHANNEL_FLAG} picks the caller's side of a two-channel recording; a bundle keeps "
            "each party in its own file (caller.wav, agent.wav)",
            path=call,
            fix=f"leave {CHANNEL_FLAG} out",
        )
    ref = load_reference(reference) if reference is not None else None
    if ref is not None and not ref.turns:
        raise InputError(
            "has no turns (the caller's words per turn)",
            path=reference,
            fix='give {"turns": [{"speaker", "start_ms", "end_ms", "text"}, ...]}',
        )
    folder, made = _folder(Path(outdir) if outdir is not None else None, stem, force)
    bundle = folder / RECORDED
    settings = settings or load_settings()
    if "call" in inputs:
        run = api.replay(
            inputs["call"],
            caller_channel=caller_channel,
            reference=reference,
            settings=settings,
            outdir=bundle,
            force=True,
        )
    else:
        run = api.replay(
            caller=inputs["caller"],
            agent=inputs["agent"],
            reference=reference,
            settings=settings,
            outdir=bundle,
            force=True,
        )
    import soundfile as sf

    caller_audio, _ = sf.read(str(bundle / "caller.wav"), dtype="float32")
    agent_audio, _ = sf.read(str(bundle / "agent.wav"), dtype="float32")
    problem = _no_call(run, caller_channel, caller_audio, agent_audio)
    if problem is not None:
        # The recording was only read: nothing of it is lost, nor anything left behind (the
        # corrected command needs no --force).
        forget_run(bundle, made=(bundle, *made))
        raise InputError(problem, path=call)
    # The recorded caller's speech the ASR heard no words of is still the caller's: re-driven
    # as its clip (the recorded bundle warns of it: its latencies there pair other turns).
    lost = [(h.start_ms, h.end_ms) for h in run.result.assembly.wordless(run.result.heard)
            if h.channel == CALLER]  # fmt: skip
    assembly = assemble(run.result.heard, settings.assembly, lost) if lost else run.result.assembly
    turns = assembly.turns
    recorded = {
        "recording": str(call.resolve()),
        "bundle": RECORDED,
        "caller_channel": caller_channel,
        "words": "reference" if ref is not None else "asr",  # the ASR's own: no WER against it
    }
    built = write_scenario(
        folder,
        name=name or f"redrive-{stem}",
        turns=turns,
        backchannels=assembly.backchannels,
        caller_audio=caller_audio,
        recorded=recorded,
        reference=ref.turns if ref is not None else None,
        description=f"The recorded caller of {call.name}, re-driven.",
    )
    from turnscope.actors.caller.scenario_file import load_scenario

    load_scenario(built.scenario)  # what was written reads back as a valid scenario
    return Redrive(
        folder=folder,
        built=built,
        bundle=bundle,
        caller_turns=sum(t.speaker == "caller" for t in turns),
        agent_turns=sum(t.speaker == "agent" for t in turns),
        degraded=tuple(dict.fromkeys([*_degraded(call), *run.result.degraded])),
    )


def _digest(recording: Path, settings: Settings, caller_channel: str) -> str:
    """What a cached re-drive depends on: the recording's bytes (a bundle folder's two channels),
    which channel is the caller, and the pipeline's settings (they decide the recorded turns)."""
    import hashlib

    h = hashlib.sha256((settings.model_dump_json() + caller_channel).encode())
    files = (
        [recording / f"{ch}.wav" for ch in ("caller", "agent")]
        if recording.is_dir()
        else [recording]
    )
    for path in files:
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    return h.hexdigest()[:16]


def fixture_scenario(
    where: str,
    value: str,
    recording: Path,
    settings: Settings,
    cache: Path,
    caller_channel: str = "left",
) -> Path:
    """The scenario re-driving a suite fixture's ``redrive`` recording (``where``: the task's
    fixture as messages name it, ``value``: the key's value as written), made once into
    ``cache`` (keyed by the recording, its caller channel and the settings). A recording that
    holds no call: one line naming the fixture key and the file (nothing is kept of it)."""
    if not (recording.is_file() or recording.is_dir()):
        raise InputError(f"{where} redrive {value!r}: no such recording ({recording})")
    digest = _digest(recording, settings, caller_channel)
    folder = cache / f"redrive-{recording.stem}-{digest}"
    if (folder / SCENARIO).is_file():
        return folder / SCENARIO
    try:
        made = scenario_from_recording(
            recording, outdir=folder, caller_channel=caller_channel, settings=settings, force=True
        )
    except InputError as exc:
        problem = str(exc)
        prefix = f"{recording}: "
        problem = problem[len(prefix) :] if problem.startswith(prefix) else problem
        # A suite names the channel with the fixture's key, not the command's flag.
        problem = problem.replace(f"{CHANNEL_FLAG} ", "the fixture's caller_channel: ")
        raise InputError(f"{where} redrive {value!r}: {problem}") from None
    return made.built.scenario
