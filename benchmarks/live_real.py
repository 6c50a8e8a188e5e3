"""Live calls where the agent answers with recordings of real people, room tone kept (issue 28.3).

    .venv/bin/python benchmarks/live_real.py [--calls 3]

The stock pipecat bot (tests/interop/pipecat_bot.py) answers every caller line with the next
clip of benchmarks/realspeech.py's read sentences (LibriVox and praatio: ~270 ms of -48 dBFS
room tone before the speech, 200-430 ms after, digital silence between replies), over WebRTC
(Opus, 24 kHz) and over a phone line (tests/interop/pipecat_phone_bot.py, Twilio, 8 kHz mu-law).

Truth of each agent turn: when the bot sent the clip (its own log) + the one-way delay + the
clip's annotated speech offsets. The one-way delay is found in the audio, not from the turns, and
at each boundary on its own: where the clip's 0.6 s around it sits in the recorded agent channel
(agent.wav), by cross-correlation, minus the send time (on a loaded machine the bot's sender
stalls now and then and the rest of a clip arrives later). A boundary whose audio matches the
clip nowhere (normalised correlation under 0.5, also 0.3 and 0.6 s into the speech) is
"unlocated": neither scored nor counted as a turn. Latency error: (agent turn start - caller turn
end) as measured, against (truth start - the caller line's last sample as sent, from the
caller's own log). Each call starts at a different clip, so each is heard after different ones.

The caller side (``--caller``): the caller's lines are those recordings (``audio:`` lines, their
room tone kept where it is within the caller's 40 dB trim), sent between digital silence, and the
bot answers in its own voice. Truth of each caller turn: when the caller's line went out (its own
send log) + the clip's annotated speech extent within the audio sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
import soundfile as sf
import soxr

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from realspeech import SPEECH_DIR, load_clips  # noqa: E402

from tests.interop.pipecat import (  # noqa: E402
    call_bot,
    call_phone_bot,
    pipecat_bot,
    pipecat_phone_bot,
)

LATENCY_MS = 700
CLIP_ORDER = ("L0870", "bobby", "L0890", "mary", "L0920", "L0880", "L0930")
CALLER_LINES = (
    "Hi, I would like a refund for my headphones please.",
    "Can I send them back by post?",
    "How long does the refund take?",
    "Thank you, goodbye.",
)
_SEARCH_MS = 1500  # how far around its send time a clip is looked for (650 ms delays seen)
_PIECE_S = 0.6  # the stretch of the clip matched around each boundary


def clip_files(names: tuple[str, ...] = CLIP_ORDER, speech: Path = SPEECH_DIR) -> list[dict]:
    """--reply-clips entries: each recording's file and its annotated speech extent."""
    clips = load_clips(speech)
    out = []
    for name in names:
        wav = (
            next((speech / "librivox").glob(f"*-{name[1:]}.wav"))
            if name.startswith("L")
            else speech / "praatio" / f"{name}.wav"
        )
        c = clips[name]
        out.append({"wav": str(wav), "speech_start_s": c.start_s, "speech_end_s": c.end_s})
    return out


def scenario_text(replies: int, timeout_s: int = 70) -> str:
    """Caller lines answered by clips; the agent lines are left open (any words)."""
    lines = []
    for i in range(replies):
        lines.append(f"  - caller: {CALLER_LINES[i % len(CALLER_LINES)]}")
        lines.append("  - agent: A recorded reply.")
    return (
        "name: live-real\ntask: {budgets: {max_latency_ms: 4000}}\n"
        f"caller: {{voice: en-us, timeout_s: {timeout_s}, hangup_after_ms: 1200}}\n"
        "script:\n" + "\n".join(lines) + "\n"
    )


def _read(path: Path, rate: int | None = None) -> tuple[np.ndarray, int]:
    x, r = sf.read(str(path), dtype="float64", always_2d=True)
    x = x.mean(axis=1)
    if rate is not None and r != rate:
        return soxr.resample(x, r, rate, quality="VHQ"), rate
    return x, r


