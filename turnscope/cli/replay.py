"""`turnscope replay`: run a recorded call through the pipeline and score it."""

from __future__ import annotations

from pathlib import Path

import typer

from turnscope.cli.closing import report_replay
from turnscope.cli.console import out
from turnscope.cli.help import ASR, OUTPUT, SCORING, groups
from turnscope.cli.options import PipelineOptions, number
from turnscope.errors import InputError

_CHANNEL = {"left": 0, "right": 1, "0": 0, "1": 1}


def replay(
    call: Path | None = typer.Argument(None, help="Stereo recording (left = caller by default)."),
    caller: Path | None = typer.Option(None, "--caller", help="Mono recording of the caller."),
    agent: Path | None = typer.Option(None, "--agent", help="Mono recording of the agent."),
    agent_offset_ms: float = typer.Option(
        0.0,
        "--agent-offset-ms",
        help="Shift the agent recording by this much (two mono files).",
        callback=number(-3_600_000, 3_600_000),
    ),
    caller_channel: str = typer.Option(
        "left", "--caller-channel", help="Which side of the stereo file is the caller."
    ),
    reference: Path | None = typer.Option(None, "--reference", help="Reference texts for WER."),
    suite: Path | None = typer.Option(
        None, "--suite", help="Score against this suite's task (a path or a shipped suite's name)."
    ),
    task: str | None = typer.Option(None, "--task", help="Task id in --suite."),
    max_latency_ms: int | None = typer.Option(
        None,
        "--max-latency-ms",
        help="Latency budget in ms (default: the suite task's, else 1200).",
        callback=number(0, 600_000, above=True),
    ),
    require: list[str] = typer.Option([], "--require", help="Required content keyword."),
    output: Path | None = typer.Option(None, "-o", "--output", help="Output folder."),
    force: bool = typer.Option(False, "--force", help="Replace the run already in the -o folder."),
    realtime: bool = typer.Option(False, "--realtime", help="Pace audio at wall-clock speed."),
    settings_file: Path | None = typer.Option(None, "--settings", help="Settings YAML."),
    model: str | None = typer.Option(None, "--model", help="tiny.en (bundled) or a model folder."),
    compute_type: str | None = typer.Option(
        None,
        "--compute-type",
        help="CTranslate2 compute type of the ASR model: int8 (default on CPU), int8_float32, "
        "float32, float16 (GPU).",
    ),
    beam_size: int | None = typer.Option(
        None,
        "--beam-size",
        help="ASR beam search width, 1-20 (1: greedy, fastest).",
        callback=number(1, 20),
    ),
    threads: int | None = typer.Option(
        None, "--threads", help="CPU threads for ASR.", callback=number(0, 256)
    ),
    words: bool | None = typer.Option(None, "--words/--no-words", help="Word timestamps."),
    aggressiveness: int | None = typer.Option(
        None,
        "--vad-aggressiveness",
        min=0,
        max=3,
        help="webrtcvad aggressiveness, 0-3 (3 drops the most noise, and some quiet speech).",
    ),
    frame_ms: int | None = typer.Option(None, "--frame-ms", help="webrtcvad frame: 10, 20, 30."),
    silero: bool | None = typer.Option(None, "--silero/--no-silero", help="Silero second opinion."),
    agent_trace: Path | None = typer.Option(
        None,
        "--agent-trace",
        help="The agent's own event log for this call (JSON lines), to split each reply's "
        "latency; aligned by its first start of speaking.",
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No live turn view."),
) -> int:
    """Replay a recorded call: turns as they complete, then WER and the verifier's verdict."""
    if agent_trace is not None and not agent_trace.is_file():
        raise InputError("no such agent trace", path=agent_trace, fix="give the agent's log")
    if caller_channel not in _CHANNEL:
        raise InputError(f"--caller-channel must be left or right, not {caller_channel!r}")
    settings = PipelineOptions(settings_file, model, compute_type, beam_size, threads, words,
                               aggressiveness, frame_ms, silero).settings()  # fmt: skip
    if all(p.is_file() for p in (call, caller, agent) if p is not None):
        # The ASR worker starts and loads its model while this process imports the rest.
        from turnscope.asr.transcriber import Transcriber

        Transcriber(settings.asr, settings.confirm).preload()
    from turnscope import api
    from turnscope.configs import resolve

    run = api.replay(
        call,
        caller=caller,
        agent=agent,
        caller_channel=_CHANNEL[caller_channel],
        agent_offset_ms=agent_offset_ms,
        reference=reference,
        suite=None if suite is None else resolve("suites", suite),
        task=task,
        max_latency_ms=max_latency_ms,
        require=require,
        settings=settings,
        outdir=output,
        force=force,
        realtime=realtime,
        console=None if quiet else out,
        agent_trace=agent_trace,
    )
    return report_replay(run, model=settings.asr.model)


groups(
    replay,
    {
        "Recording": "caller agent agent_offset_ms caller_channel realtime",
        SCORING: "reference suite task max_latency_ms require agent_trace",
        ASR: "settings_file model compute_type beam_size threads words aggressiveness frame_ms "
        "silero",
        OUTPUT: "output force quiet",
    },
)


def register(app: typer.Typer) -> None:
    app.command("replay", short_help="Replay a recorded call through the pipeline; score it.")(
        replay
    )
