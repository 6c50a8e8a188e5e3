"""Small sample recordings with their references (package data)."""

from __future__ import annotations

from pathlib import Path

RECORDINGS_DIR = Path(__file__).resolve().parent


def recording_path(name: str) -> Path:
    """Path of a shipped recording or reference file."""
    return RECORDINGS_DIR / name
