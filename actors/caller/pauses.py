"""Pauses inside a caller line (``pauses: [{after_words: 4, ms: 1200}]``): the caller stops
mid-thought and goes on, and the agent should wait (Full-Duplex-Bench's pause handling).

The line is spoken in pieces, one per stretch between pauses, joined by exact digital silence,
so where each pause lies in the line's audio is known to the sample: on a live call the caller
reports each pause on the call clock as it sent it (``note_sent``), and a rendered call's
truth.json lists them. An agent line may take the floor inside the caller line's pause on
purpose (``at_pause_ms``: placed there in a synthetic call, and live the reference agent's,
actors/agent/pauses.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Annotated

import numpy as np
from pydantic import Field

from turnscope.actors.caller.fields import MAX_MS, _Strict
from turnscope.actors.caller.speech import Clip
from turnscope.capture.frames import SAMPLE_RATE

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Line, Scenario
    from turnscope.capture.player import SendRecord

# Shorter is a breath between words, not a pause anyone could take the floor in.
MIN_PAUSE_MS = 200


class Pause(_Strict):
    """``after_words``: the pause follows this many of the line's words (at least one, and
    fewer than the line has); ``ms``: its length."""

    after_words: Annotated[int, Field(ge=1, le=1000)]
    ms: Annotated[int, Field(ge=MIN_PAUSE_MS, le=MAX_MS)]


def line_problem(line: Line) -> str | None:
    """``pauses...: what is wrong`` for a line whose pauses cannot be spoken as planned."""
    if line.at_pause_ms is not None and line.speaker != "agent":
        return "at_pause_ms is for agent lines (the agent taking the floor at a caller's pause)"
    if not line.pauses:
        return None
    if line.speaker != "caller" or line.choose is not None or line.kind != "line":
        return "pauses: are for a caller's own line (not an agent line, a choose:, a barge-in)"
    if line.audio is not None:
        return "pauses: a recorded line plays as recorded; put the pause in the recording"
    n = len(line.text.split())
    previous = 0
    for k, p in enumerate(line.pauses):
        if p.after_words >= n:
            return (
                f"pauses[{k}].after_words: {p.after_words} is the end of the line (it has {n} "
                "words): a pause needs words after it, else it is the end of the turn"
            )
        if p.after_words <= previous:
            return f"pauses[{k}].after_words: pauses go in order, each after more words"
        previous = p.after_words
    return None


def scenario_problem(scenario: Scenario) -> str | None:
    """``script[i]...: what is wrong`` for pauses that do not fit the scenario: one longer than
    the caller's own reply_timeout_ms (a silence it would not wait through itself), an agent's
    ``at_pause_ms`` with no caller pause before it or past its end."""
    limit = scenario.caller.reply_timeout_ms
    for i, line in enumerate(scenario.script):
        for k, p in enumerate(line.pauses or ()):
            if p.ms >= limit:
                return (
                    f"script[{i}].pauses[{k}].ms: {p.ms} ms is not shorter than "
                    f"caller.reply_timeout_ms ({limit}): a silence the caller would not wait "
                    "through itself is the end of its turn; make it shorter"
                )
        if line.at_pause_ms is None:
            continue
        before = scenario.script[i - 1] if i else None
        if before is None or not before.pauses:
            return (
                f"script[{i}].at_pause_ms: the line before it must be a caller line with "
                "pauses: (the pause the agent takes the floor in)"
            )
        if line.at_pause_ms >= before.pauses[0].ms:
            return (
                f"script[{i}].at_pause_ms: {line.at_pause_ms} ms is past the end of the "
                f"pause ({before.pauses[0].ms} ms)"
            )
    return None


def pieces(line: Line) -> list[tuple[str, int]]:
    """The line's words between pauses, each with the pause after it (0 after the last)."""
    words = line.text.split()
    cuts = [(p.after_words, p.ms) for p in line.pauses or ()]
    out, start = [], 0
    for at, ms in cuts:
        out.append((" ".join(words[start:at]), ms))
        start = at
    out.append((" ".join(words[start:]), 0))
    return out


def joined(
    line: Line, speak: Callable[[str], np.ndarray], rate: int = SAMPLE_RATE
) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """The line's audio, its pieces spoken by ``speak`` (trimmed to their voiced extent) and
    joined by silence, and each pause as (first, end) sample indices into that audio."""
    parts: list[np.ndarray] = []
    spans: list[tuple[int, int]] = []
    at = 0
    for text, ms in pieces(line):
        audio = np.asarray(speak(text), dtype=np.float32)
        parts.append(audio)
        at += audio.size
        if ms:
            gap = round(ms * rate / 1000)
            parts.append(np.zeros(gap, np.float32))
            spans.append((at, at + gap))
            at += gap
    return np.concatenate(parts), spans


def on_clock(
    spans: Sequence[tuple[int, int]], sent: SendRecord | None, rate: int = SAMPLE_RATE
) -> list[list[float]]:
    """The pauses of a line as sent, in call-clock ms; a line stopped before a pause's end did
    not make that pause."""
    if sent is None:
        return []
    out = []
    for a, b in spans:
        if sent.end is not None and sent.start + b > sent.end:
            break
        out.append(
            [round((sent.start + a) * 1000 / rate, 1), round((sent.start + b) * 1000 / rate, 1)]
        )
    return out


def note_sent(
    made: list[list[float]], spans: Sequence[tuple[int, int]], sent: SendRecord | None
) -> None:
    """Add a sent line's pauses to those the caller made (``CallerFindings.pauses``: the
    turn-taking metrics' pause events, and the live view's)."""
    made.extend(on_clock(spans, sent))


def rendered(
    line: Line, synthesize: Callable[[str], Clip], rate: int = SAMPLE_RATE
) -> tuple[Clip, list[tuple[int, int]]]:
    """A rendered call's clip of the line (``synth``): its pieces' clips (``speech.Clip``) placed
    so that each pause, from one piece's voiced end to the next one's voiced start, lasts
    exactly its ms; each pause as (first, end) samples from the clip's voiced start."""
    placed: list[tuple[int, Clip]] = []  # where each piece's audio begins in the whole
    spans: list[tuple[int, int]] = []
    after = 0  # where the next piece's voiced start goes
    for text, ms in pieces(line):
        clip = synthesize(text)
        placed.append((after - clip.start, clip))
        gap = round(ms * rate / 1000)
        if gap:
            spans.append((after + clip.end - clip.start, after + clip.end - clip.start + gap))
        after += clip.end - clip.start + gap
    shift = placed[0][1].start  # the first piece's quiet onset stays in front
    audio = np.zeros(shift + max(o + c.audio.size for o, c in placed), np.float32)
    for o, c in placed:
        audio[shift + o : shift + o + c.audio.size] += c.audio
    return Clip(audio, shift, shift + after), spans
