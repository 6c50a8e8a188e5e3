"""The one pipeline: source frames -> endpointers -> transcriber -> turn assembly -> sinks.

Every source (file replay, WebRTC call, sound device) runs through ``run_pipeline``. Data flows
one way; sinks observe (the live view, the verifier, the bundle writer, the scripted caller) and
never feed back into the stages.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from turnscope.answer_hold import AnswerHold
from turnscope.asr.assembly import Assembly, Backchannel, Heard, Said, Turn, assemble
from turnscope.asr.audio_checks import Alike, AudioChecks, channels_alike, own_recording
from turnscope.asr.context import context_for, wants_context
from turnscope.asr.endpointer import Endpointer
from turnscope.asr.events import EndOfTurn, SpeechEvent, Utterance
from turnscope.asr.settings import Settings
from turnscope.asr.transcriber import Transcriber, Transcription
from turnscope.capture.frames import AGENT, CALLER, CHANNELS, PcmFrame
from turnscope.capture.source import Source, SourceInfo
from turnscope.lost_audio import lost_audio_findings
from turnscope.reasons import Findings, assembled

FINALITY_CHECK_MS = 100.0
# The caller's lines as sent so far (call ms): what the source's own caller knows it said, read
# as the turns are assembled (an input, like the audio: never a sink's).
SaidSoFar = Callable[[], Said]


class RunNote(StrEnum):
    """What the pipeline and the runner find about a run, as counted (the words are the
    message); the source's, the audio checks' and the caller's codes are their own."""

    NO_SPEECH = "no_speech"  # one party never spoke: no evidence of turn-taking
    CHANNEL_MISSING = "channel_missing"  # no audio captured on a channel
    RECORDING_FAILED = "recording_failed"  # the channel recorder could not write
    OUTPUT_LOST = "output_folder_lost"  # the run's folder was removed or replaced
    BREAKDOWN_UNRELIABLE = "latency_breakdown_unreliable"
    REPORT_FAILED = "report_failed"  # report.html could not be made
    NOT_SCORED = "not_scored"  # the run was captured and could not be scored (a bug)
    NO_WORDS = "speech_heard_as_no_words"  # seconds of voiced audio, no turn: pairs shift


@dataclass
class TurnUpdate:
    """The assembly after new audio was understood; ``new_final`` turns will not change again."""

    assembly: Assembly
    new_final: list[Turn]
    new_backchannels: list[Backchannel]
    final_until_ms: float


class Sink:
    """Observer of the pipeline. Override what you need; every method is a no-op by default."""

    def on_start(self, info: SourceInfo, settings: Settings) -> None:
        pass

    def on_frame(self, frame: PcmFrame) -> None:
        pass

    def on_event(self, event: SpeechEvent) -> None:
        pass

    def on_transcribed(self, heard: Heard) -> None:
        pass

    def on_update(self, update: TurnUpdate) -> None:
        pass

    def on_audio_end(self) -> None:
        """The source has no more audio (its last utterances may still be transcribing)."""

    def on_finish(self, result: PipelineResult) -> None:
        pass


@dataclass
class PipelineResult:
    """Everything a run produced, for scoring, WER, reports and bundles."""

    assembly: Assembly
    heard: list[Heard]
    info: SourceInfo
    settings: Settings
    audio_ms: float
    wall_s: float
    asr_compute_s: float
    events: int
    gaps_ms: dict[str, float] = field(default_factory=dict)
    found: Findings = field(default_factory=Findings)  # the pipeline's own findings
    # The two channels hold one recording (a mono mix given as both parties): not scorable.
    channels_alike: Alike | None = None
    # What the other stages of the run found (the scripted caller's, the runner's), as the
    # runner assembles them (``add``): none of them writes into another's findings.
    stages: list[Findings] = field(default_factory=list)

    def add(self, found: Findings) -> None:
        """A stage's findings, part of the run's evidence from now on."""
        if all(found is not s for s in self.stages):
            self.stages.append(found)

    @property
    def findings(self) -> Findings:
        """Every stage's findings, in the order found: the source's (a live call's, up to the
        moment this is read), the caller's, the pipeline's and the runner's."""
        return assembled([self.info, *self.stages, self.found])

    @property
    def warnings(self) -> list[str]:
        return self.findings.warnings

    @property
    def degraded(self) -> list[str]:
        """Why the evidence is incomplete."""
        return self.findings.degraded

    @property
    def realtime_factor(self) -> float:
        """Wall time per second of call audio (lower is faster)."""
        return self.wall_s / (self.audio_ms / 1000.0) if self.audio_ms else 0.0


