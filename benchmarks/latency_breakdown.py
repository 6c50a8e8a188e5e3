"""The latency split against a real agent's own log: WebRTC calls on 127.0.0.1 to the stock
pipecat bot (RTVI on, as pipecat ships it) with its endpointing and reply latency varied.

    .venv/bin/python benchmarks/latency_breakdown.py [--calls 3] [--busy N]
    .venv/bin/python benchmarks/latency_breakdown.py --otlp [--calls 2]
    .venv/bin/python benchmarks/latency_breakdown.py --load-otlp [--calls 8] [--rounds 2]
        [--transport webrtc|twilio|telnyx|plivo|exotel|both]

For every bot setting (Silero VAD stop 0.2 / 0.8 s x reply latency 300 / 1200 ms) and every
reply the split covers: each part (endpointing, processing, delivery) against the bot's own log
(when it decided the caller had finished, when its first sample went out), median and p95 of the
|error|, and whether the parts sum to the ear-measured latency. Also the replies left unsplit as
a late start (their bot-started-speaking later, against the audio, than the call's others: a
delayed message) and how far their delivery would have been off, split (the same calls split
again with that check off). --busy N runs N busy loops beside the bot and the calls.

--otlp: the bot exports pipecat's tracing over OTLP/HTTP (the OpenTelemetry SDK's exporter) to
turnscope's receiver (--otlp) instead; for llm delay 300 / 1200 ms x tts delay 100 / 500 ms, the
median of each hop (caller end heard -> turn end -> llm first token -> tts first byte -> first
sample heard: the last is the unaccounted part), and how far each hop moved against the change
configured (target: within 15 ms; the unaccounted part steady).

--load-otlp: the receiver's cost on the call (target: no caller frame more than 20 ms late with
8 calls at once each exporting its spans). `turnscope load` places --calls calls at once against
the pipecat bot exporting its spans over OTLP/HTTP, without --otlp and with it (the run's one
receiver, each call taking its spans from it), alternating, --rounds times each: the worst
caller send lag of the run, the caller frames sent more than 20 ms late, the replies split hop
by hop, the CPU of turnscope's driver, of its call workers and of the bot (which exports in
both: without --otlp nothing listens), and the machine's load average beside (a timing under
load is a ceiling). --transport twilio (or another carrier) runs the same over a phone line
(the stock pipecat phone bot, tests/interop/pipecat_phone_bot.py, naming its spans by the
carrier's stream sid); both runs WebRTC and then Twilio. Last, per transport, the worst caller
frame lateness without and with --otlp side by side. The whole target, one command (on a quiet
machine):

    .venv/bin/python benchmarks/latency_breakdown.py --load-otlp --calls 8 --transport both
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.interop.pipecat import call_bot, pipecat_bot, pipecat_phone_bot  # noqa: E402

PARTS = ("endpointing", "processing", "delivery")
SCENARIO = """
name: split-bench
caller: {voice: en-us, timeout_s: 40, hangup_after_ms: 500}
script:
  - caller: Hi, I would like a refund for my headphones please.
  - agent: Sure.
  - caller: Can you email me a return label?
  - agent: Yes.
  - caller: Thank you, that is all. Goodbye.
  - agent: Goodbye.
