"""Running a suite's fixtures through the real pipeline: replays, live calls, transcripts.

Each task with a fixture becomes one bench row (honest evidence class per row) and one set of
scorecard dimensions. A recording is replayed (captured_fixture), a scenario is called live
against the agent (live_lane), a transcript is scored directly (local_gate). A task whose
fixture cannot run (a scenario but no agent, a failed call) is void and says why.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from turnscope import interrupts
from turnscope.actors.caller.tags import with_implied_tags
from turnscope.asr.settings import Settings
from turnscope.capture.file.source import FileSource
from turnscope.errors import InputError, TurnscopeError, UploadError
from turnscope.jsonio import read_json
from turnscope.redrive import CHANNELS
from turnscope.scoring.contract import Reference, load_reference, task_contract
from turnscope.scoring.conversation import call_conversation
from turnscope.scoring.exercise import Exercise, exercise
from turnscope.scoring.suites.bench import scored_row, void_row
from turnscope.scoring.suites.fixtures import Fixture, parse_fixture, resolve
from turnscope.scoring.suites.scorecard import TaskScores, outcome_dimensions
from turnscope.scoring.suites.turn_taking_gate import (
    result_metrics,
    synth_backchannels,
    synth_pauses,
)
from turnscope.scoring.suites.why import failure_reason
from turnscope.scoring.transcript import load_dialogue
from turnscope.scoring.turn_taking_input import BACKCHANNELS_KEY, PAUSES_KEY
from turnscope.scoring.verifier import verifier_facts
from turnscope.scoring.voice_wer import heard_in
from turnscope.scoring.wer import channel_texts
from turnscope.storage import LocalRuns, ObjectRuns

if TYPE_CHECKING:
    from turnscope.caller_llm import CallerLlm

EVIDENCE = {"replay": "captured_fixture", "live": "live_lane", "transcript": "local_gate"}
VOICE_KEY = "fixture.caller_voice"


class VoidCause(StrEnum):
    """Why a task is void: its own bad input (a fixture's file or scenario key, exit 2 for
    ``call``; a live scenario with no --agent) or anything else (a failed or degraded call, a
    lost worker)."""

    BAD_INPUT = "bad_input"
    NOT_RUN = "not_run"


@dataclass
class FixtureRun:
    row: dict[str, Any]
    scores: TaskScores
    void_cause: VoidCause | None = None  # None: the task was scored


def _reference(
    task: dict[str, Any], fx: Fixture, suite_path: Path | None, audio: Path | None = None
) -> Reference | None:
    if fx.references:
        return load_reference(resolve(suite_path, fx.references))
    if not fx.wer:  # no texts but the ASR's own: no WER; the turns still say what was planned
        turns = list(task.get("reference_dialogue") or []) or None
        return Reference({}, turns, f"task {task['id']} (no WER reference)")
    if fx.synth is not None and audio is not None:
        return load_reference(audio.with_name("reference.json"))  # exact: what was synthesized
    if task.get("reference_dialogue"):
        turns = list(task["reference_dialogue"])
        return Reference(channel_texts(turns), turns, f"task {task['id']}")
    return None


def _outcome(path: Path | None) -> dict[str, Any] | None:
    """The outcome the agent reported for a recording: ``<audio>.outcome.json`` if present."""
    if path is None:
        return None
    candidate = path.with_name(path.stem + ".outcome.json")
    return read_json(candidate, what="outcome file") if candidate.exists() else None


def _scores(
    task: dict[str, Any],
    fx: Fixture,
    row: dict[str, Any],
    wer: float | None,
    outcome: dict[str, Any] | None,
    exercised: Mapping[str, Exercise],
    reason: str = "",
) -> TaskScores:
    dims = dict(row["result"].get("components") or {})
    if wer is not None:
        dims["wer"] = round(wer, 4)
    if fx.expect is not None and outcome is not None:
        dims.update(outcome_dimensions(fx.expect.model_dump(), outcome))
    return TaskScores(
        str(task["id"]),
        list(fx.tags),
        row["verdict"],
        dims,
        row["evidence_class"],
        exercise={d: e.to_dict() for d, e in exercised.items()},
        reason=reason if row["verdict"] == "fail" else "",
        floors=dict(fx.floors or {}),
    )


CACHE = Path(".turnscope") / "fixture-cache"
# Replays at once by default: they share the one ASR worker, so more at once only fill its
# batches (benchmarks/suite_speed.py); each holds its decoded call in memory.
REPLAY_JOBS = 8


def synthesized(fx: Fixture, suite_path: Path | None) -> Path:
    """Render a synthetic fixture's recipe once into the cache (keyed by the recipe, the
    scenario's text and every file its audio is made from, the recipe's own Piper voice too: a
    noise bed, recorded line or voice file replaced in place renders again)."""
    import hashlib

    from turnscope.actors.caller.scenario_file import files_used, load_scenario, voice_named
    from turnscope.actors.caller.synth import render, write_call
    from turnscope.actors.caller.voices.spec import voice_files

    assert fx.synth is not None
    r = fx.synth
    scenario_path = resolve(suite_path, r.scenario)
    scenario = load_scenario(scenario_path)
    if scenario.caller.driver == "llm":  # its agent lines would follow each other unanswered
        raise InputError(
            "synth.scenario: caller.driver is llm, and synth asks no LLM",
            path=scenario.source,
            fix="call it live instead: audio: SCENARIO.yaml with caller_from: BUNDLE",
        )
    # a voice file is relative to the suite, as every fixture path
    voice = voice_named(r.caller_voice, resolve(suite_path, "."), "synth.caller_voice")
    h = hashlib.sha256((r.model_dump_json() + scenario_path.read_text(encoding="utf-8")).encode())
    own = voice_files(voice) if voice is not None else []
    for path in [*files_used(scenario), *own]:  # name, size and change time: a voice unread
        st = path.stat()
        h.update(f"\n{path}:{st.st_size}:{st.st_mtime_ns}".encode())
    folder = CACHE / f"{scenario_path.stem}-{h.hexdigest()[:16]}"
    if not (folder / "call.wav").exists():
        call = render(
            scenario,
            caller_voice=voice,
            agent_voice=r.agent_voice,
            snr_db=r.snr_db,
            telephone=r.telephone,
            seed=r.seed,
        )
        write_call(call, folder)
    return folder / "call.wav"


async def _redriven(
    task: dict[str, Any], fx: Fixture, suite_path: Path | None, settings: Settings
) -> Path:
    """The scenario that re-drives a ``redrive`` fixture's recording (its replay runs in a
    thread of its own: `turnscope scenario from-recording`'s own code path)."""
    from turnscope.redrive import fixture_scenario

    assert fx.redrive is not None
    where = f"task {task['id']!r} fixture"
    recording = resolve(suite_path, fx.redrive)
    return await asyncio.to_thread(
        fixture_scenario, where, fx.redrive, recording, settings, CACHE, fx.caller_channel
    )


