"""Whether a caller's words are an acknowledgement ("mm-hmm", "yeah", "I see"): the
backchannel lexicon of turn assembly's rule 1, read against the settings' words and phrases."""

from __future__ import annotations

import re

from turnscope.asr.settings import AssemblySettings

__all__ = ["is_backchannel_text", "normalise_words"]

_WORD = re.compile(r"[a-z']+")
_REPEAT = re.compile(r"(.)\1+")


def normalise_words(text: str) -> list[str]:
    """Lowercase words, hyphens joined and letter runs collapsed, so the spellings ASR uses for
    the same sound meet: "Mm-hmm." -> ["mhm"], "Mmmm" -> ["m"], "Uh-huh" -> ["uhuh"]."""
    return [_REPEAT.sub(r"\1", w) for w in _WORD.findall(text.lower().replace("-", ""))]


def is_backchannel_text(text: str, cfg: AssemblySettings) -> bool:
    """True when the words are an acknowledgement like "mm-hmm", "yeah", "okay", "I see"."""
    # ASR often repeats a hum ("M. M. M. M."): a repeated token is one acknowledgement.
    tokens = normalise_words(text)
    words = [w for i, w in enumerate(tokens) if i == 0 or w != tokens[i - 1]]
    # Whisper opens a lone hum with a filler it did not hear ("And mm-hmm."): leading fillers
    # do not count, as long as something else is left.
    fillers = {w for entry in cfg.backchannel_fillers for w in normalise_words(entry)}
    while len(words) > 1 and words[0] in fillers:
        words = words[1:]
    if not words or len(words) > cfg.backchannel_max_words:
        return False
    phrases = {" ".join(normalise_words(p)) for p in cfg.backchannel_phrases}
    vocabulary = {w for entry in cfg.backchannel_words for w in normalise_words(entry)}
    return " ".join(words) in phrases or all(w in vocabulary for w in words)