"""


def truth_parts(run, call, truth: list[dict], reply) -> tuple[float, float, float] | None:  # type: ignore[no-untyped-def]
    """The bot's own parts for one reply, from its log (monotonic, the call clock's base)."""
    origin = call.clock.origin
    d = run.result.assembly.dialogue()
    end, start = d[reply.caller_turn]["end_ms"], d[reply.agent_turn]["start_ms"]
    decided = [
        (r["monotonic"] - origin) * 1000 for r in truth if r["event"] == "user_stopped_speaking"
    ]
    began = [(r["start_monotonic"] - origin) * 1000 for r in truth if r["event"] == "reply"]
    dec = [t for t in decided if end - 300 <= t <= start]
    if not dec:
        return None
    sent = [t for t in began if dec[-1] <= t <= start]
    if not sent:
        return None
    return dec[-1] - end, sent[-1] - dec[-1], start - sent[-1]


def _late_start_errors(run, call, truth: list[dict]) -> list[float]:  # type: ignore[no-untyped-def]
    """The |delivery error| each reply left unsplit as a late start would have had, split."""
    from turnscope.explain import rtvi_breakdown
    from turnscope.scoring import latency

    kept = latency.LATE_START_MS
    latency.LATE_START_MS = float("inf")
    try:
        again = rtvi_breakdown(run.result.info.details, run.result.assembly.dialogue())
    finally:
        latency.LATE_START_MS = kept
    if again is None:
        return []
    # Split with the check off and not with it on: what it left unsplit as a late start.
    split = {r.agent_turn for r in run.breakdown.replies if r.missing is None}
    out = []
    for r in again.replies:
        if r.missing is None and r.agent_turn not in split:
            t = truth_parts(run, call, truth, r)
            if t is not None:
                out.append(abs(r.delivery_ms - t[2]))
    return out


async def one_setting(work: Path, vad_stop: float, latency: int, calls: int) -> dict:
    scenario = work / "s.yaml"
    errors = {p: [] for p in PARTS}
    measured = {p: [] for p in PARTS}
    late: list[float] = []
    sums_exact, split, replies = True, 0, 0
    name = f"stop{vad_stop}-lat{latency}"
    with pipecat_bot(work / name, greeting=False, reply="short", latency_ms=latency,
                     vad_stop_secs=vad_stop) as bot:  # fmt: skip
        for i in range(calls):
            run, call, _ = await call_bot(bot.url, scenario, work / f"{name}-{i}")
            b = run.breakdown
            truth = bot.truth()
            late += _late_start_errors(run, call, truth)
            for r in b.replies if b else []:
                replies += 1
                if r.missing is not None:
                    continue
                split += 1
                total = r.endpointing_ms + r.processing_ms + r.delivery_ms
                sums_exact &= abs(total - r.latency_ms) < 0.15
                t = truth_parts(run, call, truth, r)
                for p, tv in zip(PARTS, t or (None,) * 3, strict=True):
                    measured[p].append(getattr(r, f"{p}_ms"))
                    if tv is not None:
                        errors[p].append(abs(getattr(r, f"{p}_ms") - tv))
    return {
        "vad_stop": vad_stop,
        "latency": latency,
        "errors": errors,
        "measured": measured,
        "sums": sums_exact,
        "split": split,
        "replies": replies,
        "late": late,
    }


HOPS = {
    ("caller_end_heard", "turn_end"): "endpointing",
    ("turn_end", "llm_first_token"): "llm",
    ("llm_first_token", "tts_first_byte"): "tts",
    ("tts_first_byte", "first_sample_heard"): "unaccounted",
}


async def otlp_setting(work: Path, llm: int, tts: int, calls: int) -> dict:
    """One bot setting's calls with --otlp: each hop's values over the replies reconciled."""
    from tests.interop.pipecat import free_port
    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.asr.settings import load_settings
    from turnscope.capture.webrtc.call import CallOptions
    from turnscope.live_call import place_call

    hops: dict[str, list[float]] = {h: [] for h in HOPS.values()}
    sums, reconciled, replies = True, 0, 0
    name = f"llm{llm}-tts{tts}"
    port = free_port()
    sc = load_scenario(work / "s.yaml")
    with pipecat_bot(work / name, greeting=False, reply="short", latency_ms=llm,
                     tts_delay_ms=tts, otlp=f"http://127.0.0.1:{port}") as bot:  # fmt: skip
        for i in range(calls):
            run, _, _ = await place_call(
                CallOptions(bot.url, loopback_only=True), sc, load_settings(),
                scenario_contract(sc), work / f"{name}-{i}", console=None,
                otlp=f"127.0.0.1:{port}",
            )  # fmt: skip
            for r in run.breakdown.replies if run.breakdown else []:
                replies += 1
                got = {HOPS.get((h.start.value, h.to.value)): h.ms for h in r.hops}
                if r.missing is not None or None in got or len(got) != len(HOPS):
                    continue
                reconciled += 1
                sums &= abs(sum(h.ms for h in r.hops) - r.latency_ms) < 0.15
                for h, v in got.items():
                    hops[h].append(v)
    return {"llm": llm, "tts": tts, "hops": hops, "sums": sums, "n": reconciled, "of": replies}


def otlp_table(work: Path, calls: int) -> None:
    rows = [
        asyncio.run(otlp_setting(work, llm, tts, calls))
        for llm, tts in itertools.product((300, 1200), (100, 500))
    ]
    print()
    print(f"pipecat bot exporting OTLP to turnscope, {calls} calls per setting, 3 replies each")
    names = list(HOPS.values())
    print("| llm delay | tts delay | replies reconciled | " + " | ".join(names) + " | sum |")
    print("|---|---|---|" + "---|" * len(names) + "---|")
    med = {}
    for r in rows:
        med[(r["llm"], r["tts"])] = {h: float(np.median(v)) if v else float("nan")
                                     for h, v in r["hops"].items()}  # fmt: skip
        cells = [f"{med[(r['llm'], r['tts'])][h]:.1f}" for h in names]
        print(f"| {r['llm']} ms | {r['tts']} ms | {r['n']} of {r['of']} | " + " | ".join(cells)
              + f" | {'exact' if r['sums'] else 'NO'} |")  # fmt: skip
    print()
    print("| change | hop | configured | measured (median) | error |")
    print("|---|---|---|---|---|")
    for tts in (100, 500):
        d = med[(1200, tts)]["llm"] - med[(300, tts)]["llm"]
        print(f"| llm 300 -> 1200 (tts {tts}) | llm | 900 | {d:.1f} | {abs(d - 900):.1f} |")
    for llm in (300, 1200):
        d = med[(llm, 500)]["tts"] - med[(llm, 100)]["tts"]
        print(f"| tts 100 -> 500 (llm {llm}) | tts | 400 | {d:.1f} | {abs(d - 400):.1f} |")
    un = [m["unaccounted"] for m in med.values()]
    print(f"| all settings | unaccounted | steady | {min(un):.1f} .. {max(un):.1f} | "
          f"spread {max(un) - min(un):.1f} |")  # fmt: skip


CARRIERS = ("twilio", "telnyx", "plivo", "exotel")
LATE_TARGET_MS = 20.0
QUIET_LOAD = 1.0  # the 1-minute load average under which a missed target is judged missed


def call_options(transport: str, url: str) -> object:
    """What `turnscope load` dials: a WebRTC offer URL, or a carrier's websocket."""
    if transport in CARRIERS:
        from turnscope.capture.telephony.call import TelephonyOptions

        return TelephonyOptions(url, dialect=transport)  # type: ignore[arg-type]
    from turnscope.capture.webrtc.call import CallOptions

    return CallOptions(url, loopback_only=True)


