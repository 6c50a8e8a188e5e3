"""A suite of the 45 synthetic corpus calls run by `turnscope bench` in one process, against
faster-whisper with its own VAD transcribing each file in one process, side by side in one run.
Prints one table.

    .venv/bin/python benchmarks/suite_speed.py [--rounds 2] [--corpus DIR]

Each round runs, in fresh processes and in turn (so a noisy machine slows each alike):
- ``turnscope bench SUITE`` with the default settings (replays 8 at once, utterances decoded in
  batches, windows as configured);
- the same with ``--jobs 1`` and ``asr.batch_size: 1`` plus the window settings of before this
  change (one utterance at a time, as turnscope ran before batching);
- a script that loads the same Whisper model once (the bundled tiny.en, the pipeline's compute
  type, threads and beam) and transcribes both channels of every file with ``vad_filter=True``.
Wall time is the whole process (start-up, every replay, scoring, 45 bundles with their reports).
WER is pooled over the suite (total errors / reference words) with turnscope's normaliser,
from each bundle's turns for turnscope and from each channel's text for faster-whisper.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import build_corpus

from turnscope.scoring.wer import WerScore, channel_texts, measure_wer, pooled

ROOT = Path(__file__).resolve().parent.parent
TURNSCOPE = ROOT / ".venv" / "bin" / "turnscope"
PYTHON = ROOT / ".venv" / "bin" / "python"
# How turnscope decoded before batching (the settings this change touched, at their old values).
BEFORE = "asr:\n  batch_size: 1\n  min_window_s: 15\n  window_pad_s: 5\n  context_max_ms: 8000\n"

BASELINE = """
import json, os, sys
os.environ["HF_HUB_OFFLINE"] = "1"
import numpy as np, soundfile as sf
from faster_whisper import WhisperModel
from turnscope.asr.model import resolve_model
from turnscope.asr.settings import load_settings
asr = load_settings().asr
model = WhisperModel(str(resolve_model(asr.model)), device="cpu", compute_type=asr.compute_type,
                     cpu_threads=asr.cpu_threads)
out = {}
for wav in sys.argv[2:]:
    audio, _ = sf.read(wav, dtype="float32", always_2d=True)
    texts = []
    for ch in range(audio.shape[1]):
        segments, _ = model.transcribe(np.ascontiguousarray(audio[:, ch]), language=asr.language,
                                       beam_size=asr.beam_size, vad_filter=True)
        texts.append(" ".join(s.text.strip() for s in segments))
    out[wav] = {"caller": texts[0], "agent": texts[1]}
with open(sys.argv[1], "w") as f:
    json.dump(out, f)
"""


def suite_of(calls: list, folder: Path) -> Path:
    tasks = [
        {
            "id": c.name,
            "instruction": f"{c.scenario}, {c.condition}",
            "fixture": {
                "source": "recorded",
                "audio": str(c.wav.resolve()),
                "references": str(c.wav.resolve().with_name("reference.json")),
                "tags": ["acoustic"],
            },
        }
        for c in calls
    ]
    suite = {
        "kind": "agent-learning.bench-suite.v1",
        "control": "voice",
        "modality": "voice",
        "name": "corpus",
        "version": "1",
        "tasks": tasks,
    }
    path = folder / "suite.json"
    path.write_text(json.dumps(suite))
    return path


def timed(cmd: list[str]) -> float:
    t0 = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    took = time.perf_counter() - t0
    if done.returncode not in (0, 1, 4):  # failed verdicts and degraded calls still ran
        raise SystemExit(f"{cmd[:3]} failed ({done.returncode}): {done.stderr[-800:]}")
    return took


def reference(call) -> dict[str, str]:
    return json.loads(call.wav.with_name("reference.json").read_text())


def turnscope_wer(calls: list, runs: Path) -> dict[str, WerScore]:
    """Pooled WER of each condition and overall, from the bundles' turns."""
    by: dict[str, list[WerScore]] = {}
    for c in calls:
        turns = json.loads((runs / c.name / "transcript.json").read_text())["turns"]
        score = measure_wer(reference(c), channel_texts(turns)).overall
        by.setdefault(c.condition, []).append(score)
        by.setdefault("all", []).append(score)
    return {k: pooled(v) for k, v in by.items()}


def baseline_wer(calls: list, texts: dict[str, dict[str, str]]) -> dict[str, WerScore]:
    by: dict[str, list[WerScore]] = {}
    for c in calls:
        score = measure_wer(reference(c), texts[str(c.wav)]).overall
        by.setdefault(c.condition, []).append(score)
        by.setdefault("all", []).append(score)
    return {k: pooled(v) for k, v in by.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--corpus", type=Path, default=ROOT / ".turnscope" / "bench-corpus")
    args = parser.parse_args()
    calls = build_corpus(args.corpus.resolve())
    tmp = Path(tempfile.mkdtemp(prefix="suite-speed-"))
    suite = suite_of(calls, tmp)
    before = tmp / "before.yaml"
    before.write_text(BEFORE)
    script = tmp / "baseline.py"
    script.write_text(BASELINE)
    bench = [str(TURNSCOPE), "bench", str(suite), "-q", "--force"]
    runs = {
        "turnscope bench (default: batched, 8 replays at once)": bench,
        "turnscope bench, one utterance at a time (--jobs 1, batch_size 1, as before)": [
            *bench, "--jobs", "1", "--settings", str(before)
        ],
    }  # fmt: skip
    walls: dict[str, list[float]] = {name: [] for name in [*runs, "fw"]}
    wers: dict[str, dict[str, WerScore]] = {}
    fw_texts = tmp / "fw.json"
    print(f"{len(calls)} calls, {args.rounds} round(s), fresh processes, in turn")
    for k in range(args.rounds):
        for n, (name, cmd) in enumerate(runs.items()):
            folder = tmp / f"runs-{n}"
            walls[name].append(timed([*cmd, "--runs", str(folder), "-o", str(tmp / "r.json")]))
            if k == 0:
                wers[name] = turnscope_wer(calls, folder)
        walls["fw"].append(timed([str(PYTHON), str(script), str(fw_texts)] +
                                 [str(c.wav) for c in calls]))  # fmt: skip
        if k == 0:
            wers["fw"] = baseline_wer(calls, json.loads(fw_texts.read_text()))
    fw = statistics.median(walls["fw"])
    conditions = sorted({c.condition for c in calls})
    print()
    print(
        "| run | wall (median) | vs FW + vad_filter | WER all | "
        + " | ".join(f"WER {c}" for c in conditions)
        + " |"
    )
    print("|---|---|---|---|" + "---|" * len(conditions))
    for name in [*runs, "fw"]:
        wall = statistics.median(walls[name])
        label = "faster-whisper + vad_filter, each file, one process" if name == "fw" else name
        ratio = "1.00x" if name == "fw" else f"{wall / fw:.2f}x"
        cells = [f"{wers[name][c].wer:.3f}" for c in ["all", *conditions]]
        print(f"| {label} | {wall:.1f} s | {ratio} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
