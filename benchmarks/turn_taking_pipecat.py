"""The stock pipecat bot in four settings, each called with `turnscope bench` on the suite of
turn-taking conditions (benchmarks/turn_taking_suite.json): the turn-taking metrics side by side.
Used by benchmarks/turn_taking.py --pipecat.

Settings: pipecat's Silero VAD stop at 0.2 s or 0.8 s, interruptions on or off
(tests/interop/pipecat_bot.py --vad-stop-secs, --ignore-barge-ins). The stop strategy's own
extra wait (--user-speech-timeout) is 0 and the reply comes 300 ms after pipecat's turn end, so
the VAD stop is what decides when the bot takes the turn; replies are the bot's long ones (four
sentences, 8.2 s), so backchannels and barge-ins land inside them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tests.interop.pipecat import pipecat_bot  # noqa: E402
from turnscope.scoring.suites.turn_taking_gate import task_metrics  # noqa: E402

SUITE = ROOT / "benchmarks" / "turn_taking_suite.json"
BASE = {"reply": "long", "greeting": False, "latency_ms": 300, "user_speech_timeout": 0.0}
SETTINGS = {
    "stop 0.2 s, interruptions on": {"vad_stop_secs": 0.2},
    "stop 0.8 s, interruptions on": {"vad_stop_secs": 0.8},
    "stop 0.2 s, interruptions off": {"vad_stop_secs": 0.2, "ignore_barge_ins": True,
                                      "answer_barge_ins": True},
    "stop 0.8 s, interruptions off": {"vad_stop_secs": 0.8, "ignore_barge_ins": True,
                                      "answer_barge_ins": True},
}  # fmt: skip
# Each metric, and the settings pair whose difference it should show (a, b, which is higher):
# a later VAD stop waits through pauses; interruptions on yield to barge-ins (and, pipecat's
# default having no backchannel filter, to "mm-hmm" too).
ROWS = (
    ("pause_tor", "pause TOR (lower better)"),
    ("pause_talk_over_ms", "talk-over at pauses, ms"),
    ("backchannel_false_yield", "false-yield rate"),
    ("smooth_tor", "smooth TOR"),
    ("takeover_latency_ms", "takeover latency, ms"),
    ("interruption_tor", "interruption TOR"),
    ("t_stop_ms", "t_stop, ms (median)"),
    ("t_resp_ms", "t_resp, ms (median)"),
)
EXPECT = (  # (metric, higher setting, lower setting)
    # A later VAD stop waits through more of the caller's pauses: less speech over them (with
    # interruptions on the caller going on cuts the bot under FDB's 1 s, so talk-over shows it),
    # fewer takeovers (with interruptions off the bot finishes what it started).
    ("pause_talk_over_ms", "stop 0.2 s, interruptions on", "stop 0.8 s, interruptions on"),
    ("pause_tor", "stop 0.2 s, interruptions off", "stop 0.8 s, interruptions off"),
    ("takeover_latency_ms", "stop 0.8 s, interruptions on", "stop 0.2 s, interruptions on"),
    # Interruptions on: the bot stops at a barge-in (and, with no backchannel filter, at "mm-hmm").
    ("t_stop_ms", "stop 0.2 s, interruptions off", "stop 0.2 s, interruptions on"),
    ("t_stop_ms", "stop 0.8 s, interruptions off", "stop 0.8 s, interruptions on"),
    ("interruption_tor", "stop 0.2 s, interruptions on", "stop 0.2 s, interruptions off"),
    ("backchannel_false_yield", "stop 0.2 s, interruptions on", "stop 0.2 s, interruptions off"),
)


def run_setting(name: str, knobs: dict[str, Any], work: Path) -> dict[str, Any]:
    """One setting: the bot started, the suite benched against it; its scorecard, and each
    task's metrics read from its bundle (a call the scorecard voids as degraded, e.g. caller
    audio sent late on a loaded machine, still has them: ``degraded`` says which)."""
    folder = work / name.replace(" ", "").replace(",", "-").replace(".", "")
    with pipecat_bot(folder, **BASE, **knobs) as bot:
        cmd = [
            str(ROOT / ".venv" / "bin" / "turnscope"), "bench", str(SUITE), "--agent", bot.url,
            "--loopback-only", "-o", str(folder / "bench.json"), "--runs", str(folder / "runs"),
            "--force", "--no-fail", "-q",
        ]  # fmt: skip
        subprocess.run(cmd, check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    card = json.loads((folder / "bench.scorecard.json").read_text())
    tasks, degraded = {}, []
    for result in sorted((folder / "runs").glob("*/result.json")):
        doc = json.loads(result.read_text())
        tasks[result.parent.name] = task_metrics(doc.get("turn_taking"))
        if doc.get("degraded"):
            degraded.append(f"{result.parent.name}: {doc['degraded'][0]}")
    card["measured"] = {"tasks": tasks, "all": _means(tasks.values()), "degraded": degraded}
    return card


def _means(rows: Any) -> dict[str, float]:
    rows = list(rows)
    out = {}
    for key, _ in ROWS:
        vals = [r[key] for r in rows if key in r]
        if vals:
            out[key] = round(sum(vals) / len(vals), 4)
    return out


def table(cards: dict[str, dict[str, Any]]) -> list[str]:
    """The metrics (the suite's ``all`` tag) side by side, then each expected direction."""
    names = list(cards)
    cols = [n.replace("interruptions ", "int. ") for n in names]
    lines = [f"{'metric':<28}" + "".join(f"{c:>22}" for c in cols)]
    vals = {n: cards[n]["measured"]["all"] for n in names}
    for key, label in ROWS:
        cells = []
        for n in names:
            v = vals[n].get(key)
            cells.append("not exercised" if v is None else f"{v:.3f}" if v <= 1 else f"{v:.0f}")
        lines.append(f"{label:<28}" + "".join(f"{c:>22}" for c in cells))
    lines.append("")
    for key, hi, lo in EXPECT:
        a, b = vals[hi].get(key), vals[lo].get(key)
        ok = "yes" if a is not None and b is not None and a > b else "NO"
        lines.append(f"{key}: {hi} ({a}) > {lo} ({b})? {ok}")
    for n in names:
        for d in cards[n]["measured"]["degraded"]:
            lines.append(f"degraded ({n}) {d}")
    return lines


def main(work: Path) -> None:
    cards = {name: run_setting(name, knobs, work) for name, knobs in SETTINGS.items()}
    (work / "cards.json").write_text(json.dumps(cards))
    print("\n".join(table(cards)))


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(".turnscope/bench-pipecat-tt"))