def proc_cpu_s(pid: int) -> float:
    """A live process's CPU time so far (Linux /proc; NaN elsewhere): the bot's, which runs on
    the same cores as the calls and is no child of the benchmark's until it exits."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return float("nan")
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load_round(
    work: Path,
    bot: object,
    port: int,
    calls: int,
    otlp: bool,
    k: int,
    transport: str = "webrtc",
) -> dict:
    """One `turnscope load` run of ``calls`` calls at once (all dialled within 0.1 s) against
    ``bot`` (a PipecatBot)."""
    from turnscope.load.plan import LoadPlan
    from turnscope.load.run import load_test

    url, pid = bot.url, bot.proc.pid  # type: ignore[attr-defined]
    name = f"load-{transport}-{'otlp' if otlp else 'plain'}-{k}"
    bot_before = proc_cpu_s(pid)
    before = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    run = load_test(call_options(transport, url), work / "s.yaml",  # type: ignore[arg-type]
                    LoadPlan(calls=calls, rate=calls * 10.0), outdir=work / name,
                    otlp=f"127.0.0.1:{port}" if otlp else None)  # fmt: skip
    after = [resource.getrusage(w) for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)]
    bot_cpu = proc_cpu_s(pid) - bot_before
    cpu = [
        a.ru_utime + a.ru_stime - b.ru_utime - b.ru_stime
        for a, b in zip(after, before, strict=True)
    ]
    r = run.report
    lags = [c.caller_max_send_lag_ms for c in r.calls if c.caller_max_send_lag_ms is not None]
    return {
        "transport": transport, "otlp": otlp, "completed": r.completed, "calls": len(r.calls),
        "max_lag": max(lags) if lags else float("nan"),
        "late": r.harness.caller_late_frames, "up": r.harness.max_calls_up,
        "split": r.hops.replies if r.hops else 0,
        "replies": sum(len(c.replies) for c in r.calls),
        "load": os.getloadavg()[0],
        "driver_cpu": cpu[0], "workers_cpu": cpu[1], "bot_cpu": bot_cpu,
    }  # fmt: skip


def load_otlp_table(work: Path, calls: int, rounds: int, transport: str = "webrtc") -> list[dict]:
    from tests.interop.pipecat import free_port

    port = free_port()
    rows = []
    bot_of = pipecat_phone_bot if transport in CARRIERS else pipecat_bot
    with bot_of(work / f"bot-{transport}", greeting=False, reply="short", latency_ms=300,
                otlp=f"http://127.0.0.1:{port}") as bot:  # fmt: skip
        for k in range(rounds):
            for otlp in (False, True):
                rows.append(load_round(work, bot, port, calls, otlp, k, transport))
    line = (
        f"a phone line ({transport}; the pipecat phone bot)" if transport in CARRIERS else "WebRTC"
    )
    print()
    print(f"`turnscope load` over {line}: {calls} calls at once against the pipecat bot exporting "
          f"its spans (OTLP/HTTP), {rounds} round(s) each, alternating; cores "
          f"{os.cpu_count()}")  # fmt: skip
    print("| --otlp | round | completed | most calls up | caller send lag max | caller frames "
          "> 20 ms late | replies split hop by hop | driver CPU | workers CPU | bot CPU "
          "| load avg (1 min) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for k, r in enumerate(rows):
        print(f"| {'yes' if r['otlp'] else 'no'} | {k // 2 + 1} | {r['completed']} of "
              f"{r['calls']} | {r['up']} | {r['max_lag']:.1f} ms | {r['late']} | "
              f"{r['split']} of {r['replies']} | {r['driver_cpu']:.2f} s | "
              f"{r['workers_cpu']:.1f} s | {r['bot_cpu']:.1f} s | {r['load']:.2f} |")  # fmt: skip
    for otlp in (False, True):
        mine = [r for r in rows if r["otlp"] is otlp]
        print(
            f"| {'yes' if otlp else 'no'} | all | | | "
            f"{max(r['max_lag'] for r in mine):.1f} ms | {sum(r['late'] for r in mine)} | | "
            f"{sum(r['driver_cpu'] for r in mine):.2f} s | "
            f"{sum(r['workers_cpu'] for r in mine):.1f} s | "
            f"{sum(r['bot_cpu'] for r in mine):.1f} s | |"
        )
    return rows


def lateness_table(rows: list[dict]) -> None:
    """Per transport, the worst caller frame lateness without and with --otlp, side by side."""
    print()
    print(f"worst caller frame lateness (target: none more than {LATE_TARGET_MS:.0f} ms late; "
          "the load average is the highest seen at a run's end: a figure under load is a "
          "ceiling)")  # fmt: skip
    print("| transport | calls at once | without --otlp: worst, frames > 20 ms | with --otlp: "
          "worst, frames > 20 ms | target met with --otlp (judged below load "
          f"{QUIET_LOAD:.0f}) | load avg (1 min) |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for transport in dict.fromkeys(r["transport"] for r in rows):
        mine = [r for r in rows if r["transport"] == transport]
        cells = []
        for otlp in (False, True):
            these = [r for r in mine if r["otlp"] is otlp]
            cells.append(f"{max(r['max_lag'] for r in these):.1f} ms, "
                         f"{sum(r['late'] for r in these)}")  # fmt: skip
        worst = max(r["max_lag"] for r in mine if r["otlp"])
        load = max(r["load"] for r in mine)
        # a busy machine delays the caller's frames with or without a receiver: not a verdict
        met = "yes" if worst <= LATE_TARGET_MS else "NO" if load < QUIET_LOAD else "not judged"
        print(f"| {transport} | {max(r['calls'] for r in mine)} | {cells[0]} | {cells[1]} | "
              f"{met} | {load:.2f} |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--otlp", action="store_true", help="the bot's OTLP spans, hop by hop")
    parser.add_argument(
        "--load-otlp",
        action="store_true",
        help="the run's receiver's cost on the caller's audio, --calls at once",
    )
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside the calls")
    parser.add_argument(
        "--transport",
        choices=["webrtc", *CARRIERS, "both"],
        default="webrtc",
        help="--load-otlp: WebRTC, a phone line (the carrier turnscope plays), or both "
        "(WebRTC, then Twilio)",
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="turnscope-split-"))
    (work / "s.yaml").write_text(SCENARIO)
    if args.otlp:
        otlp_table(work, args.calls)
        return
    if args.load_otlp:
        calls = args.calls if args.calls != 3 else 8
        transports = ["webrtc", "twilio"] if args.transport == "both" else [args.transport]
        rows = [r for t in transports for r in load_otlp_table(work, calls, args.rounds, t)]
        lateness_table(rows)
        return
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.busy)]
    try:
        rows = [
            asyncio.run(one_setting(work, stop, lat, args.calls))
            for stop, lat in itertools.product((0.2, 0.8), (300, 1200))
        ]
        load = os.getloadavg()[0]
    finally:
        for p in busy:
            p.kill()
    print()
    print(f"pipecat bot, {args.calls} calls per setting, 3 replies each; {args.busy} busy loops "
          f"beside (load average {load:.1f}); {time.strftime('%Y-%m-%d')}")  # fmt: skip
    print(
        "| VAD stop | reply latency | replies split | endpointing: measured med, error med / p95 "
        "| processing: measured med, error med / p95 | delivery: measured med, error med / p95 "
        "| parts sum to the ear latency | unsplit as a late start: delivery error if split |"
    )
    print("|---|---|---|---|---|---|---|---|")
    allerr = {p: [] for p in PARTS}
    for r in rows:
        cells = []
        for p in PARTS:
            err, got = r["errors"][p], r["measured"][p]
            allerr[p] += err
            cells.append(
                f"{np.median(got):.0f} ms, {np.median(err):.1f} / {np.percentile(err, 95):.1f} ms"
                if err
                else "-"
            )
        print(
            f"| {r['vad_stop']} s | {r['latency']} ms | {r['split']} of {r['replies']} | "
            + " | ".join(cells)
            + f" | {'exactly' if r['sums'] else 'NO'} | {_late_cell(r['late'])} |"
        )
    print(
        "| all | | | "
        + " | ".join(
            f"error {np.median(allerr[p]):.1f} / {np.percentile(allerr[p], 95):.1f} ms"
            for p in PARTS
        )
        + f" | | {_late_cell([e for r in rows for e in r['late']])} |"
    )


def _late_cell(errors: list[float]) -> str:
    if not errors:
        return "0"
    return f"{len(errors)}: " + ", ".join(f"{e:.0f}" for e in sorted(errors)) + " ms"


if __name__ == "__main__":
    main()