def _void(
    task: dict[str, Any],
    fx: Fixture | None,
    kind: str,
    why: str,
    cause: VoidCause = VoidCause.NOT_RUN,
) -> FixtureRun:
    row = void_row(task, EVIDENCE.get(kind, "captured_fixture"))
    row["result"]["explanation"] = row["error"] = why
    tags = list(fx.tags) if fx else []
    scores = TaskScores(str(task["id"]), tags, "void", {}, row["evidence_class"], why)
    return FixtureRun(row, scores, cause)


def _refused(task: dict[str, Any], fx: Fixture, kind: str, exc: TurnscopeError) -> FixtureRun:
    """A task void for an error the CLI would exit with: bad input (2) is its own cause."""
    bad = exc.exit_code == InputError.exit_code
    return _void(task, fx, kind, str(exc), VoidCause.BAD_INPUT if bad else VoidCause.NOT_RUN)


def void_run(task: dict[str, Any], suite_path: Path | None, why: str) -> FixtureRun:
    """The run of a task that could not run (its fixture's own tags and kind kept)."""
    try:
        fx = parse_fixture(task, suite_path)
    except TurnscopeError:
        fx = None
    return _void(task, fx, fx.kind() if fx else "replay", why)


async def run_fixture(
    task: dict[str, Any],
    suite_path: Path | None,
    settings: Settings,
    outdir: Path,
    *,
    agent_url: str | None = None,
    loopback_only: bool = False,
    transport: str = "webrtc",
    caller_llm: CallerLlm | None = None,
) -> FixtureRun:
    """Run one task's fixture and score it against the task's own contract (``caller_llm``:
    the LLM a live scenario's LLM-driven caller asks)."""
    from turnscope.runner import run_and_record

    fx = parse_fixture(task, suite_path)
    if fx is None:
        return _void(task, None, "replay", "the task has no fixture")
    fx = with_implied_tags(fx, suite_path)  # the caller's voice and acoustics tag it too
    kind = fx.kind()
    audio: Path | None = None
    if fx.synth is not None:
        try:
            audio = synthesized(fx, suite_path)
        except TurnscopeError as exc:
            return _refused(task, fx, kind, exc)
    contract = task_contract(task, reference=_reference(task, fx, suite_path, audio))
    evidence = EVIDENCE[kind]
    if kind == "transcript":
        # No audio, no ASR: there is no WER to measure (not a perfect 0.000).
        dialogue = load_dialogue(resolve(suite_path, fx.transcript or ""))
        row = scored_row(task, dialogue, evidence)
        facts = verifier_facts(
            dialogue, budgets=contract.verifier_budgets, required_content=contract.required_content
        )
        return FixtureRun(
            row,
            _scores(
                task, fx, row, None, None, exercise(facts, contract.planned), failure_reason(facts)
            ),
        )
    try:
        audio = audio or resolve(suite_path, fx.audio or "")
        if kind == "replay":
            source = FileSource.stereo(
                audio,
                caller_channel=CHANNELS[fx.caller_channel],
                chunk_ms=max(settings.audio.chunk_ms, 200),
            )
            if fx.synth is not None:  # the pauses its caller made, as a live caller reports them
                source.info.details[PAUSES_KEY] = synth_pauses(audio) or []
                source.info.details[BACKCHANNELS_KEY] = synth_backchannels(audio)
            run = await run_and_record(
                source, settings, contract, outdir, evidence_class=evidence, console=None
            )
            outcome = _outcome(audio)
        else:
            if agent_url is None:
                why = "a live-call fixture needs --agent URL"  # a flag missing: bad input
                return _void(task, fx, kind, why, VoidCause.BAD_INPUT)
            from turnscope import transports
            from turnscope.actors.caller.scenario_contract import scenario_contract, scenario_plan
            from turnscope.actors.caller.scenario_file import load_scenario, voice_named
            from turnscope.caller_llm import suite_caller
            from turnscope.live_call import place_call

            options = transports.options(transport, agent_url, loopback_only=loopback_only)
            if fx.redrive is not None:  # a recorded caller: its scenario made once (redrive.py)
                audio = await _redriven(task, fx, suite_path, settings)
            # over the scenario's own voices; a voice file relative to the suite
            voice = voice_named(fx.caller_voice, resolve(suite_path, "."), VOICE_KEY)
            sc = load_scenario(audio, caller_voice=voice)
            pinned = resolve(suite_path, fx.caller_from) if fx.caller_from else None
            replay, llm = suite_caller(sc, pinned, caller_llm)
            # else the caller's lines, as `call` measures them by (none for a re-driven caller)
            ref = contract.reference or scenario_contract(sc).reference
            contract = dataclasses.replace(contract, plan=scenario_plan(sc), reference=ref)
            run, call, caller = await place_call(
                options,
                sc,
                settings,
                contract,
                outdir,
                console=None,
                caller_from=replay,
                caller_llm=llm,
            )
            outcome = call.info.details.get("reported_outcome")
            if not isinstance(outcome, dict):  # an agent's own report: untrusted
                outcome = None
            if outcome is None and fx.expect is not None:
                # The agent told none: the outcome as the caller saw it (result.json's
                # ``conversation``), never a guess in the agent's name.
                dialogue = run.result.assembly.dialogue()
                seen = call_conversation(caller.report(), contract, dialogue)
                outcome = seen.as_reported(fx.expect.intent) if seen is not None else None
        if run.result.degraded:  # the call's, the caller's, the pipeline's; a replay cut short
            return _void(task, fx, kind, f"degraded {'call' if kind == 'live' else 'replay'}: "
                         + "; ".join(run.result.degraded))  # fmt: skip
    except TurnscopeError as exc:
        return _refused(task, fx, kind, exc)
    except Exception as exc:  # a call that could not be set up, and the like: void, not a crash
        return _void(task, fx, kind, f"{type(exc).__name__}: {exc}")
    if run.result.channels_alike is not None:  # one recording on both channels: no evidence
        return _void(task, fx, kind, run.result.channels_alike.message())
    if run.outcome.swapped is not None:  # scored from the wrong side: no evidence either
        other = "right" if fx.caller_channel == "left" else "left"
        why = f"{run.outcome.swapped.message()}; in a suite: the fixture's caller_channel: {other}"
        return _void(task, fx, kind, why)
    row = scored_row(task, run.result.assembly.dialogue(), evidence)
    wer = run.outcome.wer.overall.wer if run.outcome.wer else None
    facts = verifier_facts(
        run.result.assembly.dialogue(),
        budgets=contract.verifier_budgets,
        required_content=contract.required_content,
    )
    scores = _scores(task, fx, row, wer, outcome, run.outcome.exercise, failure_reason(facts))
    scores.turn_taking = result_metrics(run.files.get("result"))  # issue 32's, per task
    scores.voices = heard_in(run.voices)  # how the project's ASR heard each caller voice
    return FixtureRun(row, scores)


