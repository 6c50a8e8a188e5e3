"""How the project's own ASR heard each caller voice of a call: the WER of its words over the
lines it spoke (result.json's ``script.voices[].asr``). An agent that misunderstood a robot voice
its own recogniser also mishears is measuring the voice, not the agent: this says how much.

Each caller turn is given to the spoken line whose send record it overlaps most (a turn never
counts twice); a line heard as no turn scores every word deleted.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from turnscope.scoring.wer import pooled, score_words

__all__ = [
    "VoiceAcross",
    "VoiceHeard",
    "counted",
    "heard_at",
    "heard_in",
    "pool_voices",
    "voice_label",
    "voice_line",
    "voices_heard",
]


class VoiceHeard(BaseModel):
    """How the project's ASR heard one caller voice's lines in one call."""

    voice: str  # engine and name: "piper joe-us"
    wer: float
    words: int  # its lines' reference words


class VoiceAcross(BaseModel):
    """One caller voice over several calls (a load run's, a suite tag's): the project's ASR
    WER pooled over its words."""

    voice: str
    wer: float
    words: int
    calls: int


def _placed(record: Mapping[str, Any]) -> bool:
    """A line spoken with its send record's extent (a DTMF line, or one cut off before its
    end was known, has none)."""
    sent = record.get("sent")
    return (
        record.get("status") == "spoken"
        and isinstance(record.get("line"), int)
        and isinstance(sent, Mapping)
        and all(isinstance(sent.get(k), int | float) for k in ("start_ms", "end_ms"))
    )


def _overlap(turn: Mapping[str, Any], sent: Mapping[str, Any]) -> float:
    lo = max(float(turn["start_ms"]), float(sent["start_ms"]))
    return min(float(turn["end_ms"]), float(sent["end_ms"])) - lo


def _heard_lines(
    lines: Mapping[int, Mapping[str, Any]], dialogue: Sequence[Mapping[str, Any]]
) -> dict[int, str]:
    """Per spoken line, the text of the caller turns heard over its send record."""
    heard: dict[int, list[str]] = {}
    for turn in dialogue:
        if turn.get("speaker") != "caller" or not lines:
            continue
        best = max(lines, key=lambda i: _overlap(turn, lines[i]["sent"]))
        if _overlap(turn, lines[best]["sent"]) > 0:
            heard.setdefault(best, []).append(str(turn.get("text") or ""))
    return {i: " ".join(texts) for i, texts in heard.items()}


def voices_heard(
    script: Mapping[str, Any], dialogue: Sequence[Mapping[str, Any]], model: str
) -> dict[str, Any]:
    """``script`` with each voice that spoke a line given ``asr``: the ASR ``model``, the WER
    pooled over its spoken lines, their reference words and how many lines."""
    lines = {int(r["line"]): r for r in script.get("lines") or [] if _placed(r)}
    heard = _heard_lines(lines, dialogue)
    voices = []
    for voice in script.get("voices") or []:
        # a re-driven caller's clips carry the recorded ASR's words: never graded by it
        graded = voice.get("words") != "asr"
        spoken = [i for i in voice.get("lines") or [] if i in lines and graded]
        scores = [score_words(str(lines[i].get("text") or ""), heard.get(i, "")) for i in spoken]
        total = pooled(scores)
        if spoken and total.wer is not None:
            voice = {
                **voice,
                "asr": {
                    "model": model,
                    "wer": round(total.wer, 4),
                    "reference_words": total.reference_words,
                    "lines": len(spoken),
                },
            }
        voices.append(voice)
    return {**script, "voices": voices}


def voice_label(voice: Mapping[str, Any]) -> str:
    """A voice of result.json's ``script.voices`` as the pages name it: "piper joe-us",
    "espeak-ng en-gb", "recorded" (a line's own clip has no name)."""
    return f"{voice.get('engine', '')} {voice.get('name', '')}".strip()


def heard_in(voices: Iterable[Mapping[str, Any]]) -> list[VoiceHeard]:
    """The voices of result.json's ``script.voices`` that the ASR heard (``voices_heard``)."""
    return [
        VoiceHeard(voice=voice_label(v), wer=v["asr"]["wer"], words=v["asr"]["reference_words"])
        for v in voices
        if isinstance(v.get("asr"), Mapping)
    ]


def pool_voices(heard: Iterable[VoiceHeard]) -> list[VoiceAcross]:
    """Each voice's WER pooled over the calls that used it (errors / words)."""
    errors: dict[str, float] = {}
    words: dict[str, int] = {}
    calls: dict[str, int] = {}
    for v in heard:
        # a call's errors are whole words: its WER was rounded to 4 places, its count is exact
        errors[v.voice] = errors.get(v.voice, 0.0) + round(v.wer * v.words)
        words[v.voice] = words.get(v.voice, 0) + v.words
        calls[v.voice] = calls.get(v.voice, 0) + 1
    return [
        VoiceAcross(voice=k, wer=round(errors[k] / words[k], 4), words=words[k], calls=calls[k])
        for k in sorted(words)
        if words[k]
    ]


def counted(n: int, noun: str) -> str:
    """``1 line``, ``2 lines``."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def heard_at(wer: float, words: int) -> str:
    """A voice's WER as said: a WER, not a share misheard (its insertions can take it past 1)."""
    return f"WER {wer:.3f} over its {counted(words, 'word')}"


def voice_line(v: VoiceAcross, over: str = "call") -> str:
    """One caller voice over a load run's calls (``over`` "call") or a suite tag's tasks."""
    return (
        f"caller voice {v.voice}: the project's ASR heard it at {heard_at(v.wer, v.words)} "
        f"in {counted(v.calls, over)}"
    )
