"""Shared by the benchmarks: the labelled corpus, turn matching and error statistics."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.actors.caller.synth import render, write_call
from turnscope.asr.endpointer import Endpointer
from turnscope.asr.events import EndOfTurn, Utterance
from turnscope.asr.settings import Settings
from turnscope.capture.frames import PcmFrame
from turnscope.configs import config_path

SCENARIOS = ["refund-call", "backchannel", "talk-over", "barge-ins", "quick-exchange"]
VOICE_PAIRS = [("en-us", "en-gb"), ("en-us+f3", "en-gb-scotland"), ("en-gb", "en-us+m3")]
CONDITIONS = {
    "clean": {},
    "10dB": {"snr_db": 10.0},
    "phone": {"telephone": True},
}


@dataclass(frozen=True)
class CorpusCall:
    name: str
    scenario: str
    condition: str
    voices: tuple[str, str]
    wav: Path
    truth: dict[str, Any]


def build_corpus(
    root: Path,
    *,
    scenarios: Sequence[str] = SCENARIOS,
    conditions: Iterable[str] = CONDITIONS,
    voice_pairs: Sequence[tuple[str, str]] = VOICE_PAIRS,
) -> list[CorpusCall]:
    """Render (or reuse) every scenario x condition x voice pair with `turnscope synth`'s code."""
    calls = []
    for condition in conditions:
        for scenario in scenarios:
            path = config_path("scenarios", f"{scenario}.yaml")
            for k, (cv, av) in enumerate(voice_pairs):
                # Keyed by what the call is rendered from: an edited scenario is rendered again.
                recipe = f"{path.read_text()}|{cv}|{av}|{k}|{CONDITIONS[condition]}"
                key = hashlib.sha256(recipe.encode()).hexdigest()[:10]
                name = f"{scenario}-{condition}-v{k}"
                outdir = root / f"{name}-{key}"
                if not (outdir / "truth.json").exists():
                    sc = load_scenario(path)
                    call = render(
                        sc, caller_voice=cv, agent_voice=av, seed=k, **CONDITIONS[condition]
                    )
                    write_call(call, outdir)
                truth = json.loads((outdir / "truth.json").read_text())
                calls.append(
                    CorpusCall(name, scenario, condition, (cv, av), outdir / "call.wav", truth)
                )
    return calls


def overlap(a0: float, a1: float, b0: float, b1: float) -> float:
    return max(0.0, min(a1, b1) - max(a0, b0))


def match(truth: Sequence[dict], found: Sequence[dict]) -> list[tuple[dict, dict | None]]:
    """Pair each truth item with the same-speaker found item that overlaps it most (one to one)."""
    used: set[int] = set()
    pairs = []
    for t in truth:
        best, best_ov = None, 0.0
        for i, f in enumerate(found):
            if i in used or f["speaker"] != t["speaker"]:
                continue
            ov = overlap(t["start_ms"], t["end_ms"], f["start_ms"], f["end_ms"])
            if ov > best_ov:
                best, best_ov = i, ov
        if best is not None:
            used.add(best)
        pairs.append((t, found[best] if best is not None else None))
    return pairs


def boundary_errors(pairs: Sequence[tuple[dict, dict | None]]) -> tuple[list[float], list[float]]:
    """|start| and |end| errors of the matched pairs, leaving out the boundaries the truth does
    not score (``score_start`` / ``score_end`` false: see realspeech.py)."""
    starts = [
        abs(f["start_ms"] - t["start_ms"])
        for t, f in pairs
        if f is not None and t.get("score_start", True)
    ]
    ends = [
        abs(f["end_ms"] - t["end_ms"])
        for t, f in pairs
        if f is not None and t.get("score_end", True)
    ]
    return starts, ends


def endpointed(
    pcm: np.ndarray, channel: str, settings: Settings, *, chunk: int = 320
) -> list[Utterance]:
    """The utterances one channel's endpointer finds in ``pcm`` (int16, 16 kHz), fed ``chunk``
    samples at a time: 320 as a live call's 20 ms frames, 3200 as a fast replay's."""
    ep = Endpointer(channel, settings.vad, settings.refine)
    events = []
    for k in range(0, len(pcm), chunk):
        events += ep.push(PcmFrame(channel, k, pcm[k : k + chunk]))
    events += ep.flush()
    return [e.utterance for e in events if isinstance(e, EndOfTurn)]


def stat(values: Sequence[float], q: float) -> float:
    return float(np.percentile(values, q)) if len(values) else float("nan")


def prf(tp: int, fp: int, fn: int) -> tuple[float, float]:
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    return precision, recall


def order_call_scenario(name: str, *, first_at_ms: int, latency_ms: int) -> str:
    """The repeated-call benchmarks' scenario (YAML): an order-status call, four exchanges."""
    return f"""
name: {name}
caller: {{voice: en-us, timeout_s: 60, hangup_after_ms: 500}}
agent: {{voice: en-gb, latency_ms: {latency_ms}, yield_ms: 250}}
script:
  - caller: Hello, I would like to check the status of my order please.
    at_ms: {first_at_ms}
  - agent: Of course. Could you give me your order number?
  - caller: It is four five two one.
  - agent: Thank you. Your order left our warehouse yesterday and arrives on Friday.
  - caller: Great, and can I still change the delivery address?
  - agent: Yes, you can change it online until the parcel is out for delivery.
  - caller: Perfect, thank you. Goodbye.
  - agent: Goodbye, and have a nice day.
"""