class _Stages:
    """The pipeline's stages while a source streams through them: the endpointers, the
    transcriptions in flight, the assembly so far, what is final."""

    def __init__(self, source: Source, settings: Settings, sinks: Sequence[Sink],
                 transcriber: Transcriber, said: SaidSoFar | None = None):  # fmt: skip
        self.source = source
        self.said = said or (lambda: ())
        self.settings = settings
        self.sinks = list(sinks)
        self.transcriber = transcriber
        self.endpointers = {
            ch: Endpointer(ch, settings.vad, settings.refine, pad_ms=settings.asr.pad_ms)
            for ch in CHANNELS
        }
        # The envelopes compare a recording's two channels (a mono mix given as both parties).
        replay = source.info.transport == "file"
        self.checks = {ch: AudioChecks(ch, envelope=replay) for ch in CHANNELS}
        # Each channel's last utterance and its transcription: the next one's context.
        self.last: dict[str, tuple[Utterance, asyncio.Future[Transcription]]] = {}
        self.heard: list[Heard] = []
        self.pending: dict[asyncio.Task, Utterance] = {}
        self.held_ms: dict[str, float] = {}  # utterance key -> how long its decode was held
        self.assembly = Assembly()
        self.final_keys: set[str] = set()
        self.final_bc: set[str] = set()
        self.last_check_ms = 0.0
        self.events = 0
        self.failure: BaseException | None = None
        self.hold = AnswerHold() if source.info.realtime else None

    def dispatch(self, events: Sequence[SpeechEvent]) -> None:
        for ev in events:
            self.events += 1
            for s in self.sinks:
                s.on_event(ev)
            if self.hold is not None:
                self.hold.heard(ev)
            if isinstance(ev, EndOfTurn):
                utt = ev.utterance
                task = asyncio.ensure_future(self.transcribe(utt, self.last.get(utt.channel)))
                self.last[utt.channel] = (utt, task)
                self.pending[task] = utt
                task.add_done_callback(self._transcribed)

    async def transcribe(
        self, utt: Utterance, previous: tuple[Utterance, asyncio.Future[Transcription]] | None
    ) -> Transcription:
        """Transcribe ``utt`` after the channel's previous utterance, with it as context when
        ``wants_context`` says so and it was heard as words (waiting for it keeps the context,
        and so the text, the same however fast the audio arrives); a live caller turn once the
        agent has begun its answer (``AnswerHold``)."""
        if self.hold is not None and utt.channel == CALLER:
            released_ms = await self.hold.wait(utt.end_ms)
            self.held_ms[utt.key] = max(0.0, released_ms - utt.decided_ms)
        context = None
        if previous is not None:
            prev_utt, prev_task = previous
            if wants_context(prev_utt, utt, self.settings.asr):
                await asyncio.wait([prev_task])
                if not prev_task.cancelled() and prev_task.exception() is None:
                    context = context_for(prev_utt, prev_task.result(), utt, self.settings.asr)
        return await self.transcriber(utt, context)

    def _transcribed(self, task: asyncio.Task) -> None:
        utt = self.pending.pop(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            self.failure = self.failure or exc
            return
        tr: Transcription = task.result()
        heard = Heard.of(utt, tr, self.held_ms.pop(utt.key, 0.0))
        self.heard.append(heard)
        for s in self.sinks:
            s.on_transcribed(heard)
        self.assembly = assemble(self.heard, self.settings.assembly, self.said())
        self.check_final(force=True)

    def position_ms(self) -> float:
        """How far the call's audio has come (either channel)."""
        return max(ep.position_ms for ep in self.endpointers.values())

    def _unfinished(self) -> list[tuple[str, float]]:
        """Where speech not yet transcribed begins (channel, ms): open utterances and those
        still being decoded (or held)."""
        starts = [(u.channel, u.start_ms) for u in self.pending.values()]
        starts += [(ch, ep.open_since_ms) for ch, ep in self.endpointers.items()
                   if ep.open_since_ms is not None]  # fmt: skip
        return starts

    def horizon_ms(self) -> float:
        """Up to where nothing more can change a turn: stream time, minus open or untranscribed
        speech, minus the merge gap a later span could still bridge."""
        t = min(ep.position_ms for ep in self.endpointers.values())
        t = min([t, *(at for _, at in self._unfinished())])
        return t - self.settings.assembly.merge_gap_ms

    def settled(self, turn: Turn) -> bool:
        """Nothing still to come can change ``turn``: no span of its speaker can join it (both
        channels are past its end by the merge gap, nothing of its speaker open or untranscribed
        within that) and all the other party began before its end is transcribed (the floor and
        the barge-in flag). The horizon waits for the other party's next utterance to end too,
        which kept every turn off the live view until the answer to it had ended."""
        gap = self.settings.assembly.merge_gap_ms
        if min(ep.position_ms for ep in self.endpointers.values()) < turn.end_ms + gap:
            return False
        return not any(
            at <= turn.end_ms + gap if ch == turn.speaker else at < turn.end_ms
            for ch, at in self._unfinished()
        )

    def check_final(self, *, force: bool = False, horizon: float | None = None) -> None:
        """Tell the sinks the turns that became final (in start order: a turn waits for those
        before it) and the backchannels; ``horizon``: everything before it is final (the end)."""
        h = self.horizon_ms() if horizon is None else horizon
        at = self.position_ms() if horizon is None else horizon
        if not force and at - self.last_check_ms < FINALITY_CHECK_MS:
            return
        self.last_check_ms = at
        new = []
        for t in self.assembly.turns:
            if t.key in self.final_keys:
                continue
            if not (t.end_ms < h or (horizon is None and self.settled(t))):
                break
            new.append(t)
        new_bc = [
            b
            for b in self.assembly.backchannels
            if b.end_ms < h and b.utterance not in self.final_bc
        ]
        if not new and not new_bc and not force:
            return
        self.final_keys.update(t.key for t in new)
        self.final_bc.update(b.utterance for b in new_bc)
        update = TurnUpdate(self.assembly, new, new_bc, h)
        for s in self.sinks:
            s.on_update(update)


def _no_words(h: Heard) -> str:
    return (
        f"the {h.channel} channel held {h.voiced_ms / 1000:.1f} s "
        f"of voiced audio at {h.start_ms / 1000:.1f}-{h.end_ms / 1000:.1f} s that the ASR heard "
        "as no words: it is no turn, so the latency and turn-taking around it pair the turns "
        "either side of it (speech drowned in noise, a language the model lacks, or no speech)"
    )


def _audio_findings(stages: _Stages, info: SourceInfo) -> Findings:
    """What is odd about each channel's audio. Exact zeros between a party's turns are an idle
    party where turnscope knows it: a live agent sends zeros while it listens, and turnscope's
    own recordings keep them; there only zeros inside a turn (or a whole call of them) count.
    A recording from elsewhere has no reason to hold any."""
    files = (info.details.get("files") or {}).values() if info.transport == "file" else ()
    own = bool(files) and all(own_recording(f) for f in files)
    out = Findings()
    for ch in CHANNELS:
        if ch in info.generated:
            continue
        idle = own or (info.transport != "file" and ch == AGENT)
        turns = [(t.start_ms, t.end_ms) for t in stages.assembly.turns if t.speaker == ch]
        bg = stages.endpointers[ch].background_db
        out.notes += stages.checks[ch].findings(bg, turns=turns if idle else None).notes
    return out


async def run_pipeline(
    source: Source,
    settings: Settings,
    sinks: Sequence[Sink] = (),
    *,
    transcriber: Transcriber | None = None,
    said: SaidSoFar | None = None,
) -> PipelineResult:
    """Run ``source`` through endpointing, ASR and turn assembly, notifying ``sinks``;
    ``said``: when the caller's lines were sent so far (a scripted call: its send records), so
    a line heard as no words is still the caller's turn (``assemble``)."""
    transcriber = transcriber or Transcriber(settings.asr, settings.confirm)
    if source.info.realtime:
        await transcriber.ready()  # a live turn must not wait for the model; at once if loaded
    else:
        # A replay endpoints while the model loads; its first utterances wait in the batcher.
        transcriber.preload()
    stages = _Stages(source, settings, sinks, transcriber, said)
    for s in stages.sinks:
        s.on_start(source.info, settings)
    t0 = time.perf_counter()
    backpressure = not source.info.realtime
    try:
        async for frame in source.frames():
            for s in stages.sinks:
                s.on_frame(frame)
            stages.checks[frame.channel].add(frame.start, frame.pcm)
            stages.dispatch(stages.endpointers[frame.channel].push(frame))
            if stages.hold is not None:
                stages.hold.advance(stages.endpointers[frame.channel].position_ms)
            stages.check_final()
            if stages.failure:
                raise stages.failure
            while backpressure and len(stages.pending) >= settings.asr.max_pending:
                await asyncio.wait(list(stages.pending), return_when=asyncio.FIRST_COMPLETED)
        for s in stages.sinks:
            s.on_audio_end()
        if stages.hold is not None:
            stages.hold.release(stages.position_ms())
        for ep in stages.endpointers.values():
            stages.dispatch(ep.flush())
        if stages.pending:
            await asyncio.wait(list(stages.pending))
        if stages.heard:
            await transcriber.ready()  # loaded: at once
        if stages.failure:
            raise stages.failure
    finally:
        for task in list(stages.pending):
            task.cancel()
    stages.assembly = assemble(stages.heard, settings.assembly, stages.said())
    stages.check_final(force=True, horizon=float("inf"))
    audio_ms = max(ep.position_ms for ep in stages.endpointers.values())
    gaps = {ch: ep.gap_ms for ch, ep in stages.endpointers.items()}
    found = _audio_findings(stages, source.info)
    lost = lost_audio_findings(
        source.info.lost, stages.assembly.turns, settings.vad.min_utterance_ms
    )
    found.notes += lost.notes
    alike = None
    if source.info.transport == "file":  # a recording: both parties' audio came from outside
        alike = channels_alike(stages.checks[CALLER], stages.checks[AGENT])
    if alike is not None:
        files = sorted({str(f) for f in (source.info.details.get("files") or {}).values()})
        found.degrade(alike.code, alike.message(", ".join(files)))
    for h in stages.assembly.wordless(stages.heard):
        found.warn(RunNote.NO_WORDS, _no_words(h))
    for ch in CHANNELS:
        if not any(h.channel == ch for h in stages.heard):
            # A call with one party silent is no evidence of turn-taking: a wrong channel or
            # file in a replay, a mute agent or a dead audio path in a call.
            found.degrade(RunNote.NO_SPEECH, f"no speech found on the {ch} channel")
    result = PipelineResult(
        assembly=stages.assembly,
        heard=sorted(stages.heard, key=lambda h: (h.start_ms, h.channel)),
        info=source.info,
        settings=settings,
        audio_ms=audio_ms,
        wall_s=time.perf_counter() - t0,
        asr_compute_s=sum(h.transcription.asr_ms for h in stages.heard) / 1000.0,
        events=stages.events,
        gaps_ms=gaps,
        found=found,
        channels_alike=alike,
    )
    for s in stages.sinks:
        s.on_finish(result)
    return result
