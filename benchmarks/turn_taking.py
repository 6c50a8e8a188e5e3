"""Turn-taking events (scoring/turn_taking.py) found by the replay pipeline against the same
metrics computed on the synthetic corpus's exact truth. Prints one table.

    .venv/bin/python benchmarks/turn_taking.py [--quick] [--settings FILE] [--corpus DIR]

Per event kind (FDB's conditions: smooth turn-taking, user interruption, backchannel, pause):
precision / recall of the events (a found event matches a truth event of the same kind starting
within MATCH_MS), agreement of the takeover decision on matched events, and the median / p95
absolute error of the timings (latency, t_stop, t_resp) on matched events. The synthetic truth
places whole lines (no planned pauses inside a caller line yet), so pause events have no truth:
they are counted, not scored. The pipecat bot's four settings (issue 32, item 4) are not run here.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CONDITIONS, SCENARIOS, VOICE_PAIRS, build_corpus, prf, stat

from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import Transcriber
from turnscope.capture.file.source import FileSource
from turnscope.offline import ensure_offline
from turnscope.pipeline import run_pipeline
from turnscope.scoring.turn_taking import from_dicts, measure, turn_taking_section
from turnscope.scoring.turn_taking_model import TurnTakingEvent

MATCH_MS = 500.0
KINDS = ("smooth_turn_taking", "user_interruption", "backchannel", "pause_handling")
TIMINGS = ("latency_ms", "t_stop_ms", "t_resp_ms")


def _pair(truth: list[TurnTakingEvent], found: list[TurnTakingEvent]):
    """Each truth event with the unused found event of its kind starting nearest (<= MATCH_MS)."""
    used: set[int] = set()
    out = []
    for t in truth:
        near = [
            (abs(f.start_ms - t.start_ms), i)
            for i, f in enumerate(found)
            if i not in used and f.kind == t.kind and abs(f.start_ms - t.start_ms) <= MATCH_MS
        ]
        best = min(near)[1] if near else None
        if best is not None:
            used.add(best)
        out.append((t, found[best] if best is not None else None))
    return out


def _score(call, found, expected, counts, errors, misses) -> None:
    """Add one call's events to the per-(condition, kind) counts and timing errors."""
    for kind in KINDS:
        t_k = [e for e in expected.events if e.kind == kind]
        f_k = [e for e in found if e.kind == kind]
        for key in ((call.condition, kind), ("all", kind)):
            c = counts[key]
            if kind == "pause_handling":
                c[4] += len(f_k)
                continue
            paired = _pair(t_k, f_k)
            tp = sum(1 for _, f in paired if f is not None)
            c[0] += tp
            c[1] += len(f_k) - tp
            c[2] += len(t_k) - tp
            for t, f in paired:
                if f is None:
                    continue
                c[3] += t.takeover == f.takeover
                for name in TIMINGS:
                    a, b = getattr(t, name), getattr(f, name)
                    if a is not None and b is not None:
                        errors[(key, name)].append(abs(a - b))
        if kind != "pause_handling":
            misses += [
                f"{call.name}: {kind} at {t.start_ms:.0f} ms not found"
                for t, f in _pair(t_k, f_k)
                if f is None
            ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one voice pair, clean only")
    parser.add_argument("--corpus", type=Path, default=Path(".turnscope/bench-corpus"))
    parser.add_argument("--settings", type=Path, default=None)
    parser.add_argument("--misses", action="store_true", help="list the truth events missed")
    args = parser.parse_args()
    ensure_offline()
    settings = load_settings(args.settings)
    pairs = VOICE_PAIRS[:1] if args.quick else VOICE_PAIRS
    conditions = ["clean"] if args.quick else list(CONDITIONS)
    calls = build_corpus(args.corpus, scenarios=SCENARIOS, conditions=conditions, voice_pairs=pairs)
    transcriber = Transcriber(settings.asr, settings.confirm)
    counts = defaultdict(lambda: [0, 0, 0, 0, 0])  # tp, fp, fn, takeover agree, pause found
    errors: dict = defaultdict(list)
    misses: list[str] = []
    for call in calls:
        src = FileSource.stereo(call.wav, chunk_ms=max(settings.audio.chunk_ms, 200))
        result = asyncio.run(run_pipeline(src, settings, transcriber=transcriber))
        found = turn_taking_section(result.assembly, result.heard, result.audio_ms).events
        tr = call.truth
        expected = measure(
            from_dicts(tr["turns"], tr.get("backchannels") or [], (), tr.get("duration_ms"))
        )
        _score(call, found, expected, counts, errors, misses)
    print(f"{len(calls)} calls ({', '.join(conditions)}; {len(pairs)} voice pair(s))")
    head = f"{'condition':<10}{'event':<20}{'P':>6}{'R':>6}{'TOR agree':>11}"
    print(f"{head}   timing |error| median / p95 ms (n)")
    for cond in [*conditions, "all"]:
        for kind in KINDS:
            tp, fp, fn, agree, pauses = counts[(cond, kind)]
            if kind == "pause_handling":
                print(f"{cond:<10}{kind:<20}{'n/a':>6}{'n/a':>6}{pauses:>11}   found, no truth")
                continue
            p, r = prf(tp, fp, fn)
            timing = "  ".join(
                f"{n.removesuffix('_ms')} {stat(v, 50):.0f}/{stat(v, 95):.0f} ({len(v)})"
                for n in TIMINGS
                if (v := errors.get(((cond, kind), n)))
            )
            tor = f"{agree}/{tp}" if tp else "-"
            print(f"{cond:<10}{kind:<20}{p:>6.2f}{r:>6.2f}{tor:>11}   {timing} fp {fp} fn {fn}")
    if args.misses:
        print("\n".join(misses))


if __name__ == "__main__":
    main()
