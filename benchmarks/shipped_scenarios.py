"""Every shipped scenario as a new user first runs one: `turnscope demo --scenario NAME`, a live
call against the bundled reference agent speaking the scenario's agent side.

    .venv/bin/python benchmarks/shipped_scenarios.py [--jobs 2] [--only quick-exchange ...]
                                                     [--repeat 1]

Printed, per scenario and run: the exit code, the verdict, the degraded and warning codes, the
caller lines spoken of those planned, and, for each caller line the script places after two or
more agent lines, whether it went out after the last of them ended (the agent's truth, its own
log of what it said when). The LLM-driven scenario is left out (the demo names no LLM).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from turnscope.actors.caller.agent_lines import agent_lines_before  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402

EXE = ROOT / ".venv" / "bin" / "turnscope"
SCENARIOS = ROOT / "configs" / "scenarios"


def _after_runs(script: list[Any]) -> list[int]:
    """Script indexes of the caller lines placed after two or more agent lines in a row."""
    return [i for i, line in enumerate(script) if line.speaker == "caller"
            and line.kind == "line" and len(agent_lines_before(script, i)) >= 2]  # fmt: skip


def _in_step(outdir: Path, name: str) -> str:
    """For each caller line after agent lines in a row: sent after the last one ended?"""
    scenario = load_scenario(SCENARIOS / f"{name}.yaml").script
    lines = _after_runs(scenario)
    if not lines:
        return "-"
    script = json.loads((outdir / "result.json").read_text())["script"]["lines"]
    sent = {r["line"]: (r.get("sent") or {}).get("start_ms") for r in script if "line" in r}
    agent_lines = [i for i, x in enumerate(scenario) if x.speaker == "agent"]
    truth = json.loads((outdir / "agent_truth.json").read_text())
    # Each utterance is labelled "N:text", N its agent line's place among the agent lines;
    # its times are on the agent's own clock (started with the media, as the caller's).
    ends = {agent_lines[int(u["label"].split(":")[0])]: u["end_ms"] for u in truth["utterances"]}
    marks = []
    for i in lines:
        said = max((k for k in ends if k < i), default=None)
        start = sent.get(i)
        if start is None or said is None:
            marks.append(f"[{i}] ?")
        else:
            marks.append(f"[{i}] {start - ends[said]:+.0f} ms")
    return ", ".join(marks)


def one(name: str, root: Path, run: int) -> dict[str, Any]:
    out = root / f"{name}-{run}"
    done = subprocess.run(
        [str(EXE), "demo", "--scenario", name, "-o", str(out), "-q"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    row: dict[str, Any] = {"scenario": name, "run": run, "code": done.returncode}
    path = out / "result.json"
    if not path.exists():
        row["error"] = done.stderr.strip().splitlines()[-1:] or ["no result.json"]
        return row
    r = json.loads(path.read_text())
    lines = r["script"]["lines"]
    row.update(
        verdict=r["verdict"],
        degraded=",".join(r["degraded_codes"]) or "-",
        warnings=",".join(r["warning_codes"]) or "-",
        spoken=f"{sum(x['status'] == 'spoken' for x in lines)}/{len(lines)}",
        in_step=_in_step(out, name),
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--repeat", type=int, default=1)
    args = ap.parse_args()
    names = args.only or [
        p.stem for p in sorted(SCENARIOS.glob("*.yaml")) if load_scenario(p).caller.driver != "llm"
    ]
    root = Path(tempfile.mkdtemp(prefix="shipped-"))
    work = [(n, k) for n in names for k in range(args.repeat)]
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda w: one(w[0], root, w[1]), work))
    print("| scenario | exit | verdict | degraded | warnings | caller lines spoken | "
          "a caller line after agent lines in a row: sent after the last ended |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['scenario']} | {r['code']} | {r['error'][0]} | | | | |")
            continue
        print(f"| {r['scenario']} | {r['code']} | {r['verdict']} | {r['degraded']} | "
              f"{r['warnings']} | {r['spoken']} | {r['in_step']} |")  # fmt: skip
    print(f"(bundles in {root})")


if __name__ == "__main__":
    main()
