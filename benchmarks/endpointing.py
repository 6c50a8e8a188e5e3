"""Endpointer settings sweep (no ASR): how close speech onsets/offsets land to the truth, how
much noise is taken for speech, and how fast it runs. Used to choose the VAD defaults.

    .venv/bin/python benchmarks/endpointing.py [--corpus DIR]

For every truth clip (each spoken line, backchannel and barge-in) the nearest detected
utterance start (and end) on its channel within 500 ms gives the boundary error; a detected
utterance that overlaps no truth clip is a false alarm; a clip no utterance overlaps is a miss.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CONDITIONS, build_corpus, endpointed, overlap, stat

from turnscope.asr.settings import Settings, load_settings
from turnscope.capture.frames import to_int16

VARIANTS: dict[str, dict] = {
    "default": {},
    "no gate": {"vad": {"energy_gate_db": 0}},
    "gate 3 dB": {"vad": {"energy_gate_db": 3}},
    "gate 9 dB": {"vad": {"energy_gate_db": 9}},
    "gate 12 dB": {"vad": {"energy_gate_db": 12}},
    "aggressiveness 1": {"vad": {"aggressiveness": 1}},
    "aggr 1 + gate 12": {"vad": {"aggressiveness": 1, "energy_gate_db": 12}},
    "aggr 2 + gate 12": {"vad": {"aggressiveness": 2, "energy_gate_db": 12}},
    "aggr 1 + gate 9": {"vad": {"aggressiveness": 1, "energy_gate_db": 9}},
    "aggr 1 + gate 15": {"vad": {"aggressiveness": 1, "energy_gate_db": 15}},
    "20 ms frames": {"vad": {"frame_ms": 20, "start_window_ms": 60, "start_voiced_ms": 40}},
    "30 ms frames": {"vad": {"frame_ms": 30, "start_window_ms": 60, "start_voiced_ms": 60}},
    "no refinement": {"refine": {"enabled": False}},
    "refine margin 3 dB": {"refine": {"noise_margin_db": 3}},
    "refine margin 10 dB": {"refine": {"noise_margin_db": 10}},
    "refine window 10 ms": {"refine": {"window_ms": 10}},
    "window 10 + margin 3": {"refine": {"window_ms": 10, "noise_margin_db": 3}},
    "window 20 + margin 3": {"refine": {"window_ms": 20, "noise_margin_db": 3}},
    "window 20 + margin 2": {"refine": {"window_ms": 20, "noise_margin_db": 2}},
    "window 10 + margin 4": {"refine": {"window_ms": 10, "noise_margin_db": 4}},
}
CHUNK = 3200  # 200 ms: the chunk size of a fast replay


def endpoint(audio: np.ndarray, settings: Settings) -> tuple[dict[str, list], float]:
    utts: dict[str, list] = {}
    elapsed = 0.0
    for i, ch in enumerate(("caller", "agent")):
        pcm = to_int16(audio[:, i])
        t0 = time.perf_counter()
        utts[ch] = endpointed(pcm, ch, settings, chunk=CHUNK)
        elapsed += time.perf_counter() - t0
    return utts, elapsed


def score(truth: list[dict], utts: dict[str, list], acc: dict) -> None:
    for ch in ("caller", "agent"):
        clips = [u for u in truth if u["speaker"] == ch]
        # Utterance edges: what turns are built from (spans inside are breath pauses).
        starts = np.array([u.start_ms for u in utts[ch]]) if utts[ch] else np.zeros(0)
        ends = np.array([u.end_ms for u in utts[ch]]) if utts[ch] else np.zeros(0)
        for c in clips:
            if len(starts):
                ds = np.abs(starts - c["start_ms"]).min()
                de = np.abs(ends - c["end_ms"]).min()
                if ds <= 500:
                    acc["start"].append(ds)
                if de <= 500:
                    acc["end"].append(de)
            hit = any(
                overlap(c["start_ms"], c["end_ms"], u.start_ms, u.end_ms) > 0 for u in utts[ch]
            )
            acc["miss"] += 0 if hit else 1
            acc["clips"] += 1
        for u in utts[ch]:
            if not any(
                overlap(c["start_ms"], c["end_ms"], u.start_ms, u.end_ms) > 0 for c in clips
            ):
                acc["false"] += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(".turnscope/bench-corpus"))
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = parser.parse_args()
    calls = build_corpus(args.corpus)
    audio = {c.name: sf.read(c.wav, dtype="float32")[0] for c in calls}
    base = load_settings()
    print(f"{len(calls)} calls, {sum(len(a) for a in audio.values()) / 16000 / 60:.1f} min")
    print(
        "| variant | condition | |start| med/p95 ms | |end| med/p95 ms | missed/clips | "
        "false alarms | x real time |"
    )
    print("|---|---|---|---|---|---|---|")
    for name in args.variants:
        settings = base.with_overrides(VARIANTS[name])
        acc: dict[str, dict] = defaultdict(lambda: defaultdict(list))
        for cond in CONDITIONS:
            acc[cond] = {
                "start": [],
                "end": [],
                "miss": 0,
                "clips": 0,
                "false": 0,
                "t": 0.0,
                "audio": 0.0,
            }
        for c in calls:
            utts, elapsed = endpoint(audio[c.name], settings)
            a = acc[c.condition]
            score(c.truth["utterances"], utts, a)
            a["t"] += elapsed
            a["audio"] += 2 * len(audio[c.name]) / 16000  # two channels
        for cond, a in acc.items():
            print(
                f"| {name} | {cond} | {stat(a['start'], 50):.1f}/{stat(a['start'], 95):.0f} | "
                f"{stat(a['end'], 50):.1f}/{stat(a['end'], 95):.0f} | {a['miss']}/{a['clips']} "
                f"| {a['false']} | {a['audio'] / a['t']:.0f} |",
                flush=True,
            )


if __name__ == "__main__":
    main()
