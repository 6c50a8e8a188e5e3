"""Two channels that hold one recording: how far apart a call's parties and its copies are, and
what the check costs.

    .venv/bin/python benchmarks/channels_alike.py [--corpus DIR]

Table 1: the highest 10 ms envelope correlation within +-150 ms (asr/audio_checks.py's
``channels_alike``) over every two-channel call of the labelled corpus (``.turnscope/
bench-corpus``: the synthetic calls and the real-speech ones) and the sample call, as recorded
and made into what a user may hand over by mistake: the two channels mixed and given as both
(a mono recording), the caller's channel with a 40 ms or 100 ms delayed copy as the agent's,
and, as a genuine call that must stay apart, the agent's channel with the caller's echo in it
(-10 dB, 40 ms late). Flagged: at or above ``ALIKE``.

Table 2: CPU time of ``AudioChecks.add`` (both channels, 20 ms frames as a live call's and 200 ms
as a fast replay's) over a 10-minute stereo call with the envelope and without it (the zero-run
bookkeeping alone, as before), and of the comparison itself.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import numpy as np
import soundfile as sf

from turnscope.asr import audio_checks
from turnscope.asr.audio_checks import ALIKE, AudioChecks, channels_alike

ROOT = Path(__file__).resolve().parent.parent
FRAME = 320


def _checks(caller: np.ndarray, agent: np.ndarray) -> tuple[AudioChecks, AudioChecks]:
    out = []
    for name, x in (("caller", caller), ("agent", agent)):
        c = AudioChecks(name)
        pcm = np.clip(x * 32767, -32768, 32767).astype(np.int16)
        for k in range(0, len(pcm), FRAME):
            c.add(k, pcm[k : k + FRAME])
        out.append(c)
    return out[0], out[1]


def _delay(x: np.ndarray, ms: float) -> np.ndarray:
    n = int(ms * 16)
    return np.concatenate([np.zeros(n, dtype=x.dtype), x[: len(x) - n]])


def variants(caller: np.ndarray, agent: np.ndarray) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    mix = 0.5 * (caller + agent)
    return {
        "as recorded": (caller, agent),
        "echo -10 dB": (caller, agent + 0.316 * _delay(caller, 40)),
        "mono mix as both": (mix, mix),
        "copy +40 ms": (caller, _delay(caller, 40)),
        "copy +100 ms": (caller, _delay(caller, 100)),
        "mix, agent +40 ms": (mix, _delay(mix, 40)),
    }


def corpus(root: Path) -> list[Path]:
    calls = sorted(root.glob("*/call.wav")) if root.is_dir() else []
    return [ROOT / "recordings" / "refund-call.wav", *calls]


def table1(paths: list[Path]) -> None:
    rows: dict[str, list[float]] = {}
    flagged: dict[str, int] = {}
    for path in paths:
        audio, rate = sf.read(path, dtype="float32", always_2d=True)
        assert rate == 16000, path
        for name, (c, a) in variants(audio[:, 0], audio[:, 1]).items():
            alike = channels_alike(*_checks(c, a))
            r = alike.correlation if alike else _best(c, a)
            rows.setdefault(name, []).append(r)
            flagged[name] = flagged.get(name, 0) + (alike is not None)
    print(f"{len(paths)} calls; flagged at correlation >= {ALIKE}")
    print("| variant | min | median | max | flagged |")
    print("| --- | --- | --- | --- | --- |")
    for name, rs in rows.items():
        print(
            f"| {name} | {min(rs):.3f} | {statistics.median(rs):.3f} | {max(rs):.3f} | "
            f"{flagged[name]} of {len(rs)} |"
        )


def _best(caller: np.ndarray, agent: np.ndarray) -> float:
    """The highest correlation over the lags, below the flag (the check returns None there)."""
    saved = audio_checks.ALIKE
    audio_checks.ALIKE = -2.0
    try:
        alike = channels_alike(*_checks(caller, agent))
    finally:
        audio_checks.ALIKE = saved
    return alike.correlation if alike else float("nan")


def _zeros_only(channel: str) -> AudioChecks:
    """The checks as they were (and as a live call has them): zero runs only, no envelope."""
    return AudioChecks(channel, envelope=False)


def table2(path: Path, repeats: int = 3) -> None:
    audio, _ = sf.read(path, dtype="float32", always_2d=True)
    reps = int(np.ceil(600 * 16000 / len(audio)))
    long = np.tile(audio, (reps, 1))[: 600 * 16000]
    pcm = np.clip(long * 32767, -32768, 32767).astype(np.int16)
    cost = {}
    for frame_ms in (20, 200):  # a live call's frames; a fast replay's chunks
        n = frame_ms * 16
        for name, cls in (("zero runs only", _zeros_only), ("zero runs + envelope", AudioChecks)):
            best = float("inf")
            for _ in range(repeats):
                checks = [cls("caller"), cls("agent")]
                t = time.process_time()
                for k in range(0, len(pcm), n):
                    for ch, c in enumerate(checks):
                        c.add(k, pcm[k : k + n, ch])
                best = min(best, time.process_time() - t)
            cost[f"AudioChecks.add, {frame_ms} ms frames, {name}"] = best
    t = time.process_time()
    channels_alike(checks[0], checks[1])
    cost["channels_alike (31 lags)"] = time.process_time() - t
    print("\n10-minute stereo call, both channels (best of 3, CPU s)")
    print("| what | CPU s | x real time |")
    print("| --- | --- | --- |")
    for name, s in cost.items():
        print(f"| {name} | {s:.3f} | {s / 600:.5f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT / ".turnscope" / "bench-corpus")
    args = ap.parse_args()
    paths = corpus(args.corpus)
    table1(paths)
    table2(paths[0])


if __name__ == "__main__":
    main()
