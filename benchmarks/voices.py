"""How recognisable each caller voice is: caller-side WER of the shipped scenarios' caller lines
with the project's own ASR, per voice and condition, and each voice's synthesis speed.

    .venv/bin/python benchmarks/voices.py [--voices en-us,piper:joe-us] [--no-babble]

The lines: every spoken caller line of configs/scenarios/*.yaml (its text; a ``choose:`` line's
first branch; recorded ``audio:`` lines left out). Voices: espeak-ng en-us, espeak-ng in each
line's own scenario voice (the scenarios' accents), espeak-ng en-gb, en-gb-scotland and en-029,
and the Piper voice ``piper:joe-us`` when installed. Conditions: clean; telephone (8 kHz, G.712
300-3400 Hz, G.711 mu-law: ``conditions.telephone_channel``); 5% packet loss (20 ms packets
dropped to silence, no concealment; seeded per line); 15 dB babble (six other caller lines, each
in another espeak-ng voice, summed and set 15 dB below the line; seeded).

Each line is transcribed alone, as one utterance padded by the ASR's ``pad_ms`` of silence,
with ``transcribe_batch`` and the default settings (tiny.en, the Silero second opinion);
WER is pooled over the lines (scoring/wer.py). RTF: synthesis seconds / audio seconds, each
text spoken once (the first Piper line's time includes no model load: that is timed apart).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from turnscope.actors.caller import speech
from turnscope.actors.caller.conditions import telephone_channel
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.actors.caller.voices import piper
from turnscope.actors.caller.voices.spec import VoiceProblem, parse_voice
from turnscope.asr.events import Utterance
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import transcribe_batch
from turnscope.scoring.wer import pooled, score_words

ROOT = Path(__file__).resolve().parent.parent
SR = 16000
OWN = "scenario's own"  # each line in its scenario's espeak-ng voice
VOICES = ["en-us", OWN, "en-gb", "en-gb-scotland", "en-029", "piper:joe-us"]
BABBLE_VOICES = ["en-gb", "en-us+f3", "en-gb-x-rp", "en-us+m3", "en-029", "en-gb-scotland"]
BABBLE_SNR_DB = 15.0
LOSS = 0.05


@dataclass(frozen=True)
class CallerText:
    scenario: str
    text: str
    voice: str  # the scenario's voice for it


def caller_texts() -> list[CallerText]:
    out = []
    for path in sorted((ROOT / "configs" / "scenarios").glob("*.yaml")):
        sc = load_scenario(path)
        for line in sc.script:
            if line.speaker == "caller" and line.spoken and line.audio is None:
                out.append(CallerText(sc.name, line.text, line.voice or sc.caller.voice))
    return out


def babble(lines: list[CallerText], k: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """Six other lines in six espeak-ng voices, looped to ``n`` samples and summed."""
    others = [j for j in range(len(lines)) if j != k]
    mix = np.zeros(n)
    picks = rng.choice(others, len(BABBLE_VOICES), replace=False)
    for voice, j in zip(BABBLE_VOICES, picks, strict=True):
        x = speech.speak(lines[j].text, voice=voice).astype(np.float64)
        x = np.tile(x, n // x.size + 2)
        start = int(rng.integers(0, x.size - n))
        mix += x[start : start + n] / np.sqrt(np.mean(x * x))
    return mix


def packet_loss(x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``x`` with each 20 ms packet lost (silence, no concealment) with probability 5%."""
    y = x.copy()
    frame = SR // 50
    for start in range(0, y.size, frame):
        if rng.random() < LOSS:
            y[start : start + frame] = 0.0
    return y


def conditions(x: np.ndarray, noise: np.ndarray | None, k: int) -> dict[str, np.ndarray]:
    out = {"clean": x, "telephone": telephone_channel(x, SR)}
    out[f"{LOSS:.0%} loss"] = packet_loss(x, np.random.default_rng(1000 + k))
    if noise is not None:
        gain = np.sqrt(np.mean(x.astype(np.float64) ** 2) / np.mean(noise**2))
        y = x + noise * gain * 10 ** (-BABBLE_SNR_DB / 20)
        out[f"babble {BABBLE_SNR_DB:g} dB"] = (y / max(1.0, np.abs(y).max())).astype(np.float32)
    return out


def padded(x: np.ndarray, pad_ms: int) -> Utterance:
    pad = np.zeros(pad_ms * SR // 1000, np.float32)
    audio = np.concatenate([pad, x.astype(np.float32), pad])
    return Utterance("caller", 0, pad_ms, pad_ms + 1000 * x.size / SR, (), 0.0, audio)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default=",".join(VOICES), help="comma-separated")
    parser.add_argument("--no-babble", action="store_true")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    settings = load_settings()
    lines = caller_texts()
    words = sum(len(t.text.split()) for t in lines)
    print(f"{len(lines)} caller lines, {words} words, {len({t.scenario for t in lines})} "
          f"scenarios; ASR {settings.asr.model} (the project's settings)")  # fmt: skip
    rng = np.random.default_rng(args.seed)
    noises = (
        [None] * len(lines)
        if args.no_babble
        else [babble(lines, k, 16 * SR, rng) for k in range(len(lines))]
    )
    transcribe_batch([(padded(np.zeros(SR, np.float32), 100), None)], settings.asr)  # loaded
    rows = []
    for voice in args.voices.split(","):
        if voice.startswith("piper:"):
            try:
                ref = parse_voice(voice)
            except VoiceProblem as exc:
                print(f"{voice}: skipped ({exc})")
                continue
            t0 = time.perf_counter()
            piper.load(ref)
            print(f"{voice}: model loaded in {time.perf_counter() - t0:.2f} s")
        speech._synthesize.cache_clear()  # every text spoken afresh (the babble spoke some)
        synth_s = audio_s = 0.0
        scores: dict[str, list] = {}
        for k, line in enumerate(lines):
            v = line.voice if voice == OWN else voice
            t0 = time.perf_counter()
            x = speech.speak(line.text, voice=v)
            synth_s += time.perf_counter() - t0
            audio_s += x.size / SR
            noise = None if noises[k] is None else noises[k][: x.size]
            for cond, y in conditions(x, noise, k).items():
                utt = padded(y, settings.asr.pad_ms)
                tr = transcribe_batch([(utt, None)], settings.asr, settings.confirm)[0]
                scores.setdefault(cond, []).append(score_words(line.text, tr.text))
        wers = {c: pooled(s).wer for c, s in scores.items()}
        rows.append((voice, wers, synth_s / audio_s))
    conds = list(rows[0][1]) if rows else []
    header = ["caller voice", *(f"WER {c}" for c in conds), "synthesis RTF"]
    print()
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for voice, wers, rtf in rows:
        cells = [voice, *(f"{wers[c]:.3f}" for c in conds), f"{rtf:.3f}"]
        print("| " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
