"""Accuracy and cost of the replay pipeline on a labelled synthetic corpus and on recorded human
speech, side by side with faster-whisper on its own. Prints one table.

    .venv/bin/python benchmarks/accuracy.py [--quick] [--settings FILE] [--corpus DIR]

Synthetic rows, per condition (clean, 10 dB pink noise, 8 kHz mu-law telephone band), over every
shipped scenario and several espeak-ng voice pairs; real rows, per condition (as recorded,
telephone band, 15 and 10 dB pink noise; recorded prompts between digital silence, as a WAV and
as Ogg/Opus at 64 and 16 kbit/s), over two-channel calls composed from recordings of real people
with human-annotated truth (benchmarks/realspeech.py says which and how):
- turn boundary error vs ground truth (median / p95 of |start| and |end|, ms), ours and
  faster-whisper's Silero VAD (`get_speech_timestamps`, default options) on the same channels;
- interrupt (barge-in) and backchannel precision / recall;
- WER of the turn-segmented pipeline vs faster-whisper transcribing each whole channel;
- the pipeline's real-time factor in this process and the endpointer's own speed (x real
  time). Speed against faster-whisper is measured whole-process, with its ``vad_filter=True``
  (the baseline a user would pick): benchmarks/replay_speed.py (one call) and
  benchmarks/suite_speed.py (a suite of 45).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import (
    CONDITIONS,
    SCENARIOS,
    VOICE_PAIRS,
    CorpusCall,
    boundary_errors,
    build_corpus,
    match,
    prf,
    stat,
)
from realspeech import REAL_CONDITIONS, RealCall, build_real_corpus

from turnscope.asr.endpointer import Endpointer
from turnscope.asr.model import load_whisper
from turnscope.asr.settings import Settings, load_settings
from turnscope.asr.transcriber import Transcriber, model_spec
from turnscope.capture.file.source import FileSource
from turnscope.capture.frames import PcmFrame, samples_to_ms, to_int16
from turnscope.offline import ensure_offline
from turnscope.pipeline import run_pipeline
from turnscope.scoring.wer import measure_wer, pooled


def run_ours(call: CorpusCall | RealCall, settings: Settings, transcriber: Transcriber) -> dict:
    source = FileSource.stereo(call.wav, chunk_ms=max(settings.audio.chunk_ms, 200))
    t0 = time.perf_counter()
    result = asyncio.run(run_pipeline(source, settings, transcriber=transcriber))
    wall = time.perf_counter() - t0
    turns = [t.to_dict() for t in result.assembly.turns]
    for t, raw in zip(turns, result.assembly.turns, strict=True):
        t["start_ms"], t["end_ms"] = raw.start_ms, raw.end_ms  # sub-ms precision for errors
    backchannels = [b.to_dict() for b in result.assembly.backchannels]
    heard_text = {
        ch: " ".join(h.text for h in result.heard if h.channel == ch) for ch in ("caller", "agent")
    }
    return {
        "turns": turns,
        "backchannels": backchannels,
        "text": heard_text,
        "wall": wall,
        "audio_ms": result.audio_ms,
    }


def endpoint_only(audio: np.ndarray, settings: Settings) -> float:
    """Seconds the two endpointers alone take over the call (20 ms frames, as a live call)."""
    pcm = {ch: to_int16(audio[:, i]) for i, ch in enumerate(("caller", "agent"))}
    eps = {ch: Endpointer(ch, settings.vad, settings.refine) for ch in pcm}
    t0 = time.perf_counter()
    n = len(pcm["caller"])
    for i in range(0, n, 320):
        for ch, ep in eps.items():
            ep.push(PcmFrame(ch, i, pcm[ch][i : i + 320]))
    for ep in eps.values():
        ep.flush()
    return time.perf_counter() - t0


def faster_whisper_alone(
    audio: np.ndarray, settings: Settings, *, greedy: bool = False, vad: bool = False
) -> tuple[dict, float]:
    """faster-whisper transcribing each whole channel directly: texts and wall seconds.

    Its defaults, or with ``greedy`` the pipeline's own decoding (``asr.temperature``, no
    sampling fallback): the defaults re-decode poor windows by random sampling, so that
    baseline's WER moves from run to run in noise (0.239-0.254 at 10 dB, 0.416-0.475 on the
    telephone band, this corpus); the greedy one is repeatable and differs from ours only in
    the segmentation and our per-utterance context (``asr.context_*``).
    """
    model = load_whisper(model_spec(settings.asr))
    texts = {}
    extra: dict = {"temperature": list(settings.asr.temperature)} if greedy else {}
    if vad:
        extra["vad_filter"] = True  # its Silero VAD: the baseline a user would pick
    t0 = time.perf_counter()
    for i, ch in enumerate(("caller", "agent")):
        segments, _ = model.transcribe(
            np.ascontiguousarray(audio[:, i]),
            language=settings.asr.language,
            beam_size=settings.asr.beam_size,
            chunk_length=30,  # faster-whisper's default, set explicitly: the model keeps the last
            **extra,
        )
        texts[ch] = " ".join(s.text.strip() for s in segments)
    return texts, time.perf_counter() - t0


def silero_segments(audio: np.ndarray, *, pad_ms: int | None = None) -> list[dict]:
    """faster-whisper's own VAD timestamps as turns (default options unless pad is given)."""
    from faster_whisper.vad import VadOptions, get_speech_timestamps

    opts = VadOptions() if pad_ms is None else VadOptions(speech_pad_ms=pad_ms)
    out = []
    for i, ch in enumerate(("caller", "agent")):
        for s in get_speech_timestamps(np.ascontiguousarray(audio[:, i]), opts):
            out.append(
                {
                    "speaker": ch,
                    "start_ms": samples_to_ms(s["start"]),
                    "end_ms": samples_to_ms(s["end"]),
                }
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path(".turnscope/bench-corpus"))
    parser.add_argument("--settings", type=Path, default=None)
    parser.add_argument("--quick", action="store_true", help="one voice pair, three scenarios")
    parser.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    parser.add_argument("--no-baseline", action="store_true", help="skip faster-whisper alone")
    parser.add_argument("--no-real", action="store_true", help="the synthetic corpus only")
    parser.add_argument("--real-only", action="store_true", help="the recorded speech only")
    args = parser.parse_args()
    ensure_offline()
    settings = load_settings(args.settings)
    pairs = VOICE_PAIRS[:1] if args.quick else VOICE_PAIRS
    scenarios = SCENARIOS[:3] if args.quick else SCENARIOS
    t0 = time.perf_counter()
    calls: list[CorpusCall | RealCall] = []
    if not args.real_only:
        calls += build_corpus(args.corpus, scenarios=scenarios, voice_pairs=pairs)
    if not args.no_real:
        calls += build_real_corpus(args.corpus)
    print(f"corpus: {len(calls)} calls in {args.corpus} ({time.perf_counter() - t0:.0f} s)")
    transcriber = Transcriber(settings.asr, settings.confirm)
    transcriber.warm_up()
    agg: dict[str, dict] = defaultdict(lambda: defaultdict(list))
    for call in calls:
        audio, rate = sf.read(call.wav, dtype="float32")  # an Ogg/Opus call decodes at 48 kHz
        audio = audio if rate == 16000 else soxr.resample(audio, rate, 16000)
        ours = run_ours(call, settings, transcriber)
        a = agg[row_name(call)]
        truth_turns = call.truth["turns"]
        pairs_ = match(truth_turns, ours["turns"])
        s, e = boundary_errors(pairs_)
        a["start"] += s
        a["end"] += e
        a["both"] += s + e
        a["missed"].append(sum(1 for _, f in pairs_ if f is None))
        a["truth_turns"].append(len(truth_turns))
        matched = {id(f) for _, f in pairs_ if f is not None}
        a["extra"].append(sum(1 for f in ours["turns"] if id(f) not in matched))
        for pad, key in ((None, "fw"), (0, "fw0")):
            fs, fe = boundary_errors(match(truth_turns, silero_segments(audio, pad_ms=pad)))
            a[f"{key}_start"] += fs
            a[f"{key}_end"] += fe
            a[f"{key}_both"] += fs + fe
        # interrupts over caller turns
        tp = fp = fn = 0
        for t, f in pairs_:
            if t["speaker"] != "caller":
                continue
            pred = bool(f and f["interrupt"])
            tp += pred and t["interrupt"]
            fn += t["interrupt"] and not pred
            fp += pred and not t["interrupt"]
        fp += sum(
            1
            for f in ours["turns"]
            if f["speaker"] == "caller" and f["interrupt"] and id(f) not in matched
        )
        a["int"].append((tp, fp, fn))
        bc_pairs = match(call.truth["backchannels"], ours["backchannels"])
        btp = sum(1 for _, f in bc_pairs if f is not None)
        a["bc"].append((btp, len(ours["backchannels"]) - btp, len(bc_pairs) - btp))
        reference = {
            ch: " ".join(u["text"] for u in call.truth["utterances"] if u["speaker"] == ch)
            for ch in ("caller", "agent")
        }
        a["wer_ours"].append(measure_wer(reference, ours["text"]).overall)
        a["wall_ours"].append(ours["wall"])
        a["audio_s"].append(ours["audio_ms"] / 1000)
        a["ep_s"].append(endpoint_only(audio, settings))
        if not args.no_baseline:
            texts, _ = faster_whisper_alone(audio, settings)
            a["wer_fw"].append(measure_wer(reference, texts).overall)
            greedy, _ = faster_whisper_alone(audio, settings, greedy=True)
            a["wer_fw_greedy"].append(measure_wer(reference, greedy).overall)
            vad_texts, _ = faster_whisper_alone(audio, settings, vad=True)
            a["wer_fw_vad"].append(measure_wer(reference, vad_texts).overall)
        print(f"  {call.name}: {ours['wall']:.1f} s", flush=True)
    rows = []
    names = [f"synthetic {c}" for c in CONDITIONS] + [f"real {c}" for c in REAL_CONDITIONS]
    for cond in names:
        if cond not in agg:
            continue
        a = agg[cond]
        ip, ir = prf(*map(sum, zip(*a["int"], strict=True)))
        bp, br = prf(*map(sum, zip(*a["bc"], strict=True)))
        row = {
            "condition": cond,
            "calls": len(a["audio_s"]),
            "turns": sum(a["truth_turns"]),
            "missed": sum(a["missed"]),
            "extra": sum(a["extra"]),
            "start_med": stat(a["start"], 50),
            "start_p95": stat(a["start"], 95),
            "end_med": stat(a["end"], 50),
            "end_p95": stat(a["end"], 95),
            "both_med": stat(a["both"], 50),
            "both_p90": stat(a["both"], 90),
            "fw_both_med": stat(a["fw_both"], 50),
            "fw_both_p90": stat(a["fw_both"], 90),
            "fw0_both_med": stat(a["fw0_both"], 50),
            "fw_start_med": stat(a["fw_start"], 50),
            "fw_end_med": stat(a["fw_end"], 50),
            "fw0_start_med": stat(a["fw0_start"], 50),
            "fw0_end_med": stat(a["fw0_end"], 50),
            "int_p": ip,
            "int_r": ir,
            "bc_p": bp,
            "bc_r": br,
            "wer_ours": pooled(a["wer_ours"]).wer,
            "wer_fw": pooled(a["wer_fw"]).wer if a["wer_fw"] else None,
            "wer_fw_greedy": pooled(a["wer_fw_greedy"]).wer if a["wer_fw_greedy"] else None,
            "wer_fw_vad": pooled(a["wer_fw_vad"]).wer if a["wer_fw_vad"] else None,
            "rtf_ours": sum(a["wall_ours"]) / sum(a["audio_s"]),
            "ep_x_realtime": sum(a["audio_s"]) / sum(a["ep_s"]),
        }
        rows.append(row)
    print_table(rows, settings)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


