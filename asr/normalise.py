"""Text normalisation shared by WER and the caller's conditions: Whisper's English normaliser
(lowercase, punctuation out, spelled numbers and British spellings unified)."""

from __future__ import annotations

from functools import lru_cache

__all__ = ["normalise"]


@lru_cache(maxsize=1)
def _normaliser():
    from whisper_normalizer.english import EnglishTextNormalizer

    return EnglishTextNormalizer()


def normalise(text: str) -> str:
    """Whisper's English normalisation (the transform WER is computed on)."""
    return " ".join(_normaliser()(text or "").split())
