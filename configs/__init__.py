"""Shipped configuration: suites, scenarios and pipeline settings (package data)."""

from __future__ import annotations

from pathlib import Path

CONFIG_DIR = Path(__file__).resolve().parent


def config_path(*parts: str) -> Path:
    """Path of a shipped config file, e.g. ``config_path("suites", "voice_starter.json")``."""
    return CONFIG_DIR.joinpath(*parts)