def row_name(call: CorpusCall | RealCall) -> str:
    return f"{'real' if isinstance(call, RealCall) else 'synthetic'} {call.condition}"


def print_table(rows: list[dict], settings: Settings) -> None:
    def f(x, nd=0):
        return "-" if x is None or (isinstance(x, float) and np.isnan(x)) else f"{x:.{nd}f}"

    cols = [
        ("condition", lambda r: r["condition"]),
        ("calls", lambda r: str(r["calls"])),
        ("turns (miss/extra)", lambda r: f"{r['turns']} ({r['missed']}/{r['extra']})"),
        ("|start| med/p95", lambda r: f"{f(r['start_med'], 1)}/{f(r['start_p95'])}"),
        ("|end| med/p95", lambda r: f"{f(r['end_med'], 1)}/{f(r['end_p95'])}"),
        ("boundary med/p90", lambda r: f"{f(r['both_med'], 1)}/{f(r['both_p90'])}"),
        ("FW-VAD med/p90", lambda r: f"{f(r['fw_both_med'])}/{f(r['fw_both_p90'])}"),
        ("FW-VAD pad0 med", lambda r: f(r["fw0_both_med"])),
        ("interrupt P/R", lambda r: f"{f(r['int_p'], 2)}/{f(r['int_r'], 2)}"),
        ("backchannel P/R", lambda r: f"{f(r['bc_p'], 2)}/{f(r['bc_r'], 2)}"),
        ("WER turns/whole", lambda r: f"{f(r['wer_ours'], 3)}/{f(r['wer_fw'], 3)}"),
        ("WER whole, same decoding", lambda r: f(r["wer_fw_greedy"], 3)),
        ("WER whole, FW+VAD", lambda r: f(r["wer_fw_vad"], 3)),
        ("pipeline RTF", lambda r: f(r["rtf_ours"], 3)),
        ("endpointing", lambda r: f"{f(r['ep_x_realtime'])}x RT"),
    ]
    print()
    print("| " + " | ".join(c for c, _ in cols) + " |")
    print("|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(fn(r) for _, fn in cols) + " |")
    print()
    print(
        f"settings: vad aggressiveness {settings.vad.aggressiveness}, frame {settings.vad.frame_ms}"
        f" ms, refine {settings.refine.enabled}, silero {settings.confirm.silero}, "
        f"asr {settings.asr.model} {settings.asr.compute_type} beam {settings.asr.beam_size} "
        f"words {settings.asr.word_timestamps}, context {settings.asr.context_max_ms} ms "
        f"within {settings.asr.context_gap_ms} ms"
    )


if __name__ == "__main__":
    main()
