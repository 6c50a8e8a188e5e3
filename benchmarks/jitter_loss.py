"""The receive jitter buffer under packet loss: aiortc's audio buffer against the one a call
uses (capture/webrtc/jitter.py), fed the same 20 ms packets of a 60 s call.

    .venv/bin/python benchmarks/jitter_loss.py [--packets 3000] [--seed 7]

Per loss pattern: received packets the buffer never handed on (they reached the caller and
were never heard: dropped to catch up, or still held when the call ended beyond the 4 every
buffer holds then), and how long a packet waited from its arrival to being handed on (median / max,
ms). A wait that grows and stays is what the receiver re-anchors on: the rest of the call's
audio is then placed that much late.
"""

from __future__ import annotations

import argparse
import random
import statistics

from aiortc.jitterbuffer import JitterBuffer
from aiortc.rtp import RtpPacket

from turnscope.capture.webrtc.jitter import AudioJitterBuffer

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
    return len(order) - handed - 4, waits  # 4: the prefetch any buffer holds at the end


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    patterns = ["none", "one lost at 10 s", "0.5% lost", "1% lost", "2% lost", "5% lost",
                "reordered 1% (neighbours swapped)"]  # fmt: skip
    print(f"{args.packets} packets of 20 ms; never handed on: received, never heard\n")
    print("| loss | aiortc: never handed on | aiortc: wait median / max | "
          "turnscope: never handed on | turnscope: wait median / max |")  # fmt: skip
    print("|---|---|---|---|---|")
    for pattern in patterns:
        order = arrivals(args.packets, pattern, random.Random(args.seed))
        row = [pattern]
        for buffer in (JitterBuffer(capacity=16, prefetch=4), AudioJitterBuffer()):
            discarded, waits = run(buffer, order)
            row += [str(discarded), f"{statistics.median(waits):.0f} / {max(waits):.0f} ms"]
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
