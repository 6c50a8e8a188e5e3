"""The context policy: which utterances are decoded after the same speaker's previous one.

A short reply decoded alone is often misheard; decoded with the speaker's previous utterance in
front (its audio heard, its text forced as the start), it is decoded as part of the conversation.
Whether context applies depends on times only, so the same audio gives the same text however
fast it arrives.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from turnscope.asr.events import Utterance
from turnscope.asr.settings import AsrSettings

if TYPE_CHECKING:
    from turnscope.asr.transcriber import Transcription


@dataclass(frozen=True)
class Context:
    """What Whisper hears just before an utterance: the speaker's previous utterance, its
    audio (with padding) and the text it was transcribed as."""

    audio: np.ndarray
    text: str


def wants_context(previous: Utterance | None, utt: Utterance, asr: AsrSettings) -> bool:
    """Whether ``utt`` is decoded after the same speaker's ``previous`` utterance: when both are
    short (at most ``context_max_ms``), close (at most ``context_gap_ms`` apart) and ``utt`` is at
    least ``context_min_ms`` long. Times only, so replay and live calls, fast or paced, decode
    every utterance the same way.

    A blip shorter than that is decoded alone: after a forced prefix Whisper's no-speech check no
    longer applies (the context is speech), and it heard a 95 ms click at 10 dB SNR as the end
    of the previous turn again ("Sorry, please go on." ... "Please go on.").

    Long utterances are decoded alone: they carry their own context, and after a forced prefix
    Whisper tiny sometimes ends a long window early (measured: a 12 s agent turn decoded as its
    first two words)."""
    return (
        previous is not None
        and asr.context_max_ms > 0
        and previous.channel == utt.channel
        and previous.duration_ms <= asr.context_max_ms
        and asr.context_min_ms <= utt.duration_ms <= asr.context_max_ms
        and utt.start_ms - previous.end_ms <= asr.context_gap_ms
    )


def context_for(
    previous: Utterance | None, heard: Transcription, utt: Utterance, asr: AsrSettings
) -> Context | None:
    """The context of ``utt`` (``wants_context``), if ``previous`` was heard as words."""
    if previous is None or not wants_context(previous, utt, asr):
        return None
    if heard.rejected or not heard.text.strip():
        return None
    return Context(previous.audio, heard.text.strip())
