"""How often turnscope's check of a phone agent's media payloads ("is this audio in the line's
codec?") flags real audio, and how often it catches the mistakes it is there for.

    .venv/bin/python benchmarks/payloads.py

Speech: the refund call's agent lines in espeak-ng en-gb (the reference agent's default) and in
the Piper voice joe-us, and the real people's clips of the speech corpus (LibriVox and praatio,
scripts/fetch_speech.py); each resampled to 8 kHz. Sent as an agent would send it, 20 ms per
message (160 samples): right (mu-law bytes on a mu-law line), and wrong (its 16-bit PCM sent raw
on a mu-law line; an MP3 file's frames). Printed per source and way of sending: the share of
messages each rule calls not audio, for the rule before and the rule now (capture/telephony/
codec.py). A call is degraded when the certain kinds (a file header) appear at all, or when the
guessed kind (noise) is 20% of its media or more.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import av
import numpy as np
import soxr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from benchmarks.realspeech import load_clips  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.actors.caller.speech import speak  # noqa: E402
from turnscope.capture.telephony.codec import codec  # noqa: E402

MSG = 160  # samples per 20 ms message at 8 kHz
OLD_ROUGHNESS = 1.4
OLD_CONTAINERS = (b"RIFF", b"OggS", b"ID3", b"fLaC", b"\xff\xf3", b"\xff\xfb")


def old_rule(payload: bytes) -> str | None:
    """The check as it was before 2026-12-04 (a mu-law line)."""
    if payload.startswith(OLD_CONTAINERS):
        return "file_header"
    x = codec("mulaw").decode(payload).astype(np.float32)
    level = float(np.mean(np.abs(x)))
    if level > 50 and float(np.mean(np.abs(np.diff(x)))) > OLD_ROUGHNESS * level:
        return "noise"
    return None


def new_rule(payload: bytes) -> str | None:
    found = codec("mulaw").diagnose(payload)
    return None if found is None else found[0].value


def speech_sources() -> dict[str, list[np.ndarray]]:
    """int16 speech at 8 kHz by source."""
    lines = [
        line.text
        for line in load_scenario(ROOT / "configs/scenarios/refund-call.yaml").script
        if line.speaker == "agent"
    ]
    out: dict[str, list[np.ndarray]] = {}
    for name, voice in (("espeak-ng en-gb", "en-gb"), ("piper joe-us", "piper:joe-us")):
        out[name] = [speak(t, voice=voice, sample_rate=8000) for t in lines]
    try:
        clips = load_clips()
        out["real people (corpus)"] = [
            soxr.resample(c.audio, 16000, 8000, quality="HQ") for c in clips.values()
        ]
    except Exception as exc:  # the corpus is a dev download
        print(f"(no real-speech corpus: {exc})")
    return {
        k: [(np.clip(x, -1, 1) * 32767 * 0.7).astype(np.int16) for x in v] for k, v in out.items()
    }


def messages(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data) - size + 1, size)]


def mp3_bytes(pcm: np.ndarray) -> bytes:
    """``pcm`` (int16, 8 kHz) as an MP3 file's frames (no ID3 tag)."""
    buf = io.BytesIO()
    with av.open(buf, "w", format="mp3") as out:
        stream = out.add_stream("mp3", rate=8000)
        frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = 8000
        for p in [*stream.encode(frame), *stream.encode(None)]:
            out.mux(p)
    data = buf.getvalue()
    return data[10 + int.from_bytes(data[6:10], "big") :] if data.startswith(b"ID3") else data


def share(payloads: list[bytes], rule) -> str:  # type: ignore[no-untyped-def]
    kinds = [rule(p) for p in payloads]
    n = len(payloads)
    head = sum(k == "file_header" for k in kinds)
    noise = sum(k == "noise" for k in kinds)
    return f"{noise / n:.1%} noise, {head} header"


def main() -> None:
    mulaw = codec("mulaw")
    print("| source | sent | messages | flagged before | flagged now |")
    print("|---|---|---|---|---|")
    for name, clips in speech_sources().items():
        pcm = np.concatenate(clips)
        ways = {
            "mu-law (right)": messages(mulaw.encode(pcm), MSG),
            "16-bit PCM raw (wrong)": messages(pcm.astype("<i2").tobytes(), MSG),
            "MP3 frames (wrong)": messages(mp3_bytes(pcm), MSG),
        }
        for way, payloads in ways.items():
            print(f"| {name} | {way} | {len(payloads)} | {share(payloads, old_rule)} | "
                  f"{share(payloads, new_rule)} |")  # fmt: skip


if __name__ == "__main__":
    main()
