"""A replay as a user runs it, whole process, against faster-whisper with its own VAD on the same
channels, side by side in one run. Prints one table.

    .venv/bin/python benchmarks/replay_speed.py [--pairs 3] [--corpus DIR]

Each pair runs, in fresh processes and alternately (so a noisy machine slows both alike):
``turnscope replay CALL -q -o DIR`` (start-up, decode, endpointing, ASR in its worker process,
scoring, the bundle) and a script that loads the same Whisper model (the bundled tiny.en, the
pipeline's compute type, threads and beam) and transcribes both channels with
``vad_filter=True`` (faster-whisper's Silero VAD: the baseline a user would pick). Calls: a
synthetic one (espeak-ng, the refund call, clean), a real one (the composed LibriVox call, as
recorded) and 2 s of silence (start-up alone); plus ``turnscope --help`` and ``turnscope score``
on the first replay's transcript.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import build_corpus
from realspeech import build_real_corpus

ROOT = Path(__file__).resolve().parent.parent
TURNSCOPE = ROOT / ".venv" / "bin" / "turnscope"
PYTHON = ROOT / ".venv" / "bin" / "python"

BASELINE = """
import os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
import numpy as np, soundfile as sf
from faster_whisper import WhisperModel
from turnscope.asr.model import resolve_model
from turnscope.asr.settings import load_settings
asr = load_settings().asr
model = WhisperModel(str(resolve_model(asr.model)), device="cpu", compute_type=asr.compute_type,
                     cpu_threads=asr.cpu_threads)
audio, _ = sf.read(sys.argv[1], dtype="float32", always_2d=True)
for ch in range(audio.shape[1]):
    segments, _ = model.transcribe(np.ascontiguousarray(audio[:, ch]), language=asr.language,
                                   beam_size=asr.beam_size, vad_filter=True)
    print(" ".join(s.text.strip() for s in segments))
"""


def wall(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if done.returncode not in (0, 1, 4):  # a failed verdict, a degraded call: still a replay
        raise SystemExit(f"{cmd[:3]} failed ({done.returncode}): {done.stderr[-500:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".turnscope" / "bench-corpus")
    args = parser.parse_args()
    synthetic = build_corpus(args.corpus, scenarios=["refund-call"], conditions=["clean"])[0]
    real = next(c for c in build_real_corpus(args.corpus, conditions=("recorded",))
                if c.source == "clips-a")  # fmt: skip
    tmp = Path(tempfile.mkdtemp(prefix="replay-speed-"))
    silence = tmp / "silence.wav"
    sf.write(silence, np.zeros((32000, 2), dtype=np.float32), 16000, subtype="PCM_16")
    calls = {"synthetic refund call": synthetic.wav, "real LibriVox call": real.wav,
             "2 s of silence": silence}  # fmt: skip
    baseline = tmp / "baseline.py"
    baseline.write_text(BASELINE)
    print(f"{args.pairs} pairs each, fresh processes, alternating")
    rows = []
    for name, wav in calls.items():
        ours, theirs = [], []
        for k in range(args.pairs):
            out = tmp / f"run-{len(rows)}-{k}"
            ours.append(wall([str(TURNSCOPE), "replay", str(wav), "-q", "-o", str(out)]))
            theirs.append(wall([str(PYTHON), str(baseline), str(wav)]))
        seconds = sf.info(wav).duration
        rows.append((name, seconds, statistics.median(ours), statistics.median(theirs),
                     [a / b for a, b in zip(ours, theirs, strict=True)]))  # fmt: skip
    helps = [wall([str(TURNSCOPE), "--help"]) for _ in range(args.pairs)]
    transcript = tmp / "run-0-0" / "transcript.json"  # the first replay's, scored again
    scores = [wall([str(TURNSCOPE), "score", str(transcript)]) for _ in range(args.pairs)]
    print()
    print("| call | audio | turnscope replay | FW + vad_filter | ratio (median, range) |")
    print("|---|---|---|---|---|")
    for name, seconds, ours, theirs, ratios in rows:
        spread = f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}-{max(ratios):.2f})"
        print(f"| {name} | {seconds:.1f} s | {ours:.2f} s | {theirs:.2f} s | {spread} |")
    print(f"| `turnscope --help` | - | {statistics.median(helps):.2f} s | - | - |")
    print(f"| `turnscope score` (a transcript) | - | {statistics.median(scores):.2f} s | - | - |")


if __name__ == "__main__":
    main()
