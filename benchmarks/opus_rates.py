"""Recorded replies in a call kept as Ogg/Opus, at every bit rate a call recorder may use.

    .venv/bin/python benchmarks/opus_rates.py [--rates 8000,16000,64000] [--shifts 0,3,7]

The real-speech clips (room tone kept), one after another between digital silence on the agent
side, are stored as Ogg/Opus at each bit rate (0: the WAV itself), decoded as a replay decodes a
user's file (FFmpeg, then soxr to 16 kHz) and run through the endpointer, each at several places
on the VAD's 10 ms grid. Errors are |found - annotated| per reply; "bobby" is shown apart: its
annotation starts at the burst after 40 ms of voicing and ends 43 ms before its voice does (see
docs/benchmarks.md), so its errors are the annotation's.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
from common import endpointed
from realspeech import Clip, between_silence, load_clips, write_opus

from turnscope.asr.settings import Settings, load_settings
from turnscope.capture.file.decode import Resampler, open_audio
from turnscope.capture.frames import to_int16

CLIPS = ["mary", "L0870", "L0880", "L0890", "L0920", "L0930", "bobby"]
RATE = 16000


def _decoded(agent: np.ndarray, bps: int, folder: Path) -> np.ndarray:
    if not bps:
        return agent
    path = folder / f"call-{bps}.ogg"
    write_opus(path, np.stack([np.zeros_like(agent), agent], axis=1), bps)
    reader = open_audio(path)
    audio = np.concatenate(list(reader.blocks()))[:, 1]
    return Resampler(reader.rate, RATE)(audio, last=True)


def _utterances(audio: np.ndarray, settings: Settings) -> list[tuple[float, float]]:
    return [(u.start_ms, u.end_ms) for u in endpointed(to_int16(audio), "agent", settings)]


def _row(
    bps: int, shifts: list[int], clips: dict[str, Clip], settings: Settings, folder: Path
) -> str:
    errors: dict[str, list[float]] = {}
    worst_clip, odd = ("", 0.0), 0
    for shift in shifts:
        agent, truth = between_silence(clips, CLIPS, shift)
        found = _utterances(_decoded(agent, bps, folder), settings)
        odd += len(found) - len(truth)
        for name, s, e in truth:
            hit = [(a, b) for a, b in found if a < e and b > s]
            if len(hit) != 1:
                odd += 1
                continue
            key = "bobby" if name == "bobby" else "others"
            for side, err in (("start", hit[0][0] - s), ("end", hit[0][1] - e)):
                errors.setdefault(key, []).append(abs(err))
                if key == "others" and abs(err) > worst_clip[1]:
                    worst_clip = (f"{name} {side} {err:+.0f} ms at +{shift} ms", abs(err))
    o, b = np.array(errors.get("others", [0])), np.array(errors.get("bobby", [0]))
    spread = f"{np.median(o):.0f} / {np.percentile(o, 95):.0f} / {o.max():.0f} ms"
    rate = bps // 1000 if bps else "WAV"
    apart = f"{np.median(b):.0f} / {b.max():.0f} ms"
    return f"| {rate} | {odd} | {spread} | {worst_clip[0]} | {apart} |"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rates", default="0,8000,10000,12000,16000,24000,32000,48000,64000")
    p.add_argument("--shifts", default="0,3,7", help="places on the VAD's grid, ms")
    args = p.parse_args()
    shifts = [int(s) for s in args.shifts.split(",")]
    print(f"{len(CLIPS)} recorded replies between digital silence, at +{shifts} ms on the grid")
    print("| kbit/s | missed + extra | others: boundary |err| median / p95 / max | their worst "
          "| bobby: median / max |")  # fmt: skip
    print("|---|---|---|---|---|")
    clips, settings = load_clips(), load_settings()
    with tempfile.TemporaryDirectory() as tmp:
        for bps in (int(r) for r in args.rates.split(",")):
            print(_row(bps, shifts, clips, settings, Path(tmp)), flush=True)


if __name__ == "__main__":
    main()
