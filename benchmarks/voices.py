"""How recognisable each caller voice is on each line condition, where the endpointer puts its
turns, and whether live calls with the neural voice and a noise bed keep their caller audio on
time.

    .venv/bin/python benchmarks/voices.py [--voices en-us,piper:joe-us] [--no-live]

The lines: every spoken caller line of configs/scenarios/*.yaml (its text; a ``choose:`` line's
first branch; recorded ``audio:`` lines left out). Voices: espeak-ng en-us, espeak-ng in each
line's own scenario voice (the scenarios' accents), and the Piper voice ``piper:joe-us``.
Conditions, made by the live caller's own code (actors/caller/acoustics.py, seed 11): clean;
15 dB babble (the generated six-talker bed); the telephone line (8 kHz, G.712 300-3400 Hz,
G.711 mu-law); 5% packet loss (20 ms packets, the speech lost, no concealment).

Per voice and condition the lines are put on one caller channel, 2.5 s apart, as a live call's
caller track sends them (each line's clip, its tail after it, the bed all along, packets lost
in place). WER: each line cut from that channel with the ASR's ``pad_ms`` either side (the
noise included), transcribed alone with ``transcribe_batch`` and the default settings (tiny.en,
the Silero second opinion), pooled over the lines (scoring/wer.py). Boundaries: the channel
through the endpointer (default settings, fed in 200 ms chunks), each line's utterance start
and end against the line's send record (the truth: the speech's own extent); median and p90 of
the absolute error, lines missed (no utterance overlaps) and split (more than one), and extra
utterances (overlapping no line: the noise taken for the caller). RTF:
synthesis seconds / audio seconds, each text spoken once (a Piper voice's load timed apart).

Live (unless --no-live; only them with --live-only): ``turnscope load`` places 8 calls at once
(one event loop per core) against the reference agent, the caller the neural voice on an office
bed at 15 dB through G.711 with 2% loss, on street noise at 12 dB through G.711 with 3% loss (the
lossy noisy line that once made the agent take the noise for the caller and skip its greeting),
on a babble bed at 15 dB through G.711 with 2% loss, and without acoustics; the caller's worst
frame send lag and its frames over 20 ms late (capture/player.py), and what the agent made of
the caller: calls passed, barge-ins exercised, caller lines left unanswered, calls whose
evidence is degraded (an agent that ran ahead of the script among them). Note the load average
beside them: under load a lag is a ceiling.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from common import endpointed

from turnscope.actors.caller import acoustics, speech
from turnscope.actors.caller.acoustic_keys import Acoustics, Telephone
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.actors.caller.voices import piper
from turnscope.actors.caller.voices.spec import VoiceProblem, parse_voice
from turnscope.asr.events import Utterance
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import transcribe_batch
from turnscope.capture.frames import to_int16
from turnscope.scoring.wer import pooled, score_words

ROOT = Path(__file__).resolve().parent.parent
SR = 16000
OWN = "scenario's own"  # each line in its scenario's espeak-ng voice
VOICES = ["en-us", OWN, "piper:joe-us"]
SEED = 11
CONDITIONS = {
    "clean": None,
    "babble 15 dB": Acoustics(noise="babble", snr_db=15, seed=SEED),
    "telephone": Acoustics(telephone=Telephone.G711, seed=SEED),
    "5% loss": Acoustics(loss=0.05, seed=SEED),
}
GAP_S = 2.5
CHUNK = 3200  # 200 ms, as a fast replay feeds the endpointer
LIVE_CALLS = 8
LIVE_LINES = {  # the caller's line on the live rows: its acoustics keys
    "neural, office bed, g711, 2% loss": "noise: office, snr_db: 15, telephone: g711, "
    "loss: 0.02, seed: 3",
    "neural, street 12 dB, g711, 3% loss": "noise: street, snr_db: 12, telephone: g711, "
    "loss: 0.03, seed: 4",
    "neural, babble 15 dB, g711, 2% loss": "noise: babble, snr_db: 15, telephone: g711, "
    "loss: 0.02, seed: 5",
}


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


def channel(clips: list[np.ndarray], a: Acoustics | None) -> tuple[np.ndarray, list]:
    """The clips on one caller channel, ``GAP_S`` apart, as a live caller track sends them;
    and each clip's (start, end) sample: its send record."""
    level = round(acoustics.speech_level(clips), 6)
    bed = acoustics.Bed(
        None if a is None else acoustics.bed_loop(a, level, SR),
        None if a is None else acoustics.lost_packets(a),
        SR,
    )
    gap = round(GAP_S * SR)
    total = sum(c.size for c in clips) + gap * (len(clips) + 1)
    total += (-total) % 320
    sig = np.zeros(total, np.int32)
    truth = []
    pos = gap
    for c in clips:
        sig[pos : pos + c.size] = to_int16(np.asarray(c))
        truth.append((pos, pos + c.size))
        tail = getattr(c, "tail", None)
        if tail is not None:
            end = min(total, pos + c.size + tail.size)
            sig[pos + c.size : end] += to_int16(tail)[: end - pos - c.size]
        pos += c.size + gap
    sig = np.clip(sig, -32768, 32767).astype(np.int16)
    out = np.concatenate([bed.mix(sig[k : k + 320], k) for k in range(0, total, 320)])
    return out, truth


