"""Bounded resources: a long replay's peak memory against a short one's, and scoring time in turns.

    nice -n 10 .venv/bin/python benchmarks/memory.py [--minutes 10 60 180] [--turns 1000 64000]

Replay: the long call is the shipped sample recording looped with soundfile (a FLAC, so its
decoding streams), replayed fast by ``turnscope replay -o DIR -q`` in a fresh process: the whole
command (pipeline, bundle, report), not the pipeline alone. Peak RSS is the command's process
plus its ASR worker process's (where the model lives). Flat memory: every replay's peak within
100 MB of the shortest one's.

Scoring: a synthetic transcript of N alternating turns (caller turns now and then an interrupt,
some overlapping the agent), scored by ``turnscope score FILE --require refund`` in a fresh
process (reading, the verifier, its facts, the exercise; wall time of the command), and in
process with WER against a reference of the same turns (the whole ``score_outcome``). Target:
64k turns under 5 s, near-linear in turns.

Prints one table per kind; no assertion (the tests check behaviour, this measures it).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "recordings" / "refund-call.wav"
FLAT_MB = 100.0
SCORE_TARGET_S = 5.0

REPLAY_CHILD = r"""
import json, resource, sys, time
from turnscope.cli.main import main
from turnscope.asr.worker import asr_process_usage, start_asr_worker, stop_asr_worker
start_asr_worker()
t0 = time.perf_counter()
code = main(["replay", sys.argv[1], "-o", sys.argv[2], "-q", "--force"])
wall = time.perf_counter() - t0
call_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
asr_mb = asr_process_usage()[1]
stop_asr_worker()
turns = len(json.load(open(sys.argv[2] + "/transcript.json")).get("turns") or [])
print(json.dumps({"code": code, "wall_s": wall, "call_mb": call_mb, "asr_mb": asr_mb,
                  "peak_mb": call_mb + asr_mb, "turns": turns}))
"""

SCORE_CHILD = r"""
import json, sys, time
from turnscope.scoring.contract import Contract, Reference
from turnscope.scoring.outcome import score_outcome
from turnscope.scoring.wer import channel_texts
dialogue = json.load(open(sys.argv[1]))
contract = Contract(required_content=["refund"],
                    reference=Reference(texts=channel_texts(dialogue), turns=dialogue))
t0 = time.perf_counter()
outcome = score_outcome(dialogue, contract, evidence_class="local_gate")
wall = time.perf_counter() - t0
print(json.dumps({"wall_s": wall, "scalar": outcome.verifier["result"]["scalar"]}))
"""


def long_call(minutes: float, path: Path) -> Path:
    """The sample recording looped to ``minutes`` (whole repetitions, written block by block)."""
    audio, rate = sf.read(SAMPLE, dtype="float32")
    reps = int(np.ceil(minutes * 60 * rate / len(audio)))
    with sf.SoundFile(path, "w", rate, 2, format="FLAC") as f:
        for _ in range(reps):
            f.write(audio)
    return path


def transcript(turns: int, path: Path, seed: int = 0) -> Path:
    """``turns`` alternating turns, time-ordered with jitter: gaps, overlaps and interrupts."""
    rng = random.Random(seed)
    t, out = 0, []
    for i in range(turns):
        speaker = "caller" if i % 2 == 0 else "agent"
        start = max(0, t + rng.randint(-400, 1500))
        end = start + rng.randint(300, 3000)
        out.append(
            {
                "speaker": speaker,
                "start_ms": start,
                "end_ms": end,
                "text": "a refund within thirty days" if speaker == "agent" else "wait, what",
                "interrupt": speaker == "caller" and rng.random() < 0.1,
            }
        )
        t = end
    path.write_text(json.dumps(out))
    return path


def _json_tail(proc: subprocess.CompletedProcess) -> dict:
    if proc.returncode != 0:
        raise SystemExit(f"child failed ({proc.returncode}): {proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def replay(minutes: float, work: Path) -> dict:
    call = long_call(minutes, work / f"call-{minutes:g}.flac")
    out = work / f"out-{minutes:g}"
    proc = subprocess.run(
        [sys.executable, "-c", REPLAY_CHILD, str(call), str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    call.unlink()
    return {"minutes": minutes, **_json_tail(proc)}


def score(turns: int, work: Path) -> dict:
    path = transcript(turns, work / f"t{turns}.json")
    t0 = time.perf_counter()
    cli = subprocess.run(
        [sys.executable, "-m", "turnscope", "score", str(path), "--require", "refund"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    cli_s = time.perf_counter() - t0
    if cli.returncode not in (0, 1):
        raise SystemExit(f"turnscope score failed ({cli.returncode}): {cli.stderr.strip()}")
    proc = subprocess.run(
        [sys.executable, "-c", SCORE_CHILD, str(path)], capture_output=True, text=True, cwd=ROOT
    )
    return {"turns": turns, "cli_s": cli_s, **_json_tail(proc)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, nargs="*", default=[10.0, 60.0, 180.0])
    parser.add_argument("--turns", type=int, nargs="*", default=[1000, 16000, 64000])
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="turnscope-mem-"))

    if args.turns:
        rows = [score(n, work) for n in args.turns]
        print("| case | wall: `turnscope score` | wall: score_outcome with WER | per 1k turns | "
              f"under {SCORE_TARGET_S:g} s |")  # fmt: skip
        print("|---|---|---|---|---|")
        for r in rows:
            worst = max(r["cli_s"], r["wall_s"])
            print(
                f"| scoring {r['turns']} turns | {r['cli_s']:.2f} s | {r['wall_s']:.2f} s | "
                f"{1000 * r['wall_s'] / r['turns']:.3f} s | "
                f"{'yes' if worst < SCORE_TARGET_S else 'NO'} |"
            )
        print()

    if args.minutes:
        rows = []
        for minutes in sorted(args.minutes):
            rows.append(replay(minutes, work))
            print(f"(replayed {minutes:g} min)", file=sys.stderr, flush=True)
        base = rows[0]
        print(
            "| case | turns | wall | peak RSS: command + ASR process = sum | "
            f"vs {base['minutes']:g} min | within {FLAT_MB:g} MB |"
        )
        print("|---|---|---|---|---|---|")
        for r in rows:
            diff = r["peak_mb"] - base["peak_mb"]
            print(
                f"| {r['minutes']:g}-minute replay (exit {r['code']}) | {r['turns']} | "
                f"{r['wall_s']:.0f} s | {r['call_mb']:.0f} + {r['asr_mb']:.0f} = "
                f"{r['peak_mb']:.0f} MB | {diff:+.0f} MB ({r['peak_mb'] / base['peak_mb']:.2f}x) "
                f"| {'yes' if diff <= FLAT_MB else 'NO'} |"
            )


if __name__ == "__main__":
    main()
