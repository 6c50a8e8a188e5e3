"""Clean-up of what Whisper returns: the forced prefix cut off, decoder loops cut to one unit.

Plain functions on text (and the indices of the words they keep), so a transcription's words can
follow its text.
"""

from __future__ import annotations

import re

_MIN_REPEATED_WORDS = 3
_LOOP_RUN = 5  # a one- or two-word unit said this many times in a row is a decoder loop


def after_prefix(text: str, prefix: str) -> str:
    """Whisper's output for a window decoded after ``prefix`` without the prefix (faster-whisper
    returns the forced prefix tokens with the new ones)."""
    text, prefix = text.strip(), prefix.strip()
    if text.startswith(prefix):
        rest = text[len(prefix) :]
    else:  # not expected (the tokenizer round-trips), but never keep the previous turn's words
        rest = " ".join(text.split()[len(prefix.split()) :])
    return rest.lstrip(" ,.;:!?-")


def repeats_context(text: str, context: str) -> bool:
    """Whether ``text`` only says the end of ``context`` again (Whisper, forced to start with the
    previous turn, repeating its last words instead of hearing new ones)."""
    new, old = _norm_words(text), _norm_words(context)
    return bool(new) and len(new) <= len(old) and old[-len(new) :] == new


def _norm_words(text: str) -> list[str]:
    return [w for w in (re.sub(r"[^\w']", "", t.lower()) for t in text.split()) if w]


def collapse_repetition(text: str) -> tuple[str, int]:
    """``text`` without a decoder loop: when the whole text is one phrase of at least three words
    said k >= 2 times over ("When will it arrive? When will it arrive?"), the phrase once, and k.

    Whisper's decoder falls into such loops on short utterances (more often with a short encoder
    window and a prompt); on the benchmark corpus they were a third of the turn-level WER. A
    caller really repeating a whole multi-word sentence inside one utterance is rarer than the
    loop; short repeats ("no no", "yeah yeah") are left alone.
    """
    words = text.split()
    norm = [re.sub(r"\W", "", w.lower()) for w in words]
    n = len(words)
    for k in range(n // _MIN_REPEATED_WORDS, 1, -1):
        if n % k == 0 and all(norm[i] == norm[i % (n // k)] for i in range(n)):
            return " ".join(words[: n // k]), k
    return text, 1


def collapse_runs(text: str) -> tuple[str, list[int]]:
    """``text`` with decoder loops inside it cut to one unit ("Yes, no, no, no, no, no, no, no."
    -> "Yes, no."), and the indices of the words kept.

    Whisper tiny loops like this on noisy speech (at 10 dB SNR: 8 of an agent turn's 9 words);
    a person saying the same word five times in a row is rarer. Shorter runs ("no no no",
    "yeah yeah yeah yeah") are left alone.
    """
    words = text.split()
    norm = [re.sub(r"\W", "", w.lower()) for w in words]
    kept: list[int] = []
    i = 0
    while i < len(words):
        for unit in (1, 2):
            run = 1
            while norm[i : i + unit] == norm[i + run * unit : i + (run + 1) * unit]:
                run += 1
            if run >= _LOOP_RUN and all(norm[i : i + unit]):
                kept += range(i + (run - 1) * unit, i + run * unit)  # the last: its punctuation
                i += run * unit
                break
        else:
            kept.append(i)
            i += 1
    if len(kept) == len(words):
        return text, kept
    return " ".join(words[k] for k in kept), kept
