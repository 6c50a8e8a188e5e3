"""What a bundle's report shows, read once from the bundle: envelopes, turns, and the verifier's
view of them (latency gaps, barge-ins, overlaps) with the scores, WER and continuity beside.

The analysis follows the verifier's semantics (list order, its budgets and the 600 ms yield) so
the picture explains the score rather than a second opinion of it. Every optional piece may be
missing or malformed; the report then says so in ``notes`` instead of failing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf

from turnscope.errors import InputError
from turnscope.scoring.evidence.bundle import FILES, MANIFEST
from turnscope.scoring.exercise import Exercise, exercise_from_dict
from turnscope.scoring.verifier import BARGE_IN_YIELD_MS, DEFAULT_MAX_LATENCY_MS
from turnscope.scoring.verifier import failed_floors as verifier_failed_floors

CHANNELS = ("caller", "agent")
REQUIRED = ("transcript_json", "waveform_timeline_json")


@dataclass(frozen=True)
class Envelope:
    """Peak amplitude per bin, normalised to the channel's loudest bin (0..1)."""

    bin_ms: float
    peaks: np.ndarray


@dataclass(frozen=True)
class TurnView:
    index: int
    speaker: str
    start_ms: float
    end_ms: float
    text: str
    interrupt: bool


@dataclass(frozen=True)
class LatencyGap:
    """An agent turn and the caller turn before it in list order (the verifier's pairing)."""

    caller: int
    agent: int
    caller_end_ms: float
    agent_start_ms: float
    gap_ms: float
    ok: bool


@dataclass(frozen=True)
class BargeIn:
    """A caller interrupt; ``agent`` is the agent turn it overlapped (None: nothing to yield)."""

    caller: int
    agent: int | None
    at_ms: float
    yield_ms: float | None
    ok: bool | None


@dataclass(frozen=True)
class Overlap:
    """Both channels' turns at once: a barge-in, or the agent talking over the caller."""

    caller: int
    agent: int
    start_ms: float
    end_ms: float
    kind: str  # "barge_in" | "talk_over"


@dataclass(frozen=True)
class Backchannel:
    speaker: str
    start_ms: float
    end_ms: float
    text: str


@dataclass(frozen=True)
class AudioGap:
    channel: str
    start_ms: float
    duration_ms: float


@dataclass
class ReportModel:
    bundle: Path
    duration_ms: float
    max_latency_ms: int
    envelopes: dict[str, Envelope | None]
    voiced: dict[str, list[tuple[float, float]]]
    turns: list[TurnView]
    gaps: list[LatencyGap]
    barge_ins: list[BargeIn]
    overlaps: list[Overlap]
    harmful: set[int]  # agent turns the verifier counts as talking over the caller
    backchannels: list[Backchannel]
    audio_gaps: list[AudioGap]
    verdict: str | None  # pass | fail | error (the run could not be scored) | None
    error: str | None
    verifier: dict[str, Any]
    failed_floors: list[str]
    required_content: list[str]
    wer: dict[str, Any] | None
    continuity: dict[str, Any]
    degraded: list[str]
    warnings: list[str]
    run: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    exercise: dict[str, Exercise] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)  # why it failed beyond the floors


# --- reading -----------------------------------------------------------------------------------


def bundle_files(bundle: Path) -> dict[str, Path]:
    """Artifact kind -> file, from the manifest where it names one inside the bundle."""
    paths = {kind: bundle / spec[0] for kind, spec in FILES.items()}
    try:
        manifest = json.loads((bundle / MANIFEST).read_text(encoding="utf-8"))
        artifacts = manifest.get("artifacts") or []
    except (OSError, ValueError, AttributeError):
        return paths
    root = bundle.resolve()
    for a in artifacts:
        if not isinstance(a, Mapping) or a.get("kind") not in paths or not a.get("path"):
            continue
        p = (bundle / str(a["path"])).resolve()
        if p.is_relative_to(root):  # a manifest never sends the report outside its folder
            paths[str(a["kind"])] = p
    return paths


def check_bundle(bundle: Path) -> dict[str, Path]:
    """The bundle's files; InputError naming what is missing when this is not a bundle."""
    fix = "give the output folder of turnscope replay, call or demo"
    if not bundle.exists():
        raise InputError("no such bundle folder", path=bundle, fix=fix)
    if not bundle.is_dir():
        raise InputError("is a file, not a bundle folder", path=bundle, fix=fix)
    paths = bundle_files(bundle)
    missing = [MANIFEST] if not (bundle / MANIFEST).is_file() else []
    missing += [paths[k].name for k in REQUIRED if not paths[k].is_file()]
    if missing:
        raise InputError(
            f"not a voice artifact bundle: missing {', '.join(missing)}", path=bundle, fix=fix
        )
    return paths


def _wav_ms(path: Path) -> float:
    try:
        info = sf.info(path)
    except (OSError, RuntimeError, sf.LibsndfileError):
        return 0.0
    return info.frames * 1000.0 / info.samplerate if info.samplerate else 0.0


