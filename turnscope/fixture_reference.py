"""The WER reference of a fixture made from a captured run (`turnscope fixture add`).

What was really said, never what the ASR heard: the reference the user gives, else the one the
run was scored with (the ``--reference`` file of a replay, the scenario's lines the scripted
caller spoke, a suite's reference texts), else none: the fixture's WER is then not measured.
The ASR's own transcript as the reference would score the ASR against itself (a WER near 0 on
a call whose true WER was 0.47).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from turnscope.capture.channels import CHANNELS
from turnscope.errors import TurnscopeError
from turnscope.jsonio import read_json
from turnscope.scoring.contract import load_reference


@dataclass(frozen=True)
class FixtureReference:
    """The reference JSON to write beside the fixture (``{"caller": ..., "agent": ...}`` or a
    turn list), and where it came from, in words."""

    document: Any
    source: str


def fixture_reference(
    bundle: Path, result: Mapping[str, Any], given: Path | None = None
) -> FixtureReference | None:
    """The best reference for a fixture of ``bundle`` (its result.json as ``result``); None
    when only the ASR's own transcript exists."""
    if given is not None:
        load_reference(given)  # checked: a bad file is one line naming it
        return FixtureReference(read_json(given, what="reference file"), f"--reference {given}")
    source = str((result.get("task") or {}).get("reference_source") or "")
    if source and Path(source).is_file():
        try:
            load_reference(source)
            return FixtureReference(read_json(source, what="reference file"), source)
        except TurnscopeError:  # changed since the run: what the run was scored with, below
            pass
    spoken = _spoken_lines(result.get("script"))
    if spoken:
        return FixtureReference({"caller": spoken}, f"the caller's lines of {source}")
    if source:
        texts = _scored_texts(bundle)
        if texts:
            return FixtureReference(texts, f"{source} (as the run scored WER)")
    return None


def _spoken_lines(script: Any) -> str:
    """The scripted caller's lines it really spoke, in the order it spoke them."""
    if not isinstance(script, Mapping):
        return ""
    lines = []
    for line in script.get("lines") or []:
        sent = line.get("sent") if isinstance(line, Mapping) else None
        if (
            isinstance(sent, Mapping)
            and line.get("status") == "spoken"
            and line.get("kind") != "dtmf"
            and isinstance(sent.get("start_ms"), (int, float))
        ):
            lines.append((float(sent["start_ms"]), str(line.get("text") or "")))
    return " ".join(text for _, text in sorted(lines) if text).strip()


def _scored_texts(bundle: Path) -> dict[str, str]:
    """The reference words the run's WER was measured against (structured_output.json's word
    alignment, normalised as WER normalises them), per channel."""
    from turnscope.scoring.evidence.bundle import inside

    try:
        path = inside(bundle, "structured_output.json")
        if not path.is_file():
            return {}
        per = read_json(path, what="structured output")["output"]["wer"]["per_channel"]
        texts = {
            ch: " ".join(w for op in per[ch]["alignment"] for w in op.get("ref") or [])
            for ch in CHANNELS
            if ch in per
        }
    except (KeyError, TypeError, AttributeError, TurnscopeError):
        return {}
    return {ch: t for ch, t in texts.items() if t}
