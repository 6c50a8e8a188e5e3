"""Text clean-up of Whisper's output (no model needed)."""

from __future__ import annotations

import pytest

from turnscope.asr.text import collapse_repetition, collapse_runs


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


@pytest.mark.parametrize(
    ("text", "expected", "kept"),
    [
        ("Yes, no, no, no, no, no, no, no, no, no.", "Yes, no.", [0, 9]),
        ("thank you thank you thank you thank you thank you bye", "thank you bye", [8, 9, 10]),
        ("no no no", "no no no", [0, 1, 2]),  # people do say that
        ("yeah yeah yeah yeah", "yeah yeah yeah yeah", [0, 1, 2, 3]),
        ("I said go go go go go now", "I said go now", [0, 1, 6, 7]),
        ("", "", []),
    ],
)
def test_collapse_runs(text, expected, kept):
    assert collapse_runs(text) == (expected, kept)