def locate(heard: np.ndarray, clip: np.ndarray, rate: int, sent_ms: float, at_s: float) -> float:
    """One-way delay (ms) of the clip's audio around ``at_s`` (seconds into the clip, a speech
    boundary): where its 1 s about there lies in the recorded agent channel, minus when it was
    sent; nan when the match is weak. Each boundary is located on its own: a receiver's jitter
    buffer may slip the audio by a packet or two in the middle of a long clip."""
    half = _PIECE_S / 2
    p0 = max(0, int((at_s - half) * rate))
    piece = clip[p0 : int((at_s + half) * rate)]
    want = sent_ms * rate / 1000 + p0  # where the piece would be with no delay
    a = max(0, int(want - _SEARCH_MS * rate / 1000))
    seg = heard[a : int(want + _SEARCH_MS * rate / 1000) + piece.size]
    if seg.size < piece.size or not piece.any():
        return float("nan")
    n = 1 << int(np.ceil(np.log2(seg.size + piece.size)))
    spec = np.fft.rfft(seg, n) * np.conj(np.fft.rfft(piece, n))
    corr = np.fft.irfft(spec, n)[: seg.size - piece.size + 1]
    lag = int(np.argmax(corr))
    energy = np.sqrt(np.sum(piece**2) * np.sum(seg[lag : lag + piece.size] ** 2))
    if energy <= 0 or corr[lag] / energy < 0.5:
        return float("nan")
    return (a + lag - want) * 1000 / rate


def _near(heard: np.ndarray, clip: np.ndarray, rate: int, sent_ms: float, at_s: float, step: int):
    """The delay at a boundary, or failing that (a quiet tail on the phone line matches poorly)
    at up to 0.6 s into the speech from it."""
    for k in range(3):
        d = locate(heard, clip, rate, sent_ms, at_s + step * k * 0.3)
        if not np.isnan(d):
            return d
    return float("nan")


def score_call(run: Any, call: Any, caller: Any, replies: list[dict], outdir: Path) -> dict:
    """Each clip reply against the agent turn that holds it: start/end/latency errors (ms)."""
    origin = call.clock.origin
    turns = [t for t in run.result.assembly.turns if t.speaker == "agent"]
    said = [
        u
        for u in caller.truth()["utterances"]
        if u.get("end_ms") is not None and u.get("start_ms") is not None
    ]
    caller_turns = [t for t in run.result.assembly.turns if t.speaker == "caller"]
    out: dict[str, Any] = {"start": [], "end": [], "latency": [], "delay": [], "extra": 0}
    out["live_start"] = []  # the live start event (moved past the room tone, if it was) - truth
    starts = live_starts(outdir / "transcript.json", "agent")
    out["rows"] = []  # per reply: the clip, its truth and the turn measured (ms, call clock)
    out["missed"] = out["unlocated"] = 0
    heard, rate = _read(outdir / "agent.wav")
    used = set()
    for rep in replies:
        if rep.get("interrupted") or "speech_start_ms" not in rep:
            continue
        sent = (rep["start_monotonic"] - origin) * 1000
        clip, _ = _read(Path(rep["clip"]), rate)
        a, b = rep["speech_start_ms"], rep["speech_end_ms"]
        d0, d1 = (_near(heard, clip, rate, sent, x / 1000, step) for x, step in ((a, 1), (b, -1)))
        if np.isnan(d0) or np.isnan(d1):
            out["unlocated"] += 1  # its turn is neither scored nor counted as an extra one
            far = sent + rep["clip_ms"] + _SEARCH_MS
            used.update(i for i, t in enumerate(turns) if t.start_ms < far and t.end_ms > sent)
            continue
        out["delay"] += [d0, d1]
        t0, t1 = sent + d0 + a, sent + d1 + b
        hit = [i for i, t in enumerate(turns) if t.start_ms < t1 and t.end_ms > t0]
        if not hit:
            out["missed"] += 1
            continue
        out["extra"] += len(hit) - 1  # the reply's speech split into more than one turn
        i = hit[0]
        used.update(hit)
        out["start"].append(turns[i].start_ms - t0)
        live = [at for at in starts if turns[i].start_ms - _SEARCH_MS <= at <= t1]
        if live:
            out["live_start"].append(live[0] - t0)
        out["end"].append(turns[hit[-1]].end_ms - t1)
        out["rows"].append(
            {
                "clip": Path(rep["clip"]).stem[-5:],
                "truth": (round(t0), round(t1)),
                "turn": (round(turns[i].start_ms), round(turns[hit[-1]].end_ms)),
            }
        )
        before = [u for u in said if u["end_ms"] <= t0]
        heard_before = [t for t in caller_turns if t.end_ms <= turns[i].start_ms]
        if before and heard_before:
            truth_gap = t0 - before[-1]["end_ms"]
            out["latency"].append(turns[i].start_ms - heard_before[-1].end_ms - truth_gap)
    out["extra"] += len(turns) - len(used)
    return out


def live_starts(transcript: Path, channel: str) -> list[float]:
    """Each utterance's live start on ``channel`` as the call told it (transcript.json's events):
    its speech_start, or the start_moved after it."""
    out: list[float] = []
    for e in json.loads(transcript.read_text())["events"]:
        if e["channel"] != channel:
            continue
        if e["type"] == "speech_start" and e.get("first_in_utterance"):
            out.append(e["at_ms"])
        elif e["type"] == "start_moved" and out:
            out[-1] = e["at_ms"]
    return out


