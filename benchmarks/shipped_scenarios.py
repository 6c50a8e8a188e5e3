"""Every shipped scenario as a new user first runs one: `turnscope demo --scenario NAME`, a live
call against the bundled reference agent speaking the scenario's agent side.

    .venv/bin/python benchmarks/shipped_scenarios.py [--jobs 2] [--only quick-exchange ...]
                                                     [--repeat 1] [--exe OTHER/turnscope]

Printed, per scenario and run: the exit code, the verdict, the degraded and warning codes, the
caller lines spoken of those planned, and, for each caller line the script places after two or
more agent lines, whether it went out after the last of them ended (the agent's truth, its own
log of what it said when); the turn-taking conditions as scored (pause handling and backchannel
takeover rates, the false-yield rate, user interruptions yielded to); for each agent line said
over the end of the caller's (``talk_over_ms``), when it started against that line's end, on the
agent's log (planned: minus talk_over_ms); for each barge-in or backchannel placed by time, how
far into the agent's line it went out, beside where the rendered call puts it. The LLM-driven
scenario is left out (the demo names no LLM). ``--exe``: another checkout's turnscope (a before
column), the same scenarios.
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
from turnscope.actors.caller.mid import MidLines, cut_agent_line  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402

EXE = ROOT / ".venv" / "bin" / "turnscope"
SCENARIOS = ROOT / "configs" / "scenarios"


def _after_runs(script: list[Any]) -> list[int]:
    """Script indexes of the caller lines placed after two or more agent lines in a row."""
    return [i for i, line in enumerate(script) if line.speaker == "caller"
            and line.kind == "line" and len(agent_lines_before(script, i)) >= 2]  # fmt: skip


def _in_step(outdir: Path, name: str) -> str:
    """For each caller line after agent lines in a row: sent after the last one ended?"""
    scenario, sent, said = _agent_lines(outdir, name)
    marks = []
    for i in _after_runs(scenario):
        last = max((k for k in said if k < i), default=None)
        start = sent.get(i, {}).get("start_ms")
        if start is None or last is None:
            marks.append(f"[{i}] ?")
        else:
            marks.append(f"[{i}] {start - said[last]['end_ms']:+.0f} ms")
    return ", ".join(marks) or "-"


def _agent_lines(outdir: Path, name: str) -> tuple[list[Any], dict[int, Any], dict[int, Any]]:
    """The scenario, the caller's sent records and the agent's utterances, by script index."""
    scenario = load_scenario(SCENARIOS / f"{name}.yaml").script
    script = json.loads((outdir / "result.json").read_text())["script"]["lines"]
    sent = {r["line"]: r.get("sent") or {} for r in script if "line" in r}
    agent_lines = [i for i, x in enumerate(scenario) if x.speaker == "agent"]
    truth = json.loads((outdir / "agent_truth.json").read_text())
    # Each utterance is labelled "N:text", N its agent line's place among the agent lines;
    # its times are on the agent's own clock (started with the media, as the caller's).
    said = {agent_lines[int(u["label"].split(":")[0])]: u for u in truth["utterances"]}
    return scenario, sent, said


def _talk_over(outdir: Path, name: str) -> str:
    """Each talk-over line's start against the end of the caller line before it (planned)."""
    scenario, sent, said = _agent_lines(outdir, name)
    marks = []
    for i, line in enumerate(scenario):
        if line.talk_over_ms is None:
            continue
        end, start = sent.get(i - 1, {}).get("end_ms"), said.get(i, {}).get("start_ms")
        got = "?" if end is None or start is None else f"{start - end:+.0f}"
        marks.append(f"{got} ({-line.talk_over_ms})")
    return " ".join(marks) or "-"


def _into(outdir: Path, name: str) -> str:
    """Each barge-in or backchannel placed by time (``*_ms``, ``*_at``): how far into the
    agent line's utterance it went out, on the agent's log, and (in brackets) where a rendered
    call puts it."""
    scenario, sent, said = _agent_lines(outdir, name)
    sc = load_scenario(SCENARIOS / f"{name}.yaml")
    lengths = MidLines(sc).lengths
    marks = []
    for i, line in enumerate(scenario):
        if line.kind not in ("barge_in", "backchannel") or line.phrase is not None:
            continue
        cut = said.get(cut_agent_line(sc, i), {}).get("start_ms")
        start = sent.get(i, {}).get("start_ms")
        got = "?" if cut is None or start is None else f"{start - cut:.0f}"
        marks.append(f"[{i}] {got} ({line.placed_trigger(lengths.get(i, 0) or None)[1]})")
    return " ".join(marks) or "-"


def _conditions(result: dict[str, Any]) -> str:
    """Pause TOR, backchannel TOR, false-yield rate, user-interruption TOR ("-": none)."""
    tt = result.get("turn_taking") or {}
    cond = tt.get("conditions") or {}

    def rate(value: Any) -> str:
        return "-" if value is None else f"{value:.2f}"

    return " / ".join([rate((cond.get("pause_handling") or {}).get("tor")),
                       rate((cond.get("backchannel") or {}).get("tor")),
                       rate(tt.get("backchannel_false_yield_rate")),
                       rate((cond.get("user_interruption") or {}).get("tor"))])  # fmt: skip


def one(name: str, root: Path, run: int, exe: Path) -> dict[str, Any]:
    out = root / f"{name}-{run}"
    done = subprocess.run(
        [str(exe), "demo", "--scenario", name, "-o", str(out), "-q"],
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
        conditions=_conditions(r),
        talk_over=_talk_over(out, name),
        into=_into(out, name),
    )
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", nargs="*", default=None)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--exe", type=Path, default=EXE, help="the turnscope to run (default: ours)")
    args = ap.parse_args()
    names = args.only or [
        p.stem for p in sorted(SCENARIOS.glob("*.yaml")) if load_scenario(p).caller.driver != "llm"
    ]
    root = Path(tempfile.mkdtemp(prefix="shipped-"))
    work = [(n, k) for n in names for k in range(args.repeat)]
    with ThreadPoolExecutor(args.jobs) as pool:
        rows = list(pool.map(lambda w: one(w[0], root, w[1], args.exe), work))
    print(f"({args.exe})")
    print("| scenario | exit | verdict | degraded | warnings | caller lines spoken | "
          "a caller line after agent lines in a row: sent after the last ended | "
          "TOR pause / backchannel, false yields, TOR interruption | "
          "talk-over start - caller end, ms (planned) | "
          "into the agent's line, ms (rendered) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        if "error" in r:
            print(f"| {r['scenario']} | {r['code']} | {r['error'][0]} | | | | | | | |")
            continue
        print(f"| {r['scenario']} | {r['code']} | {r['verdict']} | {r['degraded']} | "
              f"{r['warnings']} | {r['spoken']} | {r['in_step']} | {r['conditions']} | "
              f"{r['talk_over']} | {r['into']} |")  # fmt: skip
    print(f"(bundles in {root})")


if __name__ == "__main__":
    main()
