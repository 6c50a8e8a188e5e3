"""Turn-taking events (scoring/turn_taking.py) found by the replay pipeline against the same
metrics computed on the synthetic corpus's exact truth; then, with --pipecat, the stock pipecat
bot in four settings side by side (benchmarks/turn_taking_pipecat.py). Prints tables.

    .venv/bin/python benchmarks/turn_taking.py [--quick] [--settings FILE] [--corpus DIR]
    .venv/bin/python benchmarks/turn_taking.py --pipecat [--work DIR]

Per event kind (FDB's conditions: smooth turn-taking, user interruption, backchannel, pause;
and the events inside them: a pause takeover, a false yield): precision / recall of the events
(a found event matches a truth event of the same kind starting within MATCH_MS; a smooth
turn-taking event, ending within it), agreement of
the takeover decision on matched events, and the median / p95 absolute error of the timings
(latency, t_stop, t_resp, talk-over) on matched events. The corpus adds the two pause scenarios
(pauses.yaml: the agent waits; pause-takeover.yaml: it jumps in once in three) and
backchannel-yield.yaml (the agent stops at two backchannels of three: false yields, exact in
truth) to the usual five. The replay is handed the pauses and backchannels the rendered caller
made (truth.json), as a live caller reports its own; the rows ``asr-only`` score the same
replays without the caller's backchannels (a recording with no caller report: what the ASR
alone makes of a hum). --misses prints every missed and false event, and every takeover found
otherwise than in truth.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from common import CONDITIONS, SCENARIOS, VOICE_PAIRS, build_corpus, prf, stat
from turn_taking_pipecat import main as pipecat_main

from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import Transcriber
from turnscope.capture.file.source import FileSource
from turnscope.offline import ensure_offline
from turnscope.pipeline import run_pipeline
from turnscope.scoring.turn_taking import from_dicts, measure, turn_taking_section
from turnscope.scoring.turn_taking_input import truth_backchannels, truth_pauses
from turnscope.scoring.turn_taking_model import Behaviour, TurnTakingEvent

MATCH_MS = 500.0
KINDS = (
    "smooth_turn_taking", "user_interruption", "backchannel", "pause_handling",
    "pause_takeover", "false_yield",
)  # fmt: skip
TIMINGS = ("latency_ms", "t_stop_ms", "t_resp_ms", "overlap_ms")
PAUSE_SCENARIOS = ["pauses", "pause-takeover", "backchannel-yield"]
ASR_ONLY = "asr-only"  # the rows scored without the caller's backchannels


def _derived(events: list[TurnTakingEvent]) -> list[TurnTakingEvent]:
    """The events inside the conditions, as kinds of their own: a pause the agent took, a
    backchannel it stopped at."""
    out = list(events)
    for e in events:
        if e.kind == "pause_handling" and e.takeover:
            out.append(e.model_copy(update={"kind": "pause_takeover"}))
        if e.kind == "backchannel" and e.behaviour not in (None, Behaviour.KEPT_TALKING):
            out.append(e.model_copy(update={"kind": "false_yield"}))
    return out


def _at(e: TurnTakingEvent) -> float:
    """Where an event is anchored: a smooth turn-taking event at the caller's end of turn (the
    line a pause split begins at its resumption in the pipeline's turns), the others at start."""
    return e.end_ms if e.kind == "smooth_turn_taking" else e.start_ms


def _pair(truth: list[TurnTakingEvent], found: list[TurnTakingEvent]):
    """Each truth event with the unused found event of its kind anchored nearest (<= MATCH_MS)."""
    used: set[int] = set()
    out = []
    for t in truth:
        near = [
            (abs(_at(f) - _at(t)), i)
            for i, f in enumerate(found)
            if i not in used and f.kind == t.kind and abs(_at(f) - _at(t)) <= MATCH_MS
        ]
        best = min(near)[1] if near else None
        if best is not None:
            used.add(best)
        out.append((t, found[best] if best is not None else None))
    return out