def _stats(values: list[float]) -> str:
    if not values:
        return "-"
    v = np.abs(values)
    return f"{np.median(v):.1f} / {np.percentile(v, 95):.1f} ms"


def _signed(values: list[float]) -> str:
    return f"{np.median(values):+.0f} ms" if values else "-"


def run_rows(calls: int, work: Path) -> list[tuple[str, dict]]:
    entries = clip_files()
    work.mkdir(parents=True, exist_ok=True)
    clips = work / "clips.json"
    clips.write_text(json.dumps(entries))
    scenario = work / "live-real.yaml"
    scenario.write_text(scenario_text(4))
    rows = []
    for transport in ("WebRTC (Opus)", "phone line (Twilio, mu-law)"):
        total: dict[str, Any] = {}
        for i in range(calls):
            # each call starts at a different clip, so every clip is heard over the calls
            order = entries[i % len(entries) :] + entries[: i % len(entries)]
            clips.write_text(json.dumps(order))
            knobs = {"greeting": False, "latency_ms": LATENCY_MS, "reply_clips": clips}
            outdir = work / f"{'phone' if 'phone' in transport else 'webrtc'}-{i}"
            if "phone" in transport:
                with pipecat_phone_bot(outdir / "bot", **knobs) as bot:
                    run, call, caller = asyncio.run(call_phone_bot(bot.url, scenario, outdir))
                    replies = bot.replies(session=call.ids.stream)
            else:
                with pipecat_bot(outdir / "bot", **knobs) as bot:
                    run, call, caller = asyncio.run(call_bot(bot.url, scenario, outdir))
                    replies = bot.replies()
            got = score_call(run, call, caller, replies, outdir)
            for k, v in got.items():
                total[k] = total.get(k, 0 if isinstance(v, int) else []) + v
            print(f"  {transport} call {i}: {json.dumps(_round(got))}", flush=True)
        rows.append((transport, total))
    return rows


def caller_scenario(entries: list[dict], timeout_s: int = 70) -> str:
    """Caller lines that are the recordings themselves; the agent lines left open."""
    clips = load_clips()
    names = {c.name: c for c in clips.values()}
    lines = []
    for e in entries:
        stem = Path(e["wav"]).stem
        clip = names.get(stem) or names.get("L" + stem.rsplit("-", 1)[-1])
        text = clip.text if clip is not None else "a recorded line"
        lines.append(f"  - caller: {json.dumps(text)}\n    audio: {json.dumps(e['wav'])}")
        lines.append("  - agent: A reply.")
    return (
        "name: live-real-caller\ntask: {budgets: {max_latency_ms: 4000}}\n"
        f"caller: {{timeout_s: {timeout_s}, hangup_after_ms: 1200}}\n"
        "script:\n" + "\n".join(lines) + "\n"
    )


def sent_offset_ms(wav: str) -> float:
    """Where the audio a recorded caller line sends begins in its file (the caller trims a
    recording to its voiced extent, 40 dB under its peak: actors/caller/speech.py)."""
    from turnscope.actors.caller.speech import voiced_extent

    x, rate = _read(Path(wav), 16000)
    return voiced_extent(x.astype(np.float32), rate)[0] / 16.0


def score_caller(run: Any, caller: Any, entries: list[dict]) -> dict:
    """Each recorded caller line against the caller turn that holds its speech."""
    sent = [u for u in caller.truth()["utterances"] if u.get("end_ms") is not None]
    turns = [t for t in run.result.assembly.turns if t.speaker == "caller"]
    out: dict[str, Any] = {"start": [], "end": [], "missed": 0, "extra": 0, "rows": []}
    used: set[int] = set()
    for u, e in zip(sent, entries, strict=False):
        lead = sent_offset_ms(e["wav"])
        t0 = u["start_ms"] + e["speech_start_s"] * 1000 - lead
        t1 = u["start_ms"] + e["speech_end_s"] * 1000 - lead
        hit = [i for i, t in enumerate(turns) if t.start_ms < t1 and t.end_ms > t0]
        if not hit:
            out["missed"] += 1
            continue
        used.update(hit)
        out["extra"] += len(hit) - 1
        out["start"].append(turns[hit[0]].start_ms - t0)
        out["end"].append(turns[hit[-1]].end_ms - t1)
        out["rows"].append(
            {
                "clip": Path(e["wav"]).stem[-5:],
                "truth": (round(t0), round(t1)),
                "turn": (round(turns[hit[0]].start_ms), round(turns[hit[-1]].end_ms)),
            }
        )
    out["extra"] += len(turns) - len(used)
    return out


