"""The reference agent: answers each caller turn with its next prompt.

It listens with the same endpointer the harness uses, speaks espeak-ng prompts (or recordings)
through a player, and logs the true times it started and stopped sending each prompt.
Behaviour knobs make it well-behaved or deliberately bad, to test the harness: response
latency, talking over the caller, yielding to barge-ins (or not), never answering, hanging up
mid-call, dropping outgoing audio frames. ``AgentCore`` is the behaviour, whatever carries the
audio; agent/session.py is a WebRTC peer around it, agent/device.py the sound-device one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np

from turnscope.actors.agent.behaviour import AgentBehaviour, AgentLine, prompt_audio
from turnscope.actors.agent.into import IntoLine
from turnscope.actors.agent.pauses import PausesHeard
from turnscope.actors.agent.prompts import Prompt, Prompts
from turnscope.actors.agent.talk_over import line_ms
from turnscope.asr.endpointer import Endpointer
from turnscope.asr.events import EndOfTurn, SpeechStart, SpeechStop
from turnscope.asr.settings import Settings
from turnscope.capture.clock import CallClock
from turnscope.capture.frames import CALLER, PcmFrame
from turnscope.capture.player import Playback, Player
from turnscope.offload import offload

WAKE_EARLY_S = 0.1  # a reply is handed to the player this much before it is due


class AgentCore:
    """The agent's ears and decisions: caller frames in (``hear``), prompts out via ``player``.

    A reply is handed to the player ``WAKE_EARLY_S`` (plus the player's ``lead_ms``) before it
    is due, with the call-clock time it is due at: the player starts it on that sample, so a
    busy event loop (many calls on one agent) does not make it late, and the configured latency
    is exact, not rounded up to the next 20 ms frame.
    """

    def __init__(
        self,
        behaviour: AgentBehaviour,
        settings: Settings,
        clock: CallClock,
        player: Player,
        hangup: Callable[[], Any],
        prompts: Prompts | None = None,
    ) -> None:
        self.behaviour = behaviour
        self.settings = settings
        self.clock = clock
        self.player = player
        self.prompts = prompts or Prompts()  # which line each clip handed to the player is
        self.hangup = hangup  # ends the call (may return an awaitable)
        self.endpointer = Endpointer(
            CALLER, self.settings.vad, self.settings.refine, pad_ms=self.settings.asr.pad_ms
        )
        self.events: list[dict[str, Any]] = []
        self.clips: list[np.ndarray] = []
        self.closed = False
        self._next_line = 0
        self._barged: set[int] = set()  # caller utterance indices the agent yielded to
        self._ignored: set[int] = set()  # caller utterances spoken over the agent, not answered
        # Barge-ins it talked through that the script answers: answered once the line ends.
        self._talked_on: set[int] = set()
        self._answered_by_talk_over = False
        self._reply: asyncio.Task | None = None
        self.caller_voiced = False  # inside a voiced span of the caller's, as the agent hears
        self._keys: asyncio.Task | None = None  # a key press turn waiting for more keys
        # Told each turn decision and start of speaking as it happens (the WebRTC session says
        # them as RTVI events, as a pipecat agent does).
        self.tell: Callable[[str], None] = lambda kind: None
        self._tasks: list[asyncio.Task] = []
        self._utt_index = 0
        self._into_heard: dict[int, int] = {}  # agent line -> caller lines heard over it
        self._pauses = PausesHeard()  # of the caller line being answered (pauses.py)
        # A reply called off if the caller goes on before it is handed to the player: one
        # taking the floor in a pause, or the answer after a planned pause that never ended.
        self._tentative: asyncio.Task | None = None
        # Talk-over lines: how long after the caller line they talk over begins they start.
        self._talk_over_at: dict[int, float] = {}
        self._held: float | None = None  # a caller's end, answered after the line said over it

    async def prepare(self) -> None:
        """Synthesise every prompt now, in a thread, never on the loop during the call (a
        blocked loop makes the outgoing audio late)."""
        self.clips = await offload(prompt_audio, self.behaviour)
        sc = self.behaviour.scenario
        over = {k: x.over_caller for k, x in enumerate(self.behaviour.lines) if x.over_caller}
        if sc is not None:  # (a talk-over comes only with the scenario it is of)
            for k, o in over.items():
                self._talk_over_at[k] = max(0.0, await offload(line_ms, sc, o) - o.before_end_ms)

    def start(self) -> None:
        """The call is up: start the clock and the timed behaviours."""
        self.clock.start()
        b = self.behaviour
        if b.greet:
            self._reply_at(b.greet_delay_ms)
        if b.hangup_after_s is not None:
            self._schedule(b.hangup_after_s, self.hangup)
        if b.silent_after_s is not None:
            self._schedule(b.silent_after_s, self.player.stop)

    @property
    def idle(self) -> bool:
        """Nothing to say now: the greeting said (if any), no reply pending, nothing playing
        or queued (a reply due at once may still come next)."""
        greeted = not self.behaviour.greet or self._next_line > 0
        return greeted and self._reply is None and self.player.idle

    @property
    def _lead_s(self) -> float:
        return self.player.lead_ms / 1000

    def _reply_at(self, at_ms: float) -> asyncio.Task:
        """Speak the next line at ``at_ms`` on the call clock."""
        delay = (at_ms - self.clock.now_ms()) / 1000 - self._lead_s - WAKE_EARLY_S
        return self._schedule(delay, lambda: self._speak_next(at_ms))

    def _schedule(self, delay_s: float, fn: Callable[[], Any]) -> asyncio.Task:
        async def later() -> None:
            await asyncio.sleep(max(0.0, delay_s))
            result = fn()
            if asyncio.iscoroutine(result):
                await result

        task = asyncio.ensure_future(later())
        self._tasks.append(task)
        return task

    # -- listening ------------------------------------------------------------------------------

    def hear(self, frame: PcmFrame) -> None:
        for ev in self.endpointer.push(frame):
            if isinstance(ev, SpeechStart):
                self._caller_resumed(ev)
            elif isinstance(ev, SpeechStop):
                self._caller_paused(ev)
            if isinstance(ev, SpeechStart) and ev.first_in_utterance:
                self._caller_started(ev)
            elif isinstance(ev, EndOfTurn):
                self._caller_finished(ev)

    def _caller_resumed(self, ev: SpeechStart) -> None:
        self.caller_voiced = True
        line = self._line()
        self._pauses.resumed(ev.at_ms, line.caller_pauses if line is not None else ())
        if self._tentative is not None:  # the caller went on before it was due
            self._tentative.cancel()
            self._tentative = self._reply = None

    def _caller_paused(self, ev: SpeechStop) -> None:
        """The caller stopped, maybe in a planned pause: the next line, when it takes the floor
        in the line's first pause, is due ``at_pause_ms`` on (unless the caller goes on first)."""
        self.caller_voiced = False
        quiet = self.player.idle
        self._pauses.stopped(ev.at_ms, quiet)
        line = self._line()
        if line is None or line.at_pause_ms is None or self.behaviour.never_answer:
            return
        if quiet and not self._pauses.heard and self._reply is None:
            self._tentative = self._reply = self._reply_at(ev.at_ms + line.at_pause_ms)

    def _line(self) -> AgentLine | None:
        lines = self.behaviour.lines
        return lines[self._next_line] if self._next_line < len(lines) else None

    def _caller_started(self, ev: SpeechStart) -> None:
        b = self.behaviour
        self._log("caller_speech_start", ev.at_ms)
        self.tell("user-started-speaking")
        current = self.player.current
        if current is not None:
            self._spoken_over(current, ev)
            return
        line = self._line()
        talk_over = None if line is None else (line.talk_over_ms or b.talk_over_ms)
        if self._next_line in self._talk_over_at:  # before the caller line's end
            talk_over = self._talk_over_at[self._next_line]
        if talk_over is not None and not b.never_answer and self._reply is None:
            self._answered_by_talk_over = True
            self._reply = self._reply_at(ev.at_ms + talk_over)

    def _spoken_over(self, current: Playback, ev: SpeechStart) -> None:
        """The caller began speaking over ``current``: a backchannel the script puts there is
        talked through (or, with backchannel_yield_ms, stopped at and answered only where the
        script answers it), as is the caller going on after a pause ``current`` was said into;
        anything else is a barge-in, yielded to after yield_ms or talked through (and answered
        after the line, where the script answers it)."""
        line = self._line_of(current)
        if line is not None and line.at_pause_ms is not None:
            return  # the caller going on after the pause this line took: talked on, as planned
        into = self._next_into(current)
        if line is not None and into is not None and into.backchannel:
            yield_ms = line.backchannel_yield_ms
            if yield_ms is None or not into.answered:
                self._ignored.add(self._utt_index)
        else:
            yield_ms = (
                None
                if line is None or line.ignore_barge_in
                else (line.yield_ms if line.yield_ms is not None else self.behaviour.yield_ms)
            )
            if yield_ms is None:
                answered = into is not None and into.answered
                (self._talked_on if answered else self._ignored).add(self._utt_index)
        if yield_ms is not None:
            elapsed = self.clock.now_ms() - ev.at_ms
            current.stop(after_ms=max(0.0, yield_ms - elapsed))
            self._barged.add(self._utt_index)
            self._log("yield", ev.at_ms + yield_ms)

    def _next_into(self, current: Playback) -> IntoLine | None:
        """The next caller line the script puts into the line ``current`` plays, if any."""
        prompt = self.prompts.of(current)
        if prompt is None or prompt.index >= len(self.behaviour.lines):
            return None
        n = self._into_heard.get(prompt.index, 0)
        self._into_heard[prompt.index] = n + 1
        into = self.behaviour.lines[prompt.index].into
        return into[n] if n < len(into) else None

    def _caller_finished(self, ev: EndOfTurn) -> None:
        b = self.behaviour
        index = self._utt_index
        self._utt_index += 1
        self._log("caller_end_of_turn", ev.at_ms, decided_ms=round(ev.decided_ms, 1))
        self.tell("user-stopped-speaking")
        if index in self._ignored or b.never_answer:
            return
        line = self._line()
        mid_line = line is not None and self._pauses.inside(line.caller_pauses)
        if self._answered_by_talk_over:  # its answer is on its way, or said over this line
            if mid_line and self._reply is not None:  # not begun: a pause, not the line's end
                self._log("caller_pause", ev.at_ms)
                return
            self._answered_by_talk_over = False
            return
        if line is not None and mid_line:
            self._log("caller_pause", ev.at_ms)  # mid-line: waited through, and if it never
            if self._reply is None:  # ends, answered once the longest planned pause is over
                at = ev.at_ms + max(line.caller_pauses) + self._latency(line)
                self._tentative = self._reply = self._reply_at(at)
            return
        if line is not None and line.at_pause_ms is not None and self._reply is None:
            self._log("no_pause_taken", ev.at_ms)  # no pause came to take the floor in
            self._next_line += 1
            line = self._line()
        if line is None or (line.follows_agent and self._reply is not None):
            return  # the line after the agent's own, already on its way
        current = self.player.current
        spoken = None if current is None else self._line_of(current)
        if current is not None and (
            index in self._talked_on or (spoken is not None and spoken.at_pause_ms is not None)
        ):
            self._held = ev.at_ms  # answered once the line said over it ends
            return
        self._reply = self._reply_at(ev.at_ms + self._latency(line))

    def keypress(self, digit: str | None, at_ms: float) -> None:
        """A key the caller pressed (a phone line). Keys end a caller turn once no more come
        for ``end_of_turn_ms``; the agent answers it as it answers speech."""
        self.events.append({"event": "dtmf", "digit": digit, "at_ms": round(at_ms, 1)})
        if self._keys is not None:
            self._keys.cancel()
        self._keys = self._schedule(
            self.behaviour.end_of_turn_ms / 1000, lambda: self._keys_done(at_ms)
        )

    def _keys_done(self, at_ms: float) -> None:
        b = self.behaviour
        self._keys = None
        line = self._line()
        if line is None or b.never_answer or self._reply is not None:
            return
        self._log("caller_keys_end", at_ms)
        latency = self._latency(line)
        self._reply = self._reply_at(at_ms + latency)

    # -- speaking -------------------------------------------------------------------------------

    def _line_of(self, playback: Playback) -> AgentLine | None:
        prompt = self.prompts.of(playback)
        if prompt is None or prompt.index >= len(self.behaviour.lines):
            return None
        return self.behaviour.lines[prompt.index]

    def _speak_next(self, at_ms: float) -> None:
        self._reply = self._tentative = None
        line = self._line()
        if line is None or self.closed:
            return
        if line.at_pause_ms is None:
            self._pauses.reset()  # answered: the caller's next line counts its own pauses
        k = self._next_line
        self._next_line += 1
        prompt = Prompt(k, line.text)
        playback = self.player.play(self.clips[k], prompt.label, at_ms)
        self.prompts.add(playback, prompt)
        # Told as its audio starts and ends, as a pipecat agent tells them (without the end,
        # every started after the first is out of order and the caller cannot trust them).
        told = False

        def started() -> None:
            nonlocal told
            if not (playback.done.done() and playback.record is None):  # not dropped unplayed
                told = True
                self.tell("bot-started-speaking")

        def stopped(_: asyncio.Future) -> None:
            if told:
                self.tell("bot-stopped-speaking")
            self._follow_on(playback)

        self._schedule((at_ms - self.clock.now_ms()) / 1000, started)
        playback.done.add_done_callback(stopped)

    def _follow_on(self, playback: Playback) -> None:
        """After a line said to its end: the next one, when it follows it in the script."""
        line, record = self._line(), playback.record
        if self._held is not None and line is not None and not self.closed:
            ended = record.end_ms if record is not None and record.end_ms is not None else 0.0
            at = max(self._held, ended) + self._latency(line)
            self._held = None
            self._reply = self._reply_at(max(at, self.clock.now_ms()))
            return
        if line is None or not line.follows_agent or self._reply is not None or self.closed:
            return
        if record is None or record.end_ms is None or record.stopped_early:
            return  # cut by a barge-in: the caller's turn is what it answers
        latency = self._latency(line)
        self._reply = self._reply_at(max(record.end_ms + latency, self.clock.now_ms()))

    def _latency(self, line: AgentLine) -> float:
        """How long after the call goes quiet ``line`` starts: its own latency, else the agent's."""
        return line.latency_ms if line.latency_ms is not None else self.behaviour.latency_ms

    def _log(self, kind: str, at_ms: float, **more: Any) -> None:
        self.events.append({"event": kind, "at_ms": round(at_ms, 1), **more})

    # -- ground truth and ending ---------------------------------------------------------------

    def truth(self, received_frames: int) -> dict[str, Any]:
        """The agent's own log: when each prompt really went out, on its clock and as monotonic
        time (comparable with the caller's clock in the same machine)."""
        origin = self.clock.origin
        utterances = []
        for rec in self.player.log:
            d = rec.to_dict()
            prompt = self.prompts.of(rec)
            d["text"] = prompt.text if prompt is not None else ""
            # Loop time is time.monotonic(): comparable with any process on this machine.
            d["start_monotonic"] = rec.start_sent_at
            d["end_monotonic"] = rec.end_sent_at
            utterances.append(d)
        return {
            "clock_origin_monotonic": origin,
            "utterances": utterances,
            "events": self.events,
            "behaviour": self.behaviour.model_dump(mode="json"),
            "received_frames": received_frames,
            "max_send_lag_ms": round(self.player.max_lag_ms, 1),
        }

    def close(self) -> None:
        """Stop speaking and every timed behaviour (but the one running this, if any)."""
        self.closed = True
        self.player.stop()
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
