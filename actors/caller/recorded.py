"""The recorded call a scenario re-drives (``recorded:``), and how a call placed with it names
it in result.json, so that the call's report can set the new call beside the recorded one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pydantic import ValidationInfo, field_validator

from turnscope.actors.caller.fields import _Strict

if TYPE_CHECKING:
    from turnscope.actors.caller.scenario import Scenario


class Recorded(_Strict):
    """The recorded call whose caller the script's lines are (``turnscope scenario
    from-recording`` writes it).

    - ``recording``: the two-channel recording the caller's clips were cut from.
    - ``bundle``: the bundle of its replay (its turns and latencies): what a call placed with
      this scenario is compared with in its report.
    - ``caller_channel``: ``left`` or ``right``, the recording's caller channel.
    - ``words``: where the caller lines' words come from: ``asr``, the recorded call's own
      transcript (no WER is measured against them: that would grade the ASR by itself), or
      ``reference``, a reference the user gave (``--reference``).

    Paths are relative to the scenario file; a missing bundle leaves the comparison out (the
    report says so), it does not stop the call.
    """

    recording: Path
    bundle: Path | None = None
    caller_channel: Literal["left", "right"] = "left"
    words: Literal["asr", "reference"] = "asr"

    @field_validator("recording", "bundle")
    @classmethod
    def _beside_scenario(cls, value: Path | None, info: ValidationInfo) -> Path | None:
        base = (info.context or {}).get("base_dir")
        if value is None or value.is_absolute() or base is None:
            return value
        return Path(base) / value


def recorded_of(scenario: Scenario) -> dict[str, Any]:
    """result.json's ``script.recorded`` (absolute paths: the call's bundle is elsewhere), or
    nothing for a scenario that re-drives no recording."""
    rec = scenario.recorded
    if rec is None:
        return {}
    return {
        "recorded": {
            "recording": str(rec.recording.resolve()),
            "bundle": str(rec.bundle.resolve()) if rec.bundle is not None else None,
            "caller_channel": rec.caller_channel,
        }
    }