def caller_rows(calls: int, work: Path) -> list[tuple[str, dict]]:
    """The caller speaking the recordings (room tone kept) to the bot, both transports."""
    entries = clip_files()
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for transport in ("WebRTC (Opus)", "phone line (Twilio, mu-law)"):
        total: dict[str, Any] = {}
        for i in range(calls):
            order = (entries[i % len(entries) :] + entries[: i % len(entries)])[:4]
            scenario = work / f"caller-{i}.yaml"
            scenario.write_text(caller_scenario(order))
            knobs = {"greeting": False, "latency_ms": LATENCY_MS}
            outdir = work / f"caller-{'phone' if 'phone' in transport else 'webrtc'}-{i}"
            if "phone" in transport:
                with pipecat_phone_bot(outdir / "bot", **knobs) as bot:
                    run, _, caller = asyncio.run(call_phone_bot(bot.url, scenario, outdir))
            else:
                with pipecat_bot(outdir / "bot", **knobs) as bot:
                    run, _, caller = asyncio.run(call_bot(bot.url, scenario, outdir))
            got = score_caller(run, caller, order)
            for k, v in got.items():
                total[k] = total.get(k, 0 if isinstance(v, int) else []) + v
            print(f"  caller side, {transport} call {i}: {json.dumps(_round(got))}", flush=True)
        rows.append((transport, total))
    return rows


def print_caller_rows(rows: list[tuple[str, dict]], calls: int) -> None:
    print()
    print(
        f"caller side: {calls} calls per transport, 4 recorded caller lines each (room tone "
        "kept, digital silence between); errors |measured - truth| median / p95 (signed median)"
    )
    print("| transport | lines scored | missed / extra turns | caller turn start | end |")
    print("|---|---|---|---|---|")
    for name, t in rows:
        print(
            f"| {name} | {len(t['start'])} | {t['missed']} / {t['extra']} | "
            f"{_stats(t['start'])} ({_signed(t['start'])}) | {_stats(t['end'])} "
            f"({_signed(t['end'])}) |"
        )


def _round(d: dict) -> dict:
    return {
        k: [round(x) for x in v] if isinstance(v, list) and k != "rows" else v for k, v in d.items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=3, help="calls per transport")
    parser.add_argument(
        "--caller", action="store_true", help="also the caller side: recorded caller lines"
    )
    args = parser.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    work = Path(tempfile.mkdtemp(prefix="turnscope-live-real-"))
    print_rows(run_rows(args.calls, work), args.calls)
    if args.caller:
        print_caller_rows(caller_rows(args.calls, work / "caller"), args.calls)
    print(f"\nthe calls' bundles are kept in {work} (remove it when done)")


def print_rows(rows: list[tuple[str, dict]], calls: int) -> None:
    """The table of agent turns against the speech in the clips the bot sent, and per clip."""
    print()
    print(
        f"{calls} calls per transport, 4 clip replies each, bot latency {LATENCY_MS} ms; "
        "errors |measured - truth| median / p95 (signed median); target 20 / 60 ms"
    )
    print(
        "| transport | replies scored | unlocated / missed / extra turns | agent turn start | "
        "end | live start (told during the call) | latency error | one-way delay (from the audio) |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for name, t in rows:
        print(
            f"| {name} | {len(t['start'])} | {t['unlocated']} / {t['missed']} / {t['extra']} | "
            f"{_stats(t['start'])} ({_signed(t['start'])}) | {_stats(t['end'])} "
            f"({_signed(t['end'])}) | {_stats(t['live_start'])} ({_signed(t['live_start'])}) | "
            f"{_stats(t['latency'])} ({_signed(t['latency'])}) | "
            f"{_signed(t['delay'])} |"
        )
    print()
    print("per clip (both transports): signed error, measured - truth, median [min, max]")
    print("| clip | room tone before / after the speech | replies | start | end |")
    print("|---|---|---|---|---|")
    tone = {Path(c["wav"]).stem[-5:]: c for c in clip_files()}
    for name in sorted(tone):
        got = [r for _, t in rows for r in t["rows"] if r["clip"] == name]
        c = tone[name]
        after = sf.info(c["wav"]).duration - c["speech_end_s"]
        cells = []
        for k in (0, 1):
            e = [r["turn"][k] - r["truth"][k] for r in got]
            cells.append(f"{np.median(e):+.0f} [{min(e):+.0f}, {max(e):+.0f}] ms" if e else "-")
        print(
            f"| {name} | {c['speech_start_s'] * 1000:.0f} / {after * 1000:.0f} ms | {len(got)} | "
            f"{cells[0]} | {cells[1]} |"
        )


if __name__ == "__main__":
    main()