def boundaries(pcm: np.ndarray, truth: list, settings) -> dict[str, float]:
    """Each line's utterance edges against its truth, in ms: median and p90 abs error,
    missed and split lines."""
    utts = [(u.start_ms, u.end_ms) for u in endpointed(pcm, "caller", settings, chunk=CHUNK)]
    starts, ends, missed, split = [], [], 0, 0
    extra = sum(1 for u in utts if not any(u[0] < e / 16 and u[1] > s / 16 for s, e in truth))
    for s, e in truth:
        s_ms, e_ms = s / 16, e / 16
        hits = [u for u in utts if u[0] < e_ms and u[1] > s_ms]
        if not hits:
            missed += 1
            continue
        split += len(hits) > 1
        starts.append(abs(hits[0][0] - s_ms))
        ends.append(abs(hits[-1][1] - e_ms))
    both = starts + ends
    return {
        "start_p50": float(np.median(starts)) if starts else float("nan"),
        "end_p50": float(np.median(ends)) if ends else float("nan"),
        "p90": float(np.percentile(both, 90)) if both else float("nan"),
        "missed": missed,
        "split": split,
        "extra": extra,
    }


def cut(pcm: np.ndarray, span: tuple[int, int], pad_ms: int, k: int) -> Utterance:
    pad = pad_ms * SR // 1000
    lo, hi = max(0, span[0] - pad), min(pcm.size, span[1] + pad)
    audio = pcm[lo:hi].astype(np.float32) / 32768.0
    return Utterance("caller", k, span[0] / 16, span[1] / 16, (), 0.0, audio, lo / 16)


def live_rows(args: argparse.Namespace) -> list[tuple[str, dict, float]]:
    """8 calls at once against the reference agent, the neural caller on each line and plain."""
    rows = []
    script = (ROOT / "configs" / "scenarios" / "refund-call.yaml").read_text()
    neural = script.replace("caller:\n  voice: en-us\n", "caller:\n  voice: 'piper:joe-us'\n", 1)
    lines = {label: neural.replace("caller:\n", f"caller:\n  acoustics: {{{keys}}}\n", 1)
             for label, keys in LIVE_LINES.items()}  # fmt: skip
    assert neural != script and all(text != neural for text in lines.values())
    for label, text in [*lines.items(), ("neural, plain", neural)]:
        with tempfile.TemporaryDirectory() as tmp:
            sc = Path(tmp) / "s.yaml"
            sc.write_text(text)
            agent = subprocess.Popen(
                [sys.executable, "-m", "turnscope", "agent", "--port", str(args.port),
                 "--scenario", str(sc)],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            )  # fmt: skip
            try:
                agent.stdout.readline()
                out = Path(tmp) / "load"
                subprocess.run(
                    [sys.executable, "-m", "turnscope", "load",
                     f"http://127.0.0.1:{args.port}/api/offer", "--scenario", str(sc),
                     "-n", str(LIVE_CALLS), "--rate", f"{LIVE_CALLS}/s", "--loopback-only",
                     "-o", str(out), "-q", "--json"],
                    capture_output=True, text=True, check=False, timeout=600,
                )  # fmt: skip
                report = json.loads((out / "load.json").read_text())
            finally:
                agent.terminate()
                agent.wait(10)
        rows.append((label, report, os.getloadavg()[0]))
    return rows


