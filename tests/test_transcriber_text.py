"""Text clean-up of Whisper's output (no model needed)."""

from __future__ import annotations

import pytest

from turnscope.asr.transcriber import collapse_repetition


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hi, where is my order? Hi, where is my order?", ("Hi, where is my order?", 2)),
        (
            "When will you arrive? When will you arrive? When will you arrive?",
            (
                "When will you arrive?",
                3,
            ),
        ),
        ("No, not tomorrow. no not tomorrow", ("No, not tomorrow.", 2)),
        ("no no", ("no no", 1)),  # short repeats are speech, not a decoder loop
        ("yeah yeah yeah yeah", ("yeah yeah yeah yeah", 1)),
        (
            "I need to sign for it. Do I need to sign for it?",
            (
                "I need to sign for it. Do I need to sign for it?",
                1,
            ),
        ),
        ("", ("", 1)),
    ],
)
def test_collapse_repetition(text, expected):
    assert collapse_repetition(text) == expected