def _score(call, found, expected, counts, errors, misses, rows=None) -> None:
    """Add one call's events to the per-(condition, kind) counts and timing errors (``rows``:
    the conditions to count them under, default the call's and "all")."""
    for kind in KINDS:
        t_k = [e for e in expected.events if e.kind == kind]
        f_k = [e for e in found if e.kind == kind]
        for key in ((r, kind) for r in rows or (call.condition, "all")):
            c = counts[key]
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
        if rows is not None:
            continue  # the asr-only rows: their misses are the assembly's, listed once below
        paired = _pair(t_k, f_k)
        misses += [f"{call.name}: {kind} at {t.start_ms:.0f} ms not found"
                   for t, f in paired if f is None]  # fmt: skip
        misses += [f"{call.name}: {kind} at {t.start_ms:.0f} ms: takeover {t.takeover} in "
                   f"truth, {f.takeover} found" for t, f in paired
                   if f is not None and t.takeover != f.takeover]  # fmt: skip
        hit = {id(f) for _, f in paired if f is not None}
        misses += [f"{call.name}: {kind} at {f.start_ms:.0f} ms found, not in truth"
                   for f in f_k if id(f) not in hit]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one voice pair, clean only")
    parser.add_argument("--corpus", type=Path, default=Path(".turnscope/bench-corpus"))
    parser.add_argument("--settings", type=Path, default=None)
    parser.add_argument("--misses", action="store_true", help="list the truth events missed")
    parser.add_argument("--pipecat", action="store_true", help="the pipecat bot's four settings")
    parser.add_argument("--work", type=Path, default=Path(".turnscope/bench-pipecat-tt"))
    args = parser.parse_args()
    ensure_offline()
    if args.pipecat:
        pipecat_main(args.work)
        return
    settings = load_settings(args.settings)
    pairs = VOICE_PAIRS[:1] if args.quick else VOICE_PAIRS
    conditions = ["clean"] if args.quick else list(CONDITIONS)
    scenarios = [*SCENARIOS, *PAUSE_SCENARIOS]
    calls = build_corpus(args.corpus, scenarios=scenarios, conditions=conditions, voice_pairs=pairs)
    transcriber = Transcriber(settings.asr, settings.confirm)
    counts = defaultdict(lambda: [0, 0, 0, 0])  # tp, fp, fn, takeover agree
    errors: dict = defaultdict(list)
    misses: list[str] = []
    for call in calls:
        src = FileSource.stereo(call.wav, chunk_ms=max(settings.audio.chunk_ms, 200))
        result = asyncio.run(run_pipeline(src, settings, transcriber=transcriber))
        tr = call.truth
        planned = truth_pauses(tr)  # what the rendered caller made, as a live caller reports it
        said = truth_backchannels(tr)
        a, heard, ms = result.assembly, result.heard, result.audio_ms
        found = _derived(turn_taking_section(a, heard, ms, planned, said).events)
        expected = measure(
            from_dicts(tr["turns"], tr.get("backchannels") or [], planned, tr.get("duration_ms"))
        )
        expected.events = _derived(expected.events)
        _score(call, found, expected, counts, errors, misses)
        asr_only = _derived(turn_taking_section(a, heard, ms, planned).events)
        _score(call, asr_only, expected, counts, errors, [], rows=(ASR_ONLY,))
    print(f"{len(calls)} calls ({', '.join(conditions)}; {len(pairs)} voice pair(s))")
    head = f"{'condition':<10}{'event':<20}{'P':>6}{'R':>6}{'TOR agree':>11}"
    print(f"{head}   timing |error| median / p95 ms (n)")
    for cond in [*conditions, "all", ASR_ONLY]:
        for kind in KINDS:
            tp, fp, fn, agree = counts[(cond, kind)]
            if tp + fp + fn == 0:
                print(f"{cond:<10}{kind:<20}{'-':>6}{'-':>6}{'-':>11}   none in truth, none found")
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
