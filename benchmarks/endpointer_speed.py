"""Endpointer speed, old vs new in the same run: x real time per channel (CPU time).

    .venv/bin/python benchmarks/endpointer_speed.py [--base COMMIT] [--corpus DIR]

The old implementation (asr/endpointer.py and asr/refine.py at ``--base``, by default the commit
before the speed-up) is loaded from git into temporary modules and timed alternately with the
current one on the same frames, so a noisy machine slows both alike. Each cell is the best of
``--repeats`` runs of time.process_time over push() and flush() of every channel of the calls of
one condition; the frames are built beforehand (a live call hands them over ready-made).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import build_corpus

from turnscope.asr import endpointer
from turnscope.asr.settings import load_settings
from turnscope.capture.frames import SAMPLE_RATE, PcmFrame

BASE = "64be9ebaa017d941e897cc196937412a40848469"  # the last commit with the old endpointer
REPO = Path(__file__).resolve().parent.parent
CHUNKS_MS = (20, 200)  # a live call's frames; a fast replay's chunks
CONDITIONS = ("clean", "10dB")
SCENARIOS = ("refund-call", "talk-over")


def old_module(commit: str) -> types.ModuleType:
    """asr/endpointer.py at ``commit``, importing asr/refine.py at ``commit`` too."""

    def load(name: str, path: str, source_edit: tuple[str, str] | None = None):
        source = subprocess.run(
            ["git", "show", f"{commit}:{path}"],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        if source_edit:
            assert source_edit[0] in source, f"{path} at {commit} does not import {source_edit[0]}"
            source = source.replace(*source_edit)
        module = types.ModuleType(name)
        module.__file__ = f"<{path} at {commit[:10]}>"
        sys.modules[name] = module  # dataclasses look their module up while executing it
        exec(compile(source, module.__file__, "exec"), module.__dict__)
        return module

    load("_old_refine", "asr/refine.py")
    return load(
        "_old_endpointer",
        "asr/endpointer.py",
        ("from turnscope.asr.refine import", "from _old_refine import"),
    )


def channels(corpus: Path, condition: str) -> list[np.ndarray]:
    """int16 channels of the condition's calls (first voice pair)."""
    calls = build_corpus(
        corpus, scenarios=SCENARIOS, conditions=[condition], voice_pairs=[("en-us", "en-gb")]
    )
    out = []
    for call in calls:
        audio, rate = sf.read(call.wav, dtype="int16")
        assert rate == SAMPLE_RATE
        out += [np.ascontiguousarray(audio[:, k]) for k in range(audio.shape[1])]
    return out


def cpu_seconds(module: types.ModuleType, feeds: list[list[PcmFrame]], settings) -> float:
    """CPU time to endpoint every feed (one channel each) with ``module``'s Endpointer."""
    total = 0.0
    for frames in feeds:
        ep = module.Endpointer(frames[0].channel, settings.vad, settings.refine)
        t0 = time.process_time()
        for frame in frames:
            ep.push(frame)
        ep.flush()
        total += time.process_time() - t0
    return total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", default=BASE, help="commit holding the old endpointer")
    parser.add_argument("--corpus", type=Path, default=Path(".turnscope/bench-corpus"))
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    settings = load_settings()
    impls = {"old": old_module(args.base), "new": endpointer}
    print(f"old = {args.base[:10]}, new = working tree; CPU time, best of {args.repeats}\n")
    print(
        "| condition | chunk | audio per channel | old x real time | new x real time | speed-up |"
    )
    print("|---|---|---|---|---|---|")
    for condition in CONDITIONS:
        pcms = channels(args.corpus, condition)
        seconds = sum(len(p) for p in pcms) / SAMPLE_RATE
        for chunk_ms in CHUNKS_MS:
            n = SAMPLE_RATE * chunk_ms // 1000
            feeds = [
                [PcmFrame(f"ch{k}", i, pcm[i : i + n]) for i in range(0, len(pcm), n)]
                for k, pcm in enumerate(pcms)
            ]
            best = {name: float("inf") for name in impls}
            for _ in range(args.repeats):
                for name, module in impls.items():  # alternate, so load drifts hit both
                    best[name] = min(best[name], cpu_seconds(module, feeds, settings))
            old, new = seconds / best["old"], seconds / best["new"]
            print(
                f"| {condition} | {chunk_ms} ms | {seconds / len(pcms):.0f} s x {len(pcms)} | "
                f"{old:.0f}x | {new:.0f}x | {new / old:.1f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