async def run_and_publish(
    task: dict[str, Any],
    suite_path: Path | None,
    settings: Settings,
    runs: LocalRuns | ObjectRuns,
    **options: Any,
) -> FixtureRun:
    """``run_fixture`` into the task's folder of ``runs``, then the bundle published there (an
    upload that fails makes the task void, its bundle kept locally: the reason says where)."""
    from turnscope.offload import offload
    from turnscope.outdir import clear_run

    task_id = str(task["id"])
    folder = runs.folder(task_id)
    clear_run(folder)  # what an earlier attempt (a worker that died) left of it
    began = time.monotonic()
    run = await run_fixture(task, suite_path, settings, folder, **options)
    run.scores.duration_s = round(time.monotonic() - began, 3)  # JUnit's time for the task
    if isinstance(runs, ObjectRuns) and folder.exists():
        try:
            await offload(runs.publish, folder, task_id)
        except UploadError as exc:
            return void_run(task, suite_path, str(exc))
    return run


async def run_suite_fixtures(
    suite: dict[str, Any],
    suite_path: Path | None,
    settings: Settings,
    runs_dir: Path | LocalRuns | ObjectRuns,
    *,
    jobs: int | None = None,
    agent_url: str | None = None,
    loopback_only: bool = False,
    transport: str = "webrtc",
    caller_llm: CallerLlm | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[FixtureRun]:
    """Every task, at most ``jobs`` at a time (default: ``REPLAY_JOBS`` replays and one live
    call), results in suite order. The live calls go first and the replays after them: a
    replay decodes as fast as the CPU allows, and beside a live call it would make the
    caller's paced audio late (a degraded call, void) on a small machine."""
    runs = runs_dir if isinstance(runs_dir, (LocalRuns, ObjectRuns)) else LocalRuns(runs_dir)
    replays = asyncio.Semaphore(jobs or REPLAY_JOBS)
    calls = asyncio.Semaphore(jobs or 1)

    def live(task: dict[str, Any]) -> bool:
        try:
            fx = parse_fixture(task, suite_path)
        except TurnscopeError:
            return False  # it fails on its own when it runs
        return fx is not None and fx.kind() == "live"

    async def one(task: dict[str, Any]) -> FixtureRun:
        async with calls if live(task) else replays:
            if (stopped := interrupts.received()) is not None:  # Ctrl-C: no new fixture starts
                return void_run(task, suite_path, f"not run: {stopped}")
            result = await run_and_publish(
                task,
                suite_path,
                settings,
                runs,
                agent_url=agent_url,
                loopback_only=loopback_only,
                transport=transport,
                caller_llm=caller_llm,
            )
        if progress is not None:
            progress(str(task["id"]))
        return result

    tasks = list(suite.get("tasks") or [])
    done = await asyncio.gather(*(one(t) for t in tasks if live(t)))
    done += await asyncio.gather(*(one(t) for t in tasks if not live(t)))
    by_id = {r.scores.task_id: r for r in done}
    return [by_id[str(t["id"])] for t in tasks]
