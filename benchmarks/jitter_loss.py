"""The receive jitter buffer under packet loss: aiortc's audio buffer against the one a call
uses (capture/webrtc/jitter.py), fed the same 20 ms packets of a 60 s call, then over real
calls against the reference agent losing packets on the wire.

    .venv/bin/python benchmarks/jitter_loss.py [--packets 3000] [--seed 7] [--live] [--dtx]
        [--located] [--reordered]

Per loss pattern: received packets the buffer never handed on (they reached the caller and were
never heard: dropped to catch up or as too late, or still held when the call ended beyond its
prefetch), and how long a packet waited from its arrival to being handed on (median / max, ms:
the scripted caller hears the agent that much after its audio arrived; placement follows the
RTP timestamps, so it does not move the boundaries); for the buffer without a wait a call had
until 2026-12-06, and the call's own (the packets after a hole wait for it). ``--live``: the
refund call against the reference agent losing every Nth RTP packet, with each buffer: agent
audio received, counted lost, gaps not counted lost, agent turns found, and each reply's start
against the agent's log (one-way delay included). ``--dtx``: the scripted caller's reply gaps,
and a caller's that reacts to the agent's words, against the reference agent sending its
silence and leaving it unsent (DTX). ``--located``: where a call placed each lost packet
against where the agent's log says it lost it (after the one-way delay of its turns), and what
the run made of the loss: the evidence whole (lost only in the agent's silence) or degraded
naming the turns it touched (turnscope/lost_audio.py). ``--reordered``: the refund call against
the reference agent and the stock pipecat bot sending some packets after their successors (and
losing some): what the call counted lost, its gaps and how many it took for audio never sent,
the replies' starts against the agent's log, the evidence.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import random
import statistics
import sys
import tempfile
from pathlib import Path

from aiortc.jitterbuffer import JitterBuffer
from aiortc.rtp import RtpPacket

from turnscope.capture.webrtc.jitter import HOLD_MS, AudioJitterBuffer

FRAME_MS = 20
SAMPLES = 960  # a 20 ms Opus frame at 48 kHz


def arrivals(packets: int, pattern: str, rng: random.Random) -> list[int]:
    """The sequence numbers in the order they arrive (lost ones left out)."""
    order = list(range(packets))
    if pattern == "none":
        return order
    if pattern == "one lost at 10 s":
        return [s for s in order if s != 500]
    if pattern.startswith("reordered"):
        for i in range(0, packets - 1):
            if rng.random() < 0.01:
                order[i], order[i + 1] = order[i + 1], order[i]
        return order
    rate = float(pattern.split("%")[0]) / 100
    return [s for s in order if rng.random() >= rate]


def run(buffer: JitterBuffer, order: list[int]) -> tuple[int, list[float]]:
    """Received packets never handed on (beyond the prefetch held at the end), and each
    handed-on packet's wait (ms)."""
    waits, handed = [], 0
    arrived_at: dict[int, int] = {}
    for k, seq in enumerate(order):
        arrived_at[seq] = k
        packet = RtpPacket(payload_type=111, sequence_number=seq % 65536, timestamp=seq * SAMPLES)
        packet._data = b"\x00"  # type: ignore[attr-defined]  (what aiortc's receiver sets)
        _, frame = buffer.add(packet)
        if frame is not None:
            handed += 1
            # The packet that went on arrived as the k'th packet of the stream arrived: the
            # wait is the arrivals between, at one per 20 ms.
            waits.append((k - arrived_at[frame.timestamp // SAMPLES]) * FRAME_MS)
    return len(order) - handed - buffer._prefetch, waits  # the prefetch held at the end


def run_waiting(order: list[int]) -> tuple[int, list[float]]:
    """As ``run``, for a call's buffer: packets after a hole wait for it (HOLD_MS), released
    as the call's 20 ms tick does (between packets, one per 20 ms), then until none is left."""
    now = [0.0]
    came: dict[int, float] = {}
    waits: list[float] = []

    def deliver(frame, _payload_type: int) -> None:  # type: ignore[no-untyped-def]
        waits.append(round((now[0] - came[frame.timestamp // SAMPLES]) * 1000))

    buffer = AudioJitterBuffer(prefetch=0, deliver=deliver, clock=lambda: now[0])
    for seq in order:
        came[seq] = now[0]
        packet = RtpPacket(payload_type=111, sequence_number=seq % 65536, timestamp=seq * SAMPLES)
        packet._data = b"\x00"  # type: ignore[attr-defined]
        buffer.add(packet)
        now[0] += FRAME_MS / 1000
        buffer.release()
    now[0] += 1.0
    buffer.release()
    return len(order) - len(waits), waits


async def _placed(sc, knobs: dict, folder: Path, ours: bool = True):  # type: ignore[no-untyped-def]
    """One call of ``sc`` against the reference agent with ``knobs``; ``ours`` False: with
    aiortc's own buffer and no modelled playout (its 4 packets of prefetch make the 80 ms).
    The run, the call, the agent's log of it and the source's details."""
    from unittest import mock

    from turnscope.actors.agent.behaviour import AgentBehaviour
    from turnscope.actors.agent.server import AgentServer
    from turnscope.actors.caller.scenario_contract import scenario_contract
    from turnscope.asr.settings import load_settings
    from turnscope.capture.webrtc.call import CallOptions
    from turnscope.live_call import place_call

    server = AgentServer(AgentBehaviour.from_scenario(sc, **knobs))
    url = await server.start() + "/api/offer"
    keep = mock.patch("turnscope.capture.webrtc.call.tolerate_loss", lambda *_, **__: None)
    no_playout = mock.patch("turnscope.capture.webrtc.call.PLAYOUT_MS", 0.0)
    try:
        with (
            contextlib.nullcontext() if ours else keep,
            contextlib.nullcontext() if ours else no_playout,
        ):
            run, call, _ = await place_call(CallOptions(url, loopback_only=True), sc,
                                            load_settings(), scenario_contract(sc), folder,
                                            console=None)  # fmt: skip
        truth = (await server.wait_finished(1))[0]
    finally:
        await server.stop()
    details = json.loads((folder / "result.json").read_text())["source"]["details"]
    return run, call, truth, details


def _refund():  # type: ignore[no-untyped-def]
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.configs import config_path

    return load_scenario(config_path("scenarios", "refund-call.yaml"))


async def live_call(every: int | None, ours: bool, folder: Path) -> str:
    """One refund call against the reference agent losing every ``every``th packet."""
    run, call, truth, d = await _placed(_refund(), {"drop_every": every}, folder, ours)
    origin = call.clock.origin
    sent = [(u["start_monotonic"] - origin) * 1000 for u in truth["utterances"]]
    found = [t.start_ms for t in run.result.assembly.turns if t.speaker == "agent"]
    starts = (
        " / ".join(f"{f - s:.0f}" for f, s in zip(found, sent, strict=True))
        if len(found) == len(sent)
        else "-"
    )
    return (f"| {f'1 in {every}' if every else 'none'} | {'turnscope' if ours else 'aiortc'} | "
            f"{d['agent_frames']} | {d['agent_lost_frames']} | {d['agent_unsent_ms'] / 1000:.1f} s"
            f" | {len(found)} of {len(sent)} | {starts} |")  # fmt: skip


async def located_call(every: int, in_pauses: bool, folder: Path) -> str:
    """The refund call against the reference agent losing every ``every``th packet (only in
    its pauses, or anywhere): the loss located against the agent's log, and the verdict."""
    knobs = {"drop_every": every, "drop_in_pauses": in_pauses}
    run, call, truth, d = await _placed(_refund(), knobs, folder)
    origin = call.clock.origin
    starts = [t.start_ms for t in run.result.assembly.turns if t.speaker == "agent"]
    sent = [(u["start_monotonic"] - origin) * 1000 for u in truth["utterances"]]
    one_way = statistics.median(m - s for m, s in zip(starts, sent, strict=False))
    logged = [(e["monotonic"] - origin) * 1000 + one_way for e in truth["events"]
              if e["event"] == "packet_lost"]  # fmt: skip
    # Each located loss against the nearest the agent logged (its turns' one-way delay added):
    # a constant lag is the turns' own estimate (a loss at a reply's onset moves its start).
    lag, spread = _lag_spread(call.info.lost, logged)
    codes = sorted({n.code_name for n in run.result.findings.notes if n.severity == "degraded"})
    where = "in its pauses" if in_pauses else "anywhere"
    verdict = "passed" if run.outcome.passed else "failed"
    return (f"| 1 in {every}, {where} | {d['agent_lost_frames']} | {len(call.info.lost)} | "
            f"{one_way:.0f} ms | {lag:+.1f} / {spread:.1f} ms | "
            f"{', '.join(codes) or 'whole'} | {verdict} |")  # fmt: skip


def _lag_spread(lost: list, logged: list[float]) -> tuple[float, float]:
    """Each located loss against the nearest logged one: the median offset, and the most any
    is off it."""
    offsets = [x.start_ms - min(logged, key=lambda t: abs(x.start_ms - t)) for x in lost]
    lag = statistics.median(offsets)
    return lag, max(abs(o - lag) for o in offsets)


async def pipecat_located(every: int, folder: Path) -> str:
    """The refund call against the stock pipecat bot losing every ``every``th packet (its own
    ``--lose-every``, each loss in its truth log): as ``located_call``'s row."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from tests.interop.pipecat import call_bot, pipecat_bot
    from turnscope.configs import config_path

    knobs = {"greeting": True, "reply": "long", "latency_ms": 300, "lose_every": every}
    with pipecat_bot(folder / "bot", **knobs) as bot:
        run, call, _ = await call_bot(bot.url, config_path("scenarios", "refund-call.yaml"),
                                      folder / "call")  # fmt: skip
        truth = bot.truth()
    origin = call.clock.origin
    starts = [t.start_ms for t in run.result.assembly.turns if t.speaker == "agent"]
    sent = [(r["start_monotonic"] - origin) * 1000 for r in truth if r["event"] == "reply"]
    one_way = statistics.median(m - s for m, s in zip(starts, sent, strict=False))
    logged = [(r["monotonic"] - origin) * 1000 + one_way for r in truth
              if r["event"] == "packet_lost"]  # fmt: skip
    lag, spread = _lag_spread(call.info.lost, logged)
    details = call.info.details
    codes = sorted({n.code_name for n in run.result.findings.notes if n.severity == "degraded"})
    verdict = "passed" if run.outcome.passed else "failed"
    return (f"| pipecat bot, 1 in {every}, anywhere | {details['agent_lost_frames']} | "
            f"{len(call.info.lost)} | {one_way:.0f} ms | {lag:+.1f} / {spread:.1f} ms | "
            f"{', '.join(codes) or 'whole'} | {verdict} |")  # fmt: skip


async def reordered_call(
    swap: int, behind: int, lose: int | None, pipecat: bool, folder: Path
) -> str:
    """The refund call against the reference agent (or the stock pipecat bot) sending every
    ``swap``th packet after the ``behind`` after it (and losing every ``lose``th): what reached
    the caller and what the call counted lost, its turns against the agent's log, the
    evidence."""
    knobs = {"swap_every": swap, "swap_behind": behind, "drop_every": lose}
    if pipecat:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from tests.interop.pipecat import call_bot, pipecat_bot
        from turnscope.configs import config_path

        bot_knobs = {"greeting": True, "reply": "long", "latency_ms": 300, "swap_every": swap,
                     "swap_behind": behind, "lose_every": lose or 0}  # fmt: skip
        with pipecat_bot(folder / "bot", **bot_knobs) as bot:
            run, call, _ = await call_bot(bot.url, config_path("scenarios", "refund-call.yaml"),
                                          folder / "call")  # fmt: skip
            truth = bot.truth()
        sent = [r["start_monotonic"] for r in truth if r["event"] == "reply"]
        logged_lost = sum(1 for r in truth if r["event"] == "packet_lost")
        details = json.loads((folder / "call" / "result.json").read_text())["source"]["details"]
    else:
        run, call, truth, details = await _placed(_refund(), knobs, folder)
        sent = [u["start_monotonic"] for u in truth["utterances"]]
        logged_lost = sum(1 for e in truth["events"] if e["event"] == "packet_lost")
    origin = call.clock.origin
    found = [t.start_ms for t in run.result.assembly.turns if t.speaker == "agent"]
    starts = (" / ".join(f"{f - (s - origin) * 1000:.0f}" for f, s in zip(found, sent,
              strict=True)) if len(found) == len(sent) else "-")  # fmt: skip
    codes = sorted({n.code_name for n in run.result.findings.notes if n.severity == "degraded"})
    who = "pipecat bot" if pipecat else "reference agent"
    wire = f"1 in {swap} swapped" if behind == 1 else f"1 in {swap} {behind} packets late"
    wire += f", 1 in {lose} lost" if lose else ""
    return (f"| {who} | {wire} | {logged_lost} | {details['agent_lost_frames']} "
            f"({details.get('agent_too_late_frames', '-')}) | "
            f"{details['agent_gaps']} ({details['agent_unsent_ms']:.0f} ms) | "
            f"{len(found)} of {len(sent)} | {starts} | {details.get('agent_most_behind_ms', 0):.0f}"
            f" ms | {', '.join(codes) or 'whole'} |")  # fmt: skip


# A caller that reacts to the agent's words (it waits for the pipeline's transcript of them).
REACTIVE = """
name: react
facts:
  order number: {value: four two seven, asked_by: [order number, your order]}
script:
  - agent: Hello, how can I help?
  - caller: Hi, I would like to know when my order ships.
  - agent: Sure. What is your order number?
  - choose:
      - when: {says: [ships tomorrow]}
        caller: Great, thank you. Bye.
      - caller: Sorry, I did not catch that.
  - agent: Thanks. Order four two seven ships tomorrow.
  - caller: Great, thank you. Bye.
  - agent: Goodbye.
"""


async def dtx_call(reactive: bool, dtx: bool, folder: Path) -> str:
    """The caller's reply gaps (the agent's turn end to the caller's start) against the
    reference agent sending its silence or leaving it unsent (DTX)."""
    from turnscope.actors.caller.scenario_file import load_scenario

    if reactive:
        folder.mkdir(parents=True, exist_ok=True)
        (folder.parent / "react.yaml").write_text(REACTIVE)
        sc = load_scenario(folder.parent / "react.yaml")
    else:
        sc = _refund()
    run, *_ = await _placed(sc, {"dtx": dtx}, folder)
    turns = run.result.assembly.turns
    gaps = [b.start_ms - a.end_ms for a, b in itertools.pairwise(turns)
            if (a.speaker, b.speaker) == ("agent", "caller") and b.start_ms > a.end_ms]  # fmt: skip
    shown = " / ".join(f"{g:.0f}" for g in gaps)
    details = run.result.info.details
    return (f"| {sc.name} ({'reacts to words' if reactive else 'scripted'}) | "
            f"{'DTX' if dtx else 'sends its silence'} | {shown} | "
            f"{statistics.median(gaps):.0f} ms | {details.get('agent_unsent_ms', 0):.0f} / "
            f"{details.get('agent_pause_heard_ms', 0):.0f} ms | "
            f"{details.get('agent_most_behind_ms', 0):.0f} ms |")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--live", action="store_true", help="also real calls (about 5 min)")
    parser.add_argument(
        "--dtx", action="store_true", help="the caller's reply gaps against a DTX agent (2 min)"
    )
    parser.add_argument(
        "--located", action="store_true", help="where lost packets were placed (2 min)"
    )
    parser.add_argument(
        "--reordered", action="store_true", help="calls whose agent swaps packets (3 min)"
    )
    args = parser.parse_args()
    patterns = ["none", "one lost at 10 s", "0.5% lost", "1% lost", "2% lost", "5% lost",
                "reordered 1% (neighbours swapped)"]  # fmt: skip
    print(f"{args.packets} packets of 20 ms; never handed on: received, never heard\n")
    print("| loss | aiortc: never handed on | aiortc: wait median / max | "
          "prefetch 0, no wait: never handed on | its wait median / max | "
          f"a call's (a hole waited for {HOLD_MS:.0f} ms): never handed on | "
          "its wait median / max |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for pattern in patterns:
        order = arrivals(args.packets, pattern, random.Random(args.seed))
        row = [pattern]
        for buffer in (JitterBuffer(capacity=16, prefetch=4), AudioJitterBuffer(prefetch=0)):
            discarded, waits = run(buffer, order)
            row += [str(discarded), f"{statistics.median(waits):.0f} / {max(waits):.0f} ms"]
        discarded, waits = run_waiting(order)
        row += [str(discarded), f"{statistics.median(waits):.0f} / {max(waits):.0f} ms"]
        print("| " + " | ".join(row) + " |")
    if args.dtx:
        print("\nthe caller's reply gaps (agent end -> caller start) against the reference agent\n")
        print("| scenario | agent | reply gaps (ms) | median | unsent / heard as it went | "
              "agent channel behind the call, at worst |")  # fmt: skip
        print("|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory() as tmp:
            for reactive in (False, True):
                for dtx in (False, True):
                    folder = Path(tmp) / f"{reactive}-{dtx}"
                    print(asyncio.run(dtx_call(reactive, dtx, folder)), flush=True)
    if args.located:
        print("\nwhere the refund call placed the agent's lost packets, and the verdict\n")
        print("| lost on the wire | counted lost | located | one-way (turns) | placed vs the "
              "agent's log: lag / spread | evidence | call |")  # fmt: skip
        print("|---|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory() as tmp:
            for every, in_pauses in ((50, False), (25, False), (7, False), (5, True)):
                folder = Path(tmp) / f"{every}-{in_pauses}"
                print(asyncio.run(located_call(every, in_pauses, folder)), flush=True)
            print(asyncio.run(pipecat_located(25, Path(tmp) / "pipecat")), flush=True)
    if args.reordered:
        print("\nthe refund call with the agent's packets swapped on the wire\n")
        print("| agent | on the wire | lost by the agent | counted lost (too late) | "
              "gaps (of them unsent) | "
              "agent turns found | reply starts vs the agent's log (ms) | behind, at worst | "
              "evidence |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|---|")
        with tempfile.TemporaryDirectory() as tmp:
            for swap, behind, lose, pipecat in ((50, 1, None, False), (13, 1, None, False),
                                                (13, 1, 25, False), (25, 4, None, False),
                                                (13, 1, None, True), (13, 1, 25, True),
                                                (25, 4, None, True)):  # fmt: skip
                folder = Path(tmp) / f"{swap}-{behind}-{lose}-{pipecat}"
                print(asyncio.run(reordered_call(swap, behind, lose, pipecat, folder)),
                      flush=True)  # fmt: skip
    if not args.live:
        return
    print("\nthe refund call against the reference agent losing packets on the wire\n")
    print("| lost on the wire | buffer | agent frames received | counted lost | other gaps | "
          "agent turns found | reply starts vs the agent's log (ms) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for every in (None, 25, 7):
            for ours in (False, True):
                folder = Path(tmp) / f"{every}-{ours}"
                print(asyncio.run(live_call(every, ours, folder)), flush=True)


if __name__ == "__main__":
    main()
