"""Memory of a long replay: peak RSS of a 60-minute two-channel call vs the model alone.

    .venv/bin/python benchmarks/memory.py [--minutes 60]

Builds the long call by repeating the shipped sample recording (a FLAC, so decoding streams),
then measures in fresh processes: (a) importing turnscope and loading the model, (b) a 5-minute
and (c) a 60-minute fast replay through the whole pipeline. Peak RSS is the pipeline process's
plus its ASR worker process's (where the model lives). Flat memory means (c) - (a) stays
small and (c) is close to (b).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "recordings" / "refund-call.wav"

CHILD = r"""
import asyncio, json, resource, sys, time
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import Transcriber
from turnscope.asr.worker import asr_process_usage
from turnscope.capture.file.source import FileSource
from turnscope.pipeline import run_pipeline
settings = load_settings()
t = Transcriber(settings.asr)
t.warm_up()
out = {"turns": 0, "audio_s": 0.0, "wall_s": 0.0}
if sys.argv[1] != "-":
    t0 = time.perf_counter()
    r = asyncio.run(run_pipeline(FileSource.stereo(sys.argv[1], chunk_ms=200), settings,
                                 transcriber=t))
    out = {"turns": len(r.assembly.turns), "audio_s": r.audio_ms / 1000,
           "wall_s": time.perf_counter() - t0}
out["call_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out["asr_rss_mb"] = asr_process_usage()[1]
out["peak_rss_mb"] = out["call_rss_mb"] + out["asr_rss_mb"]
print(json.dumps(out))
"""


def long_call(minutes: float, path: Path) -> Path:
    audio, rate = sf.read(SAMPLE, dtype="float32")
    reps = int(np.ceil(minutes * 60 * rate / len(audio)))
    with sf.SoundFile(path, "w", rate, 2, format="FLAC") as f:
        for _ in range(reps):
            f.write(audio)
    return path


def rss(m: dict) -> str:
    return f"{m['call_rss_mb']:.0f} + {m['asr_rss_mb']:.0f} = {m['peak_rss_mb']:.0f} MB"


def measure(arg: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, arg], capture_output=True, text=True, cwd=ROOT, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=60.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="turnscope-mem-"))
    base = measure("-")
    short = measure(str(long_call(5, work / "short.flac")))
    long = measure(str(long_call(args.minutes, work / "long.flac")))
    print(
        "| run | audio | turns | wall | peak RSS: pipeline process + ASR process = sum | "
        "above model alone |"
    )
    print("|---|---|---|---|---|---|")
    print(f"| model loaded, no call | - | - | - | {rss(base)} | - |")
    for name, m in (("5-minute replay", short), (f"{args.minutes:.0f}-minute replay", long)):
        print(
            f"| {name} | {m['audio_s'] / 60:.1f} min | {m['turns']} | {m['wall_s']:.0f} s | "
            f"{rss(m)} | {m['peak_rss_mb'] - base['peak_rss_mb']:+.0f} MB |"
        )


if __name__ == "__main__":
    main()
