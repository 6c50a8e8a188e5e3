"""A caller's words as a person says them: fillers, a restart, a self-correction (seeded).

``spoken_text(scenario, line)`` is what the caller says for a caller line: the line's text, or
with ``dysfluency`` (the line's own, else ``caller.dysfluency``) changed by chance:
- fillers: before each word (not the first) with chance ``fillers``, one of "um", "uh",
  "you know", "like" (Whisper's normaliser drops "um" and "uh", so they cost no WER);
- a restart, with chance ``restarts``: the line's first one or two words, a dash, and the line
  ("I want- I want to return ...");
- a self-correction, with chance ``self_correction``: a number, weekday or month said wrong first
  and corrected ("four, sorry, I mean five"); a line with none of those gets a restart instead.
Random choices follow from the seed and the line's text, so a line says the same on every run,
live or synthesised; the WER reference is the spoken text (`scenario_contract.py`).
"""

from __future__ import annotations

import random
import re
import zlib
from typing import TYPE_CHECKING

from turnscope.actors.caller.acoustic_keys import Dysfluency

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Line, Scenario

FILLERS = ("um", "uh", "you know", "like")
SERIES = (
    ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"),
    ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
    (
        "january", "february", "march", "april", "may", "june", "july", "august",
        "september", "october", "november", "december",
    ),
)  # fmt: skip
_WORD = re.compile(r"[A-Za-z']+|\d+")


def dysfluency_of(scenario: Scenario, line: Line) -> Dysfluency | None:
    """The line's dysfluency settings (its own, else the caller's)."""
    own = getattr(line, "dysfluency", None)
    return own if own is not None else getattr(scenario.caller, "dysfluency", None)


def spoken_text(scenario: Scenario, line: Line) -> str:
    """What the caller says for ``line`` (its text when no dysfluency applies)."""
    d = dysfluency_of(scenario, line)
    if d is None or line.speaker != "caller" or not line.spoken or line.audio is not None:
        return line.text
    return stumble(line.text, d)


def stumble(text: str, d: Dysfluency) -> str:
    """``text`` with ``d``'s dysfluencies, chosen by ``d.seed`` and the text."""
    rng = random.Random(d.seed * 1_000_003 + zlib.crc32(text.encode("utf-8")))
    words = text.split()
    if not words:
        return text
    correct = rng.random() < d.self_correction
    restart = rng.random() < d.restarts
    if correct:
        corrected = _self_correct(words, rng)
        if corrected is None:
            restart = True
        else:
            words = corrected
    if d.fillers:
        words = [
            w if k == 0 or rng.random() >= d.fillers else f"{rng.choice(FILLERS)}, {w}"
            for k, w in enumerate(words)
        ]
    if restart and len(words) > 2:
        head = " ".join(words[: rng.choice((1, 2))]).rstrip(",.;:!?")
        words = [f"{head}-", *words]
    return " ".join(words)


def _self_correct(words: list[str], rng: random.Random) -> list[str] | None:
    """``words`` with one number, weekday or month said wrong first, then put right."""
    spots = []
    for k, w in enumerate(words):
        bare = w.strip(",.;:!?").lower()
        if bare.isdigit() or any(bare in s for s in SERIES):
            spots.append(k)
    if not spots:
        return None
    k = rng.choice(spots)
    word = words[k]
    bare = word.strip(",.;:!?")
    end = word[len(bare) :] if word.startswith(bare) else ""
    wrong = _neighbour(bare, rng)
    return [*words[:k], f"{wrong}, sorry, I mean {bare}{end}", *words[k + 1 :]]


def _neighbour(word: str, rng: random.Random) -> str:
    if word.isdigit():
        return str(int(word) + rng.choice((-1, 1)) if int(word) > 0 else int(word) + 1)
    series = next(s for s in SERIES if word.lower() in s)
    k = series.index(word.lower())
    other = series[(k + rng.choice((-1, 1))) % len(series)]
    return other.capitalize() if word[:1].isupper() else other
