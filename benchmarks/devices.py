"""Sound-device calls: boundary error vs ground truth and run-to-run latency, with and without
calibration, over repeated calls on the virtual devices (headless PulseAudio, null sinks).

    .venv/bin/python benchmarks/devices.py [--calls 5]

Every call is new: a new device agent process (`turnscope agent --device`, the reference agent,
logging the DAC time of every prompt as time.monotonic()) and new harness streams, so PulseAudio
hands out a different latency each time. Ground truth: the agent's log for agent turns; the
caller's send log (DAC times) for caller turns. Boundary errors are absolute (no constant is
removed: that is the calibration's job). Response latency: agent turn start minus the end of the
caller turn before it, median per call; its spread across calls is what must not move with the
devices. A third row, derived from the calibrated calls' recorded buffer delays, shows what
placing audio at callback arrival (sample counting, no stream times) would have measured.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from common import order_call_scenario  # noqa: E402

from turnscope.actors.caller.scenario_contract import scenario_contract  # noqa: E402
from turnscope.actors.caller.scenario_file import load_scenario  # noqa: E402
from turnscope.asr.settings import load_settings  # noqa: E402
from turnscope.capture.device import io as device_io  # noqa: E402
from turnscope.capture.device import pulse as device_pulse  # noqa: E402
from turnscope.capture.device.call import DeviceCallOptions  # noqa: E402
from turnscope.live_call import place_call  # noqa: E402

LATENCY_MS = 800  # above end-of-turn (400) + input fragment + lead: the agent can be punctual
SCENARIO = order_call_scenario("device-bench", first_at_ms=400, latency_ms=LATENCY_MS)


def start_agent(scenario: Path, truth: Path) -> subprocess.Popen:
    exe = Path(sys.executable).with_name("turnscope")
    proc = subprocess.Popen(
        [
            *(str(exe), "agent", "--device", "--in", "caller_in", "--out", "agent_out"),
            *("--scenario", str(scenario), "--truth-log", str(truth)),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:
        seen.append(line)
        if "waiting for a call" in line:
            return proc
    raise SystemExit("the device agent did not start:\n" + "".join(seen))


def one_call(sc, scenario: Path, outdir: Path, *, calibrate: bool) -> dict:
    truth_log = outdir.with_suffix(".truth.jsonl")
    agent = start_agent(scenario, truth_log)
    try:
        run, call, caller = asyncio.run(
            place_call(
                DeviceCallOptions("caller_out", agent_in="agent_in", calibrate=calibrate),
                sc,
                load_settings(),
                scenario_contract(sc),
                outdir,
                console=None,
            )
        )
    finally:
        agent.send_signal(signal.SIGTERM)
        agent.communicate(timeout=30)
    truth = [json.loads(line) for line in truth_log.read_text().splitlines()][-1]
    origin = call.clock.origin
    turns = run.result.assembly.turns
    sent = [
        ((u["start_monotonic"] - origin) * 1000, (u["end_monotonic"] - origin) * 1000)
        for u in truth["utterances"]
    ]
    agent_turns = [(t.start_ms, t.end_ms) for t in turns if t.speaker == "agent"]
    caller_sent = [(u["start_ms"], u["end_ms"]) for u in caller.truth()["utterances"]]
    caller_turns = [(t.start_ms, t.end_ms) for t in turns if t.speaker == "caller"]

    def errors(found, truth_spans) -> list[float]:
        if len(found) != len(truth_spans):
            return []
        return [
            m - s
            for f, t in zip(found, truth_spans, strict=True)
            for m, s in zip(f, t, strict=True)
        ]

    latencies = [
        b.start_ms - a.end_ms
        for a, b in itertools.pairwise(turns)
        if a.speaker == "caller" and b.speaker == "agent"
    ]
    devices = call.info.details["devices"]
    return {
        "agent_errors": errors(agent_turns, sent),
        "caller_errors": errors(caller_turns, caller_sent),
        "latency_ms": statistics.median(latencies) if latencies else float("nan"),
        "correction_ms": call.calibration.correction_ms if call.calibration else None,
        "round_trip_ms": call.calibration.round_trip_ms if call.calibration else None,
        "out_delay_ms": devices["caller-out"]["buffer_delay_ms"],
        "in_delay_ms": devices["agent-in"]["buffer_delay_ms"],
        "passed": run.outcome.passed,
        "degraded": list(run.result.degraded),  # every stage's, as the run assembled them
        "reanchors": sum(len(c["reanchors"]) for c in call.info.details["clock"].values()),
    }


def summary(name: str, calls: list[dict], *, naive: bool = False) -> str:
    agent = [e for c in calls for e in c["agent_errors"]]
    caller = [e for c in calls for e in c["caller_errors"]]
    lat = [c["latency_ms"] for c in calls]
    if naive:
        # Placed at callback arrival: captured audio lands its input buffer delay late, played
        # audio its output buffer delay early; both vary with each call's streams.
        agent = [e + c["in_delay_ms"] for c in calls for e in c["agent_errors"]]
        caller = [e - c["out_delay_ms"] for c in calls for e in c["caller_errors"]]
        lat = [c["latency_ms"] + c["in_delay_ms"] + c["out_delay_ms"] for c in calls]

    def stat(values: list[float]) -> str:
        if not values:
            return "n/a"
        a = np.abs(values)
        return f"{np.median(a):.1f} / {np.percentile(a, 95):.1f} / {a.max():.1f} ms"

    trips = [c["round_trip_ms"] for c in calls if c["round_trip_ms"] is not None]
    trip = f"{min(trips):.0f}-{max(trips):.0f} ms" if trips else "not measured"
    corr = [c["correction_ms"] for c in calls if c["correction_ms"] is not None]
    correction = f"{min(corr):+.2f} .. {max(corr):+.2f} ms" if corr else "none"
    return (
        f"| {name} | {len(calls)} | {stat(agent)} | {stat(caller)} | "
        f"{', '.join(f'{x:.0f}' for x in lat)} | {max(lat) - min(lat):.1f} ms | {trip} | "
        f"{correction} | {sum(c['passed'] for c in calls)}/{len(calls)} | "
        f"{sum(bool(c['degraded']) for c in calls)} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5)
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    devices = device_pulse.start()
    os.environ["ALSA_CONFIG_PATH"] = devices.env()["ALSA_CONFIG_PATH"]
    device_io.portaudio()
    work = Path(tempfile.mkdtemp(prefix="turnscope-devices-"))
    scenario = work / "scenario.yaml"
    scenario.write_text(SCENARIO)
    sc = load_scenario(scenario)
    results: dict[str, list[dict]] = {"calibrated": [], "uncalibrated": []}
    try:
        for i in range(args.calls):
            # Interleaved, so both modes meet the same machine load.
            for mode in results:
                out = work / f"{mode}-{i}"
                results[mode].append(one_call(sc, scenario, out, calibrate=mode == "calibrated"))
    finally:
        if devices.started:
            device_pulse.stop(devices.directory)
    print()
    print(
        f"{args.calls} device calls per row (virtual devices: PulseAudio null sinks via ALSA), "
        f"configured reply latency {LATENCY_MS} ms; errors |measured - truth|: "
        "median / p95 / max"
    )
    print(
        "| placement | calls | agent turn boundaries vs agent's DAC log | caller turn boundaries "
        "vs send log | response latency per call (ms) | run-to-run spread | round trip (callback "
        "to callback) | calibration correction | verdicts passed | degraded |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(summary("stream times + calibration", results["calibrated"]))
    print(summary("stream times, no calibration", results["uncalibrated"]))
    print(summary("callback arrival (derived, no stream times)", results["calibrated"], naive=True))
    reanchors = sum(c["reanchors"] for rows in results.values() for c in rows)
    print(f"\nstream re-anchors during calls: {reanchors}; outputs in {work}")


if __name__ == "__main__":
    main()
