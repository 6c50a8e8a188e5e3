"""Regenerate verifier_golden.jsonl.gz: random transcripts scored by the reference implementation.

The reference is `fi.alk.bench._voice` from the agent-learning-kit 0.3.3 wheel, used as a black box
(it is not vendored). Usage:
    pip download --no-deps agent-learning-kit==0.3.3 -d /tmp/ref
    unzip /tmp/ref/*.whl -d /tmp/ref/x
    python tests/data/make_verifier_golden.py /tmp/ref/x/fi/alk/bench/_voice.py
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import random
import sys
from pathlib import Path

SPEAKERS = ["caller", "agent", "agent", "caller", "system", None]
TEXTS = ["refund 30 days", "Sure", "", None, "wait", "REFUND", "our policy: thirty", "30"]


def random_turn(rng: random.Random) -> dict:
    turn: dict = {}
    if rng.random() < 0.95:
        turn["speaker"] = rng.choice(SPEAKERS)
    if rng.random() < 0.95:
        turn["start_ms"] = rng.choice([rng.randint(-300, 6000), round(rng.uniform(0, 6000), 3)])
    if rng.random() < 0.95:
        turn["end_ms"] = rng.choice([rng.randint(-300, 7000), round(rng.uniform(0, 7000), 3)])
    if rng.random() < 0.8:
        turn["text"] = rng.choice(TEXTS)
    if rng.random() < 0.5:
        turn["interrupt"] = rng.choice([True, False, 0, 1, "false", None])
    return turn


def main(reference: str, n: int = 4000, seed: int = 20261130) -> None:
    spec = importlib.util.spec_from_file_location("reference_voice", reference)
    ref = importlib.util.module_from_spec(spec)
    sys.modules["reference_voice"] = ref
    spec.loader.exec_module(ref)
    rng = random.Random(seed)
    out = Path(__file__).with_name("verifier_golden.jsonl.gz")
    with gzip.open(out, "wt", encoding="utf-8") as fh:
        for _ in range(n):
            dialogue = [random_turn(rng) for _ in range(rng.randint(0, 8))]
            budgets = rng.choice([None, {}, {"max_latency_ms": rng.randint(0, 2500)}])
            required = rng.choice([None, [], ["refund"], ["refund", "30"], ["sure", "nope", 30]])
            expected = ref.score_voice_episode(dialogue, budgets=budgets, required_content=required)
            case = {
                "dialogue": dialogue,
                "budgets": budgets,
                "required_content": required,
                "expected": expected,
            }
            fh.write(json.dumps(case) + "\n")
    print(f"wrote {n} cases to {out}")


if __name__ == "__main__":
    main(sys.argv[1])