def _json(path: Path, notes: list[str]) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        notes.append(f"{path.name} could not be read ({type(exc).__name__}); shown without it")
        return {}
    if not isinstance(doc, dict):
        notes.append(f"{path.name} is not a JSON object; shown without it")
        return {}
    return doc


def number(x: Any, default: float = 0.0) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return default
    return v if np.isfinite(v) else default


def envelope(path: Path, bin_ms: float, notes: list[str]) -> Envelope | None:
    """Peak envelope of a wav, read in blocks so a long call never sits in memory."""
    if not path.is_file():
        notes.append(f"{path.name} is missing: no waveform for that channel")
        return None
    try:
        with sf.SoundFile(path) as f:
            rate = f.samplerate
            hop = max(1, round(rate * bin_ms / 1000))
            block = hop * max(1, (rate * 10) // hop)  # ~10 s per read, whole bins only
            peaks: list[np.ndarray] = []
            rest = np.zeros(0, dtype=np.float32)
            while True:
                x = f.read(block, dtype="float32", always_2d=True)
                if not len(x):
                    break
                x = np.concatenate([rest, np.abs(x).max(axis=1)])
                whole = len(x) // hop * hop
                peaks.append(x[:whole].reshape(-1, hop).max(axis=1))
                rest = x[whole:]
            if len(rest):
                peaks.append(rest.max(keepdims=True))
    except (RuntimeError, sf.LibsndfileError) as exc:
        notes.append(f"{path.name} could not be decoded ({exc}); no waveform for that channel")
        return None
    p = np.concatenate(peaks) if peaks else np.zeros(0, dtype=np.float32)
    # Normalise per channel, but never blow a near-silent channel's hiss up to full height.
    scale = max(float(p.max()) if len(p) else 0.0, 0.05)
    return Envelope(bin_ms, np.clip(p / scale, 0.0, 1.0))


def _turns(doc: Mapping[str, Any]) -> list[TurnView]:
    out = []
    for i, t in enumerate(doc.get("turns") or []):
        if isinstance(t, Mapping):
            out.append(
                TurnView(
                    i,
                    str(t.get("speaker")),
                    number(t.get("start_ms")),
                    number(t.get("end_ms")),
                    str(t.get("text") or ""),
                    bool(t.get("interrupt", False)),
                )
            )
    return out


def _voiced(doc: Mapping[str, Any]) -> dict[str, list[tuple[float, float]]]:
    """Every voiced span the VAD found, per channel (rejected utterances included)."""
    out: dict[str, list[tuple[float, float]]] = {ch: [] for ch in CHANNELS}
    sources = doc.get("utterances") or doc.get("turns") or []
    for u in sources:
        if not isinstance(u, Mapping):
            continue
        ch = str(u.get("channel") or u.get("speaker"))
        for s in u.get("spans") or []:
            if ch in out and isinstance(s, Sequence) and len(s) >= 2:
                out[ch].append((number(s[0]), number(s[1])))
    return out


# --- the verifier's view ----------------------------------------------------------------------


def latency_gaps(turns: Sequence[TurnView], max_latency_ms: int) -> list[LatencyGap]:
    """Each agent turn against the last caller turn before it in the list, as the verifier does.

    Times are cast to int as the verifier casts them, so the ms shown is the ms scored.
    """
    out = []
    last: TurnView | None = None
    for t in turns:
        if t.speaker == "caller":
            last = t
        elif t.speaker == "agent" and last is not None:
            gap = int(t.start_ms) - int(last.end_ms)
            out.append(
                LatencyGap(
                    last.index, t.index, last.end_ms, t.start_ms, gap, 0 <= gap <= max_latency_ms
                )
            )
    return out


def overlaps(
    turns: Sequence[TurnView],
) -> tuple[list[Overlap], list[BargeIn], set[int]]:
    """Overlaps, barge-ins with how fast the agent yielded, and the harmful agent turns."""
    agents = [t for t in turns if t.speaker == "agent"]
    callers = [t for t in turns if t.speaker == "caller"]
    found: list[Overlap] = []
    barges: list[BargeIn] = []
    harmful: set[int] = set()
    for a in agents:
        hits = [
            c
            for c in callers
            if int(c.start_ms) < int(a.end_ms) and int(c.end_ms) > int(a.start_ms)
        ]
        for c in hits:
            kind = "barge_in" if c.interrupt else "talk_over"
            lo, hi = max(a.start_ms, c.start_ms), min(a.end_ms, c.end_ms)
            found.append(Overlap(c.index, a.index, lo, hi, kind))
            if c.interrupt:
                y = int(a.end_ms) - int(c.start_ms)
                barges.append(BargeIn(c.index, a.index, c.start_ms, y, y <= BARGE_IN_YIELD_MS))
        if hits and not any(c.interrupt for c in hits):
            harmful.add(a.index)
    seen = {b.caller for b in barges}
    for c in callers:  # an interrupt that met no agent speech: marked, but the verifier skips it
        if c.interrupt and c.index not in seen:
            barges.append(BargeIn(c.index, None, c.start_ms, None, None))
    barges.sort(key=lambda b: (b.at_ms, b.caller))
    return found, barges, harmful


# --- assembling the model ---------------------------------------------------------------------


def _dedupe(items: Sequence[Any]) -> list[str]:
    return list(dict.fromkeys(str(x) for x in items if x))


def _duration(
    timeline: Mapping[str, Any], transcript: Mapping[str, Any], turns: Sequence[TurnView]
) -> float:
    cands = [number(transcript.get("duration_ms"))]
    cands += [
        number(c.get("duration_ms"))
        for c in timeline.get("channels") or []
        if isinstance(c, Mapping)
    ]
    cands += [t.end_ms for t in turns]
    return max(cands, default=0.0)


def seconds_per_row(duration_ms: float) -> float:
    """Timeline row length in ms: a short call fills one row; long calls wrap a minute per row,
    and very long ones widen rows so there are never more than ~30 (HTML and PNG stay small)."""
    if duration_ms <= 60_000:
        return max(10_000.0, float(np.ceil(duration_ms / 5000.0) * 5000.0))
    return 60_000.0 * max(1.0, float(np.ceil(duration_ms / (30 * 60_000.0))))


def load_model(bundle: Path, plot_px: int) -> ReportModel:
    """Read everything the report needs; ``plot_px`` sets the envelope resolution (~1 bin/px)."""
    paths = check_bundle(bundle)
    notes: list[str] = []
    transcript = _json(paths["transcript_json"], notes)
    timeline = _json(paths["waveform_timeline_json"], notes)
    structured = _json(paths["structured_output_json"], notes).get("output") or {}
    continuity_doc = _json(paths["live_continuity_report_json"], notes)
    result = _json(bundle / "result.json", notes)

    turns = _turns(transcript)
    wavs = {ch: paths[f"{ch}_audio"] for ch in CHANNELS}
    duration = max(_duration(timeline, transcript, turns), *(_wav_ms(p) for p in wavs.values()))
    bin_ms = max(10.0, round(seconds_per_row(duration) / plot_px))
    envelopes = {ch: envelope(p, bin_ms, notes) for ch, p in wavs.items()}

    task = structured.get("task") or result.get("task") or {}
    verifier = structured.get("verifier") or result.get("verifier") or {}
    budget = (task.get("budgets") or {}).get("max_latency_ms")
    if budget is None:
        budget = (verifier.get("raw") or {}).get("max_latency_ms", DEFAULT_MAX_LATENCY_MS)
    max_latency = int(number(budget, DEFAULT_MAX_LATENCY_MS))

    found, barges, harmful = overlaps(turns)
    run = structured.get("run") or {}
    continuity = {
        **(structured.get("continuity") or {}),
        **{
            k: continuity_doc[k]
            for k in ("status", "metrics", "caveats", "thresholds")
            if k in continuity_doc
        },
    }
    degraded = _dedupe([*(run.get("degraded") or []), *(result.get("degraded") or [])])
    if continuity.get("status") == "degraded" and not degraded:  # another producer's bundle
        degraded = _dedupe([*degraded, *(continuity.get("caveats") or [])])
    markers = [m for m in timeline.get("markers") or [] if isinstance(m, Mapping)]
    return ReportModel(
        bundle=bundle,
        duration_ms=duration,
        max_latency_ms=max_latency,
        envelopes=envelopes,
        voiced=_voiced(transcript),
        turns=turns,
        gaps=latency_gaps(turns, max_latency),
        barge_ins=barges,
        overlaps=found,
        harmful=harmful,
        backchannels=[
            Backchannel(
                str(b.get("speaker") or "caller"),
                number(b.get("start_ms")),
                number(b.get("end_ms")),
                str(b.get("text") or ""),
            )
            for b in transcript.get("backchannels") or []
            if isinstance(b, Mapping)
        ],
        audio_gaps=[
            AudioGap(
                str(m.get("channel")), number(m.get("offset_ms")), number(m.get("duration_ms"))
            )
            for m in markers
            if m.get("key") == "audio_gap"
        ],
        verdict=structured.get("verdict") or result.get("verdict"),
        error=structured.get("error") or result.get("error"),
        verifier=verifier,
        failed_floors=list(
            structured.get("failed_floors")
            or result.get("failed_floors")
            or verifier_failed_floors(verifier.get("result") or {})
        ),
        required_content=[str(k) for k in task.get("required_content") or []],
        wer=structured.get("wer") if "wer" in structured else result.get("wer"),
        continuity=continuity,
        degraded=degraded,
        warnings=_dedupe(run.get("warnings") or result.get("warnings") or []),
        run={
            "evidence_class": run.get("evidence_class") or result.get("evidence_class"),
            "source": result.get("source") or {},
            "task": task,
            "producer": structured.get("producer") or {},
            "counts": run.get("counts") or result.get("counts") or {},
        },
        notes=notes,
        exercise=exercise_from_dict(structured.get("exercise") or result.get("exercise")),
        failures=_dedupe(structured.get("failures") or result.get("failures") or []),
    )
