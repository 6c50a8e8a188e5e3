"""A recorded call re-driven against the same agent: does the new call reproduce the recorded
latencies (issue 31 target: within 30 ms median)?

    .venv/bin/python benchmarks/redrive.py [--scenarios barge-ins refund-call] [--rounds 2]

Per shipped scenario and round: a real WebRTC call on 127.0.0.1 against the reference agent
(in-process, the scenario's agent settings) is recorded; `turnscope scenario from-recording`
makes its caller a scenario (its own clips, gaps and barge-ins); a call with that scenario
against the same agent is compared with the recorded one (scoring/redrive.py, paired in order).
The control row calls the original scenario twice: the live path's own jitter, which bounds what
any re-drive can reproduce. Printed: replies paired, median and max |new - recorded| latency,
the median shift, the caller's reply gaps and the barge-ins' yield times (median |difference|),
and how many agent turns said the same words.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from turnscope.actors.agent.behaviour import AgentBehaviour  # noqa: E402
from turnscope.actors.agent.server import AgentServer  # noqa: E402
from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.capture.webrtc.call import CallOptions  # noqa: E402
from turnscope.jsonio import read_json  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402
from turnscope.redrive import scenario_from_recording  # noqa: E402
from turnscope.scoring.redrive import Comparison, compare, median_abs  # noqa: E402


def call(scenario_path: Path, behaviour: AgentBehaviour, outdir: Path) -> Path:
    sc = load_scenario(scenario_path)

    async def go() -> None:
        server = AgentServer(behaviour)
        base = await server.start()
        options = CallOptions(base + "/api/offer", loopback_only=True, media_timeout_s=5)
        try:
            await place_call(
                options, sc, load_settings(), scenario_contract(sc), outdir, console=None
            )
        finally:
            await server.stop()

    asyncio.run(go())
    return outdir


def turns(bundle: Path) -> list[dict]:
    return read_json(bundle / "transcript.json")["turns"]


def row(name: str, c: Comparison) -> str:
    lat = [abs(p.diff) for p in c.latencies if p.diff is not None]
    med = f"{c.latency_median_abs_diff_ms:.1f}" if lat else "-"
    worst = f"{max(lat):.0f}" if lat else "-"
    shift = f"{c.latency_median_diff_ms:+.1f}" if lat else "-"
    gap, yld = median_abs(c.caller_gaps), median_abs(c.barge_in_yields)
    same = sum(s.same for s in c.said)
    return (
        f"| {name} | {len(lat)} | {med} | {worst} | {shift} | "
        f"{'-' if gap is None else f'{gap:.1f}'} | {'-' if yld is None else f'{yld:.1f}'} | "
        f"{same}/{len(c.said)} |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scenarios", nargs="+", default=["barge-ins", "refund-call"])
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    rows: list[str] = []
    medians: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name in args.scenarios:
            source = load_scenario(name)
            path = source.source
            assert path is not None
            agent = AgentBehaviour.from_scenario(source)
            for k in range(args.rounds):
                where = root / f"{name}-{k}"
                recorded = call(path, agent, where / "recorded-call")
                control = call(path, agent, where / "again")
                made = scenario_from_recording(recorded, outdir=where / "sc")
                new = call(made.built.scenario, agent, where / "redriven")
                c = compare(turns(made.bundle), turns(new))
                rows.append(row(f"{name} #{k + 1}: re-driven", c))
                rows.append(
                    row(f"{name} #{k + 1}: control", compare(turns(recorded), turns(control)))
                )
                if c.latency_median_abs_diff_ms is not None:
                    medians.append(c.latency_median_abs_diff_ms)
    print(
        f"load average {os.getloadavg()[0]:.2f} (1 min) at the end; under load a figure is a "
        "ceiling"
    )
    print(
        "| call | replies | median abs diff latency ms | max abs diff ms | median shift ms | "
        "caller gap median abs diff ms | barge-in yield median abs diff ms | agent words same |"
    )
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(rows))
    if medians:
        print(
            f"re-driven calls: median of the per-call medians {statistics.median(medians):.1f} ms"
        )


if __name__ == "__main__":
    main()