def find(doc: dict, key: str):
    """``key``'s value anywhere in ``doc`` (load.json nests the harness's health)."""
    if isinstance(doc, dict):
        if key in doc:
            return doc[key]
        for v in doc.values():
            found = find(v, key)
            if found is not None:
                return found
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--voices", default=",".join(VOICES), help="comma-separated")
    parser.add_argument("--no-live", action="store_true")
    parser.add_argument("--live-only", action="store_true", help="only the live rows")
    parser.add_argument("--port", type=int, default=18931)
    args = parser.parse_args()
    settings = load_settings()
    lines = caller_texts()
    words = sum(len(t.text.split()) for t in lines)
    print(f"{len(lines)} caller lines, {words} words, {len({t.scenario for t in lines})} "
          f"scenarios; ASR {settings.asr.model} (the project's settings); load "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    if not args.live_only:
        offline_rows(args, lines, settings)
    if not args.no_live:
        print_live(args)


def offline_rows(args: argparse.Namespace, lines: list[CallerText], settings) -> None:
    """Each voice x condition: WER, the endpointer's edges, and the synthesis RTF."""
    transcribe_batch([(cut(np.zeros(SR, np.int16), (0, SR), 100, 0), None)], settings.asr)
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
        speech._synthesize.cache_clear()  # every text spoken afresh
        synth_s = audio_s = 0.0
        dry = []
        for line in lines:
            t0 = time.perf_counter()
            x = speech.speak(line.text, voice=line.voice if voice == OWN else voice)
            synth_s += time.perf_counter() - t0
            audio_s += x.size / SR
            dry.append(x)
        for cond, a in CONDITIONS.items():
            clips = [acoustics.process(x, a, SEED, t.text) for x, t in zip(dry, lines, strict=True)]
            pcm, truth = channel(clips, a)
            jobs = [(cut(pcm, span, settings.asr.pad_ms, k), None) for k, span in enumerate(truth)]
            trs = transcribe_batch(jobs, settings.asr, settings.confirm)
            scores = [score_words(t.text, tr.text) for t, tr in zip(lines, trs, strict=True)]
            rows.append((voice, cond, pooled(scores).wer, boundaries(pcm, truth, settings)))
        rows.append((voice, "rtf", synth_s / audio_s, {}))
        print(f"{voice}: done ({os.getloadavg()[0]:.1f} load)", flush=True)
    print()
    print("| caller voice | condition | WER | start err p50 ms | end err p50 ms | p90 ms | "
          "missed | split | extra |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for voice, cond, wer, b in rows:
        if cond == "rtf":
            continue
        print(f"| {voice} | {cond} | {wer:.3f} | {b['start_p50']:.0f} | {b['end_p50']:.0f} | "
              f"{b['p90']:.0f} | {b['missed']} | {b['split']} | {b['extra']} |")  # fmt: skip
    print()
    print("| caller voice | synthesis RTF |")
    print("|---|---|")
    for voice, cond, rtf, _ in rows:
        if cond == "rtf":
            print(f"| {voice} | {rtf:.3f} |")


def print_live(args: argparse.Namespace) -> None:
    """The live rows' table: the caller's timing, then what the agent made of the caller."""
    print()
    print(f"| {LIVE_CALLS} live calls at once | caller max send lag ms | frames > 20 ms late | "
          "calls > 200 ms late | passed | barge-ins exercised | unanswered lines | "
          "degraded calls | load avg |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|")
    for label, report, load in live_rows(args):
        lag = find(report, "caller_max_send_lag_ms")
        degraded = sum(1 for c in report["calls"] if c.get("degraded"))
        passed = f"{report['passed']}/{report['placed']}"
        print(f"| {label} | {lag} | {find(report, 'caller_late_frames')} | "
              f"{find(report, 'calls_caller_audio_late')} | {passed} | "
              f"{report['barge_ins_exercised']}/{report['barge_ins_planned']} | "
              f"{report['unanswered_turns']} | {degraded} | {load:.1f} |")  # fmt: skip


if __name__ == "__main__":
    main()
