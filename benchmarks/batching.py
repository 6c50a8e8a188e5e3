"""What one utterance costs the ASR worker by batch size, and by how many encoder windows run
at once on a CPU. Prints two tables.

    .venv/bin/python benchmarks/batching.py [--corpus DIR] [--repeats 3]

The utterances are the ones the pipeline's endpointers cut from four corpus calls (synthetic and
recorded human speech), decoded in this process with ``transcribe_batch`` as the worker runs it;
each setting's best of ``--repeats`` (the machine is noisy), all in one run.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import VOICE_PAIRS, build_corpus
from realspeech import build_real_corpus

import turnscope.asr.decode as decode
from turnscope.asr.endpointer import Endpointer
from turnscope.asr.events import EndOfTurn, Utterance
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import transcribe_batch
from turnscope.capture.file.source import FileSource
from turnscope.capture.frames import CHANNELS

ROOT = Path(__file__).resolve().parent.parent


def utterances(wav: Path, settings) -> list[Utterance]:
    source = FileSource.stereo(wav, chunk_ms=200)
    eps = {ch: Endpointer(ch, settings.vad, settings.refine, pad_ms=settings.asr.pad_ms)
           for ch in CHANNELS}  # fmt: skip
    out: list[Utterance] = []

    async def stream() -> None:
        async for frame in source.frames():
            out.extend(e.utterance for e in eps[frame.channel].push(frame)
                       if isinstance(e, EndOfTurn))  # fmt: skip
        for ep in eps.values():
            out.extend(e.utterance for e in ep.flush() if isinstance(e, EndOfTurn))

    asyncio.run(stream())
    return out


def best_ms_per_utterance(jobs, settings, size: int, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(0, len(jobs), size):
            transcribe_batch(jobs[i : i + size], settings.asr)
        best = min(best, time.perf_counter() - t0)
    return best * 1000 / len(jobs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / ".turnscope" / "bench-corpus")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    settings = load_settings()
    synthetic = build_corpus(args.corpus, scenarios=["refund-call", "barge-ins"],
                             conditions=["clean", "10dB"], voice_pairs=VOICE_PAIRS[:1])  # fmt: skip
    real = [c for c in build_real_corpus(args.corpus, conditions=("recorded",))
            if c.source in ("clips-a", "pyannote")]  # fmt: skip
    jobs = [(u, None) for c in [*synthetic, *real] for u in utterances(c.wav, settings)]
    transcribe_batch(jobs[:2], settings.asr)  # the model loaded
    print(f"{len(jobs)} utterances from {len(synthetic) + len(real)} calls, best of "
          f"{args.repeats}, encoder {decode.CPU_ENCODE_BATCH} windows at a time")  # fmt: skip
    print()
    print("| batch size | ms per utterance | vs one at a time |")
    print("|---|---|---|")
    one = None
    for size in (1, 2, 4, 8, 16, 32):
        ms = best_ms_per_utterance(jobs, settings, size, args.repeats)
        one = one or ms
        print(f"| {size} | {ms:.0f} | {ms / one:.2f}x |")
    print()
    print("| encoder windows at once (batches of 16) | ms per utterance |")
    print("|---|---|")
    saved = decode.CPU_ENCODE_BATCH
    try:
        for n in (1, 2, 4, 16):
            decode.CPU_ENCODE_BATCH = n
            ms = best_ms_per_utterance(jobs, settings, 16, args.repeats)
            print(f"| {n} | {ms:.0f} |")
    finally:
        decode.CPU_ENCODE_BATCH = saved


if __name__ == "__main__":
    main()
