"""A recorded call's caller as a scenario: each caller turn its own clip, spoken when the
recorded caller spoke it (``turnscope scenario from-recording``; the replay that finds the turns
is turnscope/redrive.py).

Per caller turn, in call order:
- after an agent turn: ``reply_gap_ms``, the gap the caller left after the agent's voice stopped;
- a barge-in (an interrupting turn): ``barge_in_ms``, as far into the agent's turn as it was;
- after a barge-in the agent talked through: ``reply_gap_ms`` after that turn's end;
- a caller turn after the caller's own: ``after_agent_ms`` from the end of that one (the caller
  line before it); the first line, before anyone spoke: ``at_ms``.
A caller backchannel inside an agent turn is a ``backchannel_ms`` line. Each agent turn is an
agent line with its words and the latency it replied with (what ``turnscope agent`` and ``synth``
play); the agent's turns after the caller's last are left out, and the caller hangs up as long
after its last line as the recording ends. A clip is cut from the caller channel with a little
margin and trimmed to its voiced extent when spoken; every offset above is corrected by how far
that extent starts from the turn the pipeline measured, so the new call's caller turn starts
where the recorded one did.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import yaml

from turnscope.actors.caller.speech import voiced_extent
from turnscope.asr.assembly import Backchannel, Turn
from turnscope.capture.frames import SAMPLE_RATE
from turnscope.jsonio import write_bytes, write_text

MARGIN_MS = 60  # cut around a turn's measured extent: its voiced edges are never clipped
CLIPS = "clips"
NO_WORDS = "(no words heard)"  # a turn the ASR returned no text for: the line still needs some


@dataclass
class Built:
    """What ``write_scenario`` wrote: the scenario, its clips, and what it could not keep."""

    scenario: Path
    clips: list[Path]
    lines: int  # caller lines (turns and backchannels)
    barge_ins: int
    backchannels: int
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Item:
    speaker: str  # "agent" | "caller"
    kind: str  # "turn" | "backchannel"
    start_ms: float
    end_ms: float
    text: str
    interrupt: bool = False


def _items(turns: Sequence[Turn], backchannels: Sequence[Backchannel]) -> list[_Item]:
    out = [_Item(t.speaker, "turn", t.start_ms, t.end_ms, t.text, t.interrupt) for t in turns]
    out += [
        _Item("caller", "backchannel", b.start_ms, b.end_ms, b.text)
        for b in backchannels
        if b.speaker == "caller"
    ]
    return sorted(out, key=lambda i: (i.start_ms, i.speaker != "agent"))


def reference_texts(items: Sequence[_Item], reference: Sequence[dict[str, Any]]) -> list[str]:
    """Each caller item's words: the reference caller turn it overlaps most, else the ASR's."""
    ref = [r for r in reference if r.get("speaker") == "caller"]
    out = []
    for item in items:
        best, text = 0.0, item.text
        for r in ref:
            s, e = float(r.get("start_ms", 0)), float(r.get("end_ms", 0))
            overlap = min(e, item.end_ms) - max(s, item.start_ms)
            if overlap > best and str(r.get("text") or "").strip():
                best, text = overlap, str(r["text"])
        out.append(text)
    return out


def _clip(audio: np.ndarray, item: _Item, floor_ms: float, ceil_ms: float) -> tuple[bytes, float]:
    """The caller turn's audio as WAV bytes, and how far its voiced extent starts after the
    measured start (ms; what every offset is corrected by)."""
    ms = SAMPLE_RATE / 1000
    a = max(floor_ms, item.start_ms - MARGIN_MS)
    b = min(ceil_ms, item.end_ms + MARGIN_MS)
    piece = audio[int(a * ms) : int(b * ms)]
    start, _ = voiced_extent(piece, SAMPLE_RATE)
    buf = io.BytesIO()
    sf.write(buf, piece, SAMPLE_RATE, format="WAV", subtype="PCM_16")
    return buf.getvalue(), a + start / ms - item.start_ms


def _agent_line(item: _Item, before: _Item | None, right_after: bool) -> dict[str, Any]:
    """An agent turn's line; ``right_after``: the caller turn ``before`` is the script's line
    just before it (talking over it needs that)."""
    line: dict[str, Any] = {"agent": item.text.strip() or NO_WORDS}
    if before is not None and before.speaker == "caller" and before.kind == "turn":
        latency = round(item.start_ms - before.end_ms)
        if latency >= 0:
            line["latency_ms"] = latency
        elif right_after and not before.interrupt:
            line["talk_over_ms"] = -latency
    return line


def script_of(
    items: Sequence[_Item], offsets: Sequence[float], clips: Sequence[str], texts: Sequence[str]
) -> tuple[list[dict[str, Any]], list[str]]:
    """The script's lines (caller items take their clip, words and offset in order) and notes
    on caller items that could not be placed as recorded."""
    script: list[dict[str, Any]] = []
    notes: list[str] = []
    k = 0
    agent: _Item | None = None  # the agent turn last started
    last: _Item | None = None  # the last line that is not a backchannel
    for item in items:
        if item.speaker == "agent":
            right_after = bool(script) and "caller" in script[-1]
            right_after = right_after and "backchannel_ms" not in script[-1]
            script.append(_agent_line(item, last, right_after))
            agent = last = item
            continue
        text, clip, delta = texts[k].strip() or NO_WORDS, clips[k], offsets[k]
        k += 1
        line: dict[str, Any] = {"caller": text, "audio": clip}
        into = agent is not None and last is agent and item.start_ms < agent.end_ms
        when = f"the caller's words at {item.start_ms / 1000:.2f} s"
        if item.kind == "backchannel":
            if not into:
                notes.append(f"{when}: a backchannel outside an agent turn, left out")
                continue
            line["backchannel_ms"] = max(0, round(item.start_ms - agent.start_ms - delta))
        elif item.interrupt and into:
            line["barge_in_ms"] = max(0, round(item.start_ms - agent.start_ms - delta))
        elif last is None:
            line["at_ms"] = max(0, round(item.start_ms - delta))
        elif last.speaker == "agent":
            line["reply_gap_ms"] = max(0, round(item.start_ms - last.end_ms - delta))
        elif last.interrupt and agent is not None and last.end_ms < agent.end_ms <= item.start_ms:
            # The agent went on after the barge-in (talked through it): this answers its turn.
            line["reply_gap_ms"] = max(0, round(item.start_ms - agent.end_ms - delta))
        else:  # after the caller's own line (a second barge-in into one turn, too): from its end
            line["after_agent_ms"] = max(0, round(item.start_ms - last.end_ms - delta))
        if item.interrupt and not into:
            how = "after the caller's previous line" if "after_agent_ms" in line else "a reply"
            notes.append(f"{when}: an interruption that follows no agent line, placed as {how}")
        script.append(line)
        if item.kind != "backchannel":  # no turn: the next line still answers the agent's
            last = item
    return script, notes


def write_scenario(
    out_dir: Path,
    *,
    name: str,
    turns: Sequence[Turn],
    backchannels: Sequence[Backchannel],
    caller_audio: np.ndarray,
    recorded: dict[str, Any],
    reference: Sequence[dict[str, Any]] | None = None,
    description: str = "",
) -> Built:
    """Write ``out_dir/scenario.yaml`` and its clips (``out_dir/clips/``) from a replayed
    call's turns and its caller channel (float32 at 16 kHz); ``recorded`` is the scenario's
    ``recorded:`` (paths relative to ``out_dir``)."""
    items = _items(turns, backchannels)
    callers = [i for i in items if i.speaker == "caller"]
    texts = reference_texts(callers, reference or []) if reference else [i.text for i in callers]
    ceil = len(caller_audio) * 1000 / SAMPLE_RATE
    clips, rel, offsets = [], [], []
    for n, item in enumerate(callers):
        # Never into the caller's own neighbouring words: they would be spoken twice.
        lo = callers[n - 1].end_ms if n else 0.0
        hi = callers[n + 1].start_ms if n + 1 < len(callers) else ceil
        data, delta = _clip(caller_audio, item, lo, hi)
        path = write_bytes(out_dir / CLIPS / f"caller-{n + 1:03d}.wav", data)
        clips.append(path)
        rel.append(f"{CLIPS}/{path.name}")
        offsets.append(delta)
    script, notes = script_of(items, offsets, rel, texts)
    used = {line["audio"] for line in script if "audio" in line}
    for path, r in zip(clips, rel, strict=True):
        if r not in used:  # a backchannel left out: no clip without its line
            path.unlink()
    clips = [p for p, r in zip(clips, rel, strict=True) if r in used]
    # The caller hangs up when the recorded call ended, counted from its own last line as the
    # live caller counts: an agent line after it would make the caller wait for the reply.
    while script and "agent" in script[-1]:
        script.pop()
    last = max((i.end_ms for i in callers), default=0.0)
    doc = {
        "name": name,
        "description": description,
        "caller": {
            "timeout_s": round(max(120.0, 2 * ceil / 1000 + 30), 1),
            "hangup_after_ms": max(0, round(ceil - last)),
        },
        "recorded": recorded,
        "script": script,
    }
    header = (
        "# turnscope scenario: a recorded call's caller, re-driven (turnscope scenario "
        "from-recording).\n# Each caller line is the recorded caller's own turn (audio:), spoken "
        "when it was: reply_gap_ms after\n# the agent's voice stopped, barge_in_ms into the "
        "agent's turn. Call an agent with it:\n#   turnscope call URL --scenario THIS.yaml\n"
    )
    body = yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=96)
    path = write_text(out_dir / "scenario.yaml", header + body)
    kinds = [next(k for k in line if k.endswith(("_ms",))) for line in script if "caller" in line]
    return Built(
        scenario=path,
        clips=clips,
        lines=len(kinds),
        barge_ins=kinds.count("barge_in_ms"),
        backchannels=kinds.count("backchannel_ms"),
        notes=notes,
    )
