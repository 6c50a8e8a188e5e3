"""The shipped audio suite under each of CTranslate2's CPU kernel choices on this machine: how
much a task's scores move with the processor Whisper's decoding runs on, and whether the shipped
baseline holds under each.

    .venv/bin/python benchmarks/kernels.py [--suite configs/suites/voice_regression.json]

Each row is one kernel choice (CTranslate2's own environment variables: ``CT2_FORCE_CPU_ISA``
picks the instruction set, ``CT2_USE_MKL`` Intel's MKL over oneDNN; "default" is what it picks
itself); each column a task's WER, with its content score where that is below 1. The last
column is the gate against the shipped baseline. A machine of another kind picks other kernels
again: pin its run into the baseline with ``turnscope gate ... --update-baseline --keep-worst``
(docs/guide/gate.md).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXE = str(ROOT / ".venv" / "bin" / "turnscope")
BASELINE = ROOT / "configs" / "baselines" / "voice_regression.scorecard.json"
KERNELS = {
    "default": {},
    "AVX2": {"CT2_FORCE_CPU_ISA": "AVX2"},
    "AVX512": {"CT2_FORCE_CPU_ISA": "AVX512"},
    "MKL": {"CT2_USE_MKL": "1"},
    "MKL + AVX512": {"CT2_USE_MKL": "1", "CT2_FORCE_CPU_ISA": "AVX512"},
}


def one_run(suite: Path, out: Path, env: dict[str, str]) -> tuple[dict[str, str], str]:
    """The suite benched under ``env``: each task's cell, and the gate's last line."""
    run_env = {**os.environ, **env}
    subprocess.run([EXE, "bench", str(suite), "-o", str(out / "r.json"), "--runs",
                    str(out / "runs"), "-q", "--no-fail"], env=run_env, check=True,
                   capture_output=True)  # fmt: skip
    card = json.loads((out / "r.scorecard.json").read_text())
    cells = {}
    for task in card["tasks"]:
        dims = task.get("dims") or {}
        content = dims.get("content", 1.0)
        cells[task["task_id"]] = f"{dims.get('wer', float('nan')):.3f}" + (
            f" (content {content:.2f})" if content < 1.0 else ""
        )
    gate = subprocess.run([EXE, "gate", str(out / "r.scorecard.json"), "--baseline",
                           str(BASELINE)], capture_output=True, text=True)  # fmt: skip
    lines = gate.stdout.strip().splitlines()
    return cells, lines[-1] if lines else gate.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suite", type=Path, default=ROOT / "configs/suites/voice_regression.json")
    args = parser.parse_args()
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, env in KERNELS.items():
            rows[name] = one_run(args.suite, Path(tmp) / name.replace(" ", ""), env)
    tasks = list(next(iter(rows.values()))[0])
    print("| kernels | " + " | ".join(tasks) + " | gate against the shipped baseline |")
    print("|---" * (len(tasks) + 2) + "|")
    for name, (cells, gate) in rows.items():
        print(f"| {name} | " + " | ".join(cells.get(t, "-") for t in tasks) + f" | {gate} |")


if __name__ == "__main__":
    main()
