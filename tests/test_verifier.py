"""The temporal verifier against the contract: every rule and quirk by hand, invariants by
hypothesis, and 4,000 transcripts scored by the reference implementation (golden file)."""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turnscope.scoring import score_voice_episode
from turnscope.scoring.verifier import Gap, Overlap, verifier_facts

REFERENCE_DIALOGUE = [
    {"speaker": "caller", "start_ms": 0, "end_ms": 1500, "text": "I want a refund please"},
    {
        "speaker": "agent",
        "start_ms": 1700,
        "end_ms": 3500,
        "text": "Sure - our refund policy gives you a 30 day window.",
    },
    {"speaker": "caller", "start_ms": 3100, "end_ms": 3300, "text": "wait", "interrupt": True},
    {"speaker": "agent", "start_ms": 3650, "end_ms": 4200, "text": "Yes, go ahead."},
]


def c(start, end, text="", **kw):
    return {"speaker": "caller", "start_ms": start, "end_ms": end, "text": text, **kw}


def a(start, end, text="", **kw):
    return {"speaker": "agent", "start_ms": start, "end_ms": end, "text": text, **kw}


def comps(dialogue, **kw):
    return score_voice_episode(dialogue, **kw)["result"]["components"]


# --- rule 1: empty transcript -------------------------------------------------------------------


@pytest.mark.parametrize("empty", [[], None, ()])
def test_empty_transcript_exact(empty):
    assert score_voice_episode(empty) == {
        "result": {
            "scalar": 0.0,
            "components": {},
            "pass_fail": {"voice": False},
            "explanation": "empty transcript",
        },
        "raw": {"modality": "voice"},
    }


# --- the whole shape on the seed's reference dialogue -------------------------------------------


def test_reference_dialogue_full_result():
    got = score_voice_episode(
        REFERENCE_DIALOGUE, budgets={"max_latency_ms": 1200}, required_content=["refund", "30"]
    )
    assert got == {
        "result": {
            "scalar": 1.0,
            "components": {"latency": 1.0, "turn_taking": 1.0, "barge_in": 1.0, "content": 1.0},
            "pass_fail": {
                "voice": True,
                "latency_floor": True,
                "turn_taking_floor": True,
                "barge_in_floor": True,
                "content_floor": True,
            },
            "explanation": "all voice dimensions met the floor",
        },
        "raw": {"modality": "voice", "turns": 4, "max_latency_ms": 1200, "floors_met": True},
    }
    assert list(got["result"]["components"]) == ["latency", "turn_taking", "barge_in", "content"]
    assert next(iter(got["result"]["pass_fail"])) == "voice"


# --- rule 2: normalisation quirks ---------------------------------------------------------------


def test_missing_fields_default():
    # no speaker -> "None" (ignored but counted); missing times -> 0; text None -> "".
    got = score_voice_episode([{"text": None}, {"speaker": "agent"}])
    assert got["raw"]["turns"] == 2
    assert got["result"]["components"] == {
        "latency": 1.0,
        "turn_taking": 1.0,
        "barge_in": 1.0,
        "content": 1.0,
    }


def test_float_times_truncate_and_numeric_strings_parse():
    # int(1699.9) == 1699: gap 1699 - 500 = 1199 is inside a 1199 budget.
    assert comps([c(0, 500), a(1699.9, 2000)], budgets={"max_latency_ms": 1199})["latency"] == 1.0
    assert comps([c(0, "500"), a("1700", 2000)], budgets={"max_latency_ms": 1199})["latency"] == 0.0


def test_non_numeric_time_raises():
    with pytest.raises(ValueError):
        score_voice_episode([c("zero", 10)])
    with pytest.raises(TypeError):
        score_voice_episode([c(None, 10)])


def test_interrupt_is_truthiness():
    # The string "false" is truthy: the overlap is excused as a barge-in.
    got = comps([a(0, 1200), c(500, 700, interrupt="false")])
    assert got["turn_taking"] == 1.0 and got["barge_in"] == 0.0  # 1200 - 500 > 600
    assert comps([a(0, 1000), c(500, 700, interrupt=0)])["turn_taking"] == 0.0


def test_other_speakers_ignored_but_counted():
    d = [
        c(0, 1000),
        {"speaker": "system", "start_ms": 0, "end_ms": 9000, "text": "refund"},
        {"speaker": "Agent", "start_ms": 500, "end_ms": 600},
        a(1200, 2000),
    ]
    got = score_voice_episode(d, required_content=["refund"])
    assert got["raw"]["turns"] == 4
    assert got["result"]["components"] == {
        "latency": 1.0,
        "turn_taking": 1.0,
        "barge_in": 1.0,
        "content": 0.0,
    }


# --- rule 3: budget -----------------------------------------------------------------------------


def test_budget_default_and_string_budget():
    assert score_voice_episode([c(0, 1)], budgets=None)["raw"]["max_latency_ms"] == 1200
    assert score_voice_episode([c(0, 1)], budgets={"x": 1})["raw"]["max_latency_ms"] == 1200
    assert (
        score_voice_episode([c(0, 1)], budgets={"max_latency_ms": "800"})["raw"]["max_latency_ms"]
        == 800
    )


# --- rule 4: latency ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("start", "inside"), [(1000, True), (1000 + 1200, True), (1000 + 1201, False), (999, False)]
)
def test_latency_boundaries(start, inside):
    # gap 0 and gap == budget are inside; budget + 1 and a negative gap are outside.
    assert comps([c(0, 1000), a(start, start + 100)])["latency"] == (1.0 if inside else 0.0)


def test_latency_uses_list_order_not_time():
    # The agent turn comes first in the list: no caller before it, so it is skipped.
    assert comps([a(5000, 6000), c(0, 1000)])["latency"] == 1.0
    # The nearest caller by list index is the later one in time (end 9000): negative gap.
    assert comps([c(0, 1000), c(8000, 9000), a(1200, 2000)])["latency"] == 0.0
    # Two agent turns after one caller turn are both measured against it.
    assert comps([c(0, 1000), a(1100, 2000), a(2500, 3000)])["latency"] == 0.5


def test_latency_rounding():
    d = [c(0, 100), a(200, 300), c(400, 500), a(600, 700), c(800, 900), a(5000, 5100)]
    assert comps(d)["latency"] == round(2 / 3, 6) == 0.666667


# --- rule 5: turn taking and barge-in -----------------------------------------------------------


def test_overlap_is_strict():
    assert comps([c(0, 1000), a(1000, 2000)])["turn_taking"] == 1.0  # touching, no overlap
    assert comps([c(0, 1001), a(1000, 2000)])["turn_taking"] == 0.0


def test_harmful_overlap_counts_once_per_agent_turn():
    d = [c(0, 1000), c(1500, 1600), c(1700, 1800), a(900, 2000), a(3000, 4000)]
    assert comps(d)["turn_taking"] == 0.5


def test_interrupt_excuses_other_overlaps_of_same_agent_turn():
    d = [c(0, 1000), a(900, 2000), c(1500, 1600, interrupt=True)]
    got = comps(d)
    assert got["turn_taking"] == 1.0
    assert got["barge_in"] == 1.0  # 2000 - 1500 = 500 <= 600


@pytest.mark.parametrize(("agent_end", "handled"), [(2100, True), (2101, False)])
def test_barge_in_yield_window(agent_end, handled):
    d = [a(0, agent_end), c(1500, 1600, interrupt=True)]
    assert comps(d)["barge_in"] == (1.0 if handled else 0.0)


def test_each_overlapping_interrupt_counts_as_a_barge_in():
    d = [a(0, 2000), c(1500, 1600, interrupt=True), c(1000, 1100, interrupt=True)]
    assert comps(d)["barge_in"] == 0.5


def test_interrupt_outside_agent_turns_counts_nothing():
    assert comps([a(0, 1000), c(2000, 2100, interrupt=True)])["barge_in"] == 1.0


def test_no_agent_turns_is_vacuous():
    assert comps([c(0, 1000), c(1000, 2000, interrupt=True)]) == {
        "latency": 1.0,
        "turn_taking": 1.0,
        "barge_in": 1.0,
        "content": 1.0,
    }


# --- rule 6: content ----------------------------------------------------------------------------


def test_content_substring_case_and_join():
    d = [c(0, 1), a(2, 3, "Our REFUND policy: 30"), a(4, 5, "days abc"), a(6, 7, "def")]
    assert comps(d, required_content=["refund", 30, "c d", "30 days", "thirty"])["content"] == 0.8
    assert comps(d, required_content=[])["content"] == 1.0
    assert comps(d, required_content=None)["content"] == 1.0
    assert comps([c(0, 1, "refund")], required_content=["refund"])["content"] == 0.0


# --- rule 7: rounding, floors, scalar -----------------------------------------------------------


def test_floor_is_inclusive_and_verdict_all_or_nothing():
    d = [c(0, 1), a(2, 3, "one two three")]
    got = score_voice_episode(d, required_content=["one", "two", "three", "four"])
    assert got["result"]["components"]["content"] == 0.75
    assert got["result"]["pass_fail"]["voice"] is True
    got = score_voice_episode(d, required_content=["one", "two", "x"])
    assert got["result"]["components"]["content"] == 0.666667
    assert got["result"]["pass_fail"] == {
        "voice": False,
        "latency_floor": True,
        "turn_taking_floor": True,
        "barge_in_floor": True,
        "content_floor": False,
    }
    assert got["result"]["explanation"] == "a voice dimension fell below the floor"
    assert got["result"]["scalar"] == round((1 + 1 + 1 + 0.666667) / 4, 6)
    assert got["raw"]["floors_met"] is False


# --- the reference implementation's own outputs -------------------------------------------------


def _golden():
    path = Path(__file__).with_name("data") / "verifier_golden.jsonl.gz"
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def test_matches_reference_outputs_on_4000_transcripts():
    cases = _golden()
    assert len(cases) == 4000
    for case in cases:
        got = score_voice_episode(
            case["dialogue"], budgets=case["budgets"], required_content=case["required_content"]
        )
        assert json.loads(json.dumps(got)) == case["expected"], case


# --- invariants over random transcripts ---------------------------------------------------------

turn_strategy = st.builds(
    lambda speaker, start, dur, text, interrupt: {
        "speaker": speaker,
        "start_ms": start,
        "end_ms": start + dur,
        "text": text,
        "interrupt": interrupt,
    },
    st.sampled_from(["caller", "agent", "system"]),
    st.integers(0, 20_000),
    st.integers(-200, 4000),
    st.sampled_from(["", "refund", "30 days", "wait", "ok"]),
    st.booleans(),
)
dialogues = st.lists(turn_strategy, min_size=1, max_size=12)
keywords = st.lists(st.sampled_from(["refund", "30", "days", "missing"]), max_size=4)


@settings(max_examples=1500, deadline=None)
@given(dialogues, st.integers(0, 3000), keywords)
def test_invariants(dialogue, budget, required):
    got = score_voice_episode(
        dialogue, budgets={"max_latency_ms": budget}, required_content=required
    )
    res = got["result"]
    values = list(res["components"].values())
    assert all(0.0 <= v <= 1.0 for v in values)
    assert res["scalar"] == round(sum(values) / 4, 6)
    assert res["pass_fail"]["voice"] == all(v >= 0.75 for v in values)
    assert got["raw"]["turns"] == len(dialogue)
    # Only latency depends on list order.
    shuffled = dialogue[:]
    random.Random(0).shuffle(shuffled)
    other = score_voice_episode(
        shuffled, budgets={"max_latency_ms": budget}, required_content=required
    )["result"]["components"]
    for name in ("turn_taking", "barge_in", "content"):
        assert other[name] == res["components"][name]
    # A constant time shift changes nothing.
    shifted = [
        {**t, "start_ms": t["start_ms"] + 777, "end_ms": t["end_ms"] + 777} for t in dialogue
    ]
    assert (
        score_voice_episode(shifted, budgets={"max_latency_ms": budget}, required_content=required)[
            "result"
        ]
        == res
    )
    # Turns of other speakers are invisible to every score.
    without = [t for t in dialogue if t["speaker"] != "system"]
    if without:
        assert (
            score_voice_episode(
                without, budgets={"max_latency_ms": budget}, required_content=required
            )["result"]["components"]
            == res["components"]
        )
    # A larger budget never lowers latency; clearing interrupt flags never raises turn_taking.
    looser = score_voice_episode(dialogue, budgets={"max_latency_ms": budget + 500})
    assert looser["result"]["components"]["latency"] >= res["components"]["latency"]
    flagless = [{**t, "interrupt": False} for t in dialogue]
    assert (
        score_voice_episode(flagless)["result"]["components"]["turn_taking"]
        <= res["components"]["turn_taking"]
    )


# --- the facts the views render -----------------------------------------------------------------


def test_facts_pair_each_turn_and_name_interrupts_that_met_no_agent():
    d = [
        c(0, 1000),
        a(1200, 3000),
        c(2500, 2600, interrupt=True),
        c(4000, 4100, interrupt=True),
        a(4050, 5000),
        c(6000, 6100, interrupt=True),
    ]
    f = verifier_facts(d)
    assert f.gap_of(1) == Gap(0, 1, 200, True)
    assert f.gap_of(4) == Gap(3, 4, -50, False)
    assert f.gap_of(0) is None and f.gap_of(2) is None
    assert f.barge_ins_of(2) == (Overlap(2, 1, True, 500, True),)
    assert f.barge_ins_of(3) == (Overlap(3, 4, True, 1000, False),)
    assert f.barge_ins_of(5) == () and f.unmet_interrupts == (5,)


@settings(max_examples=500, deadline=None)
@given(dialogues)
def test_every_interrupt_is_a_barge_in_or_unmet(dialogue):
    f = verifier_facts(dialogue)
    interrupts = {i for i, t in enumerate(dialogue) if t["speaker"] == "caller" and t["interrupt"]}
    met = {b.caller for b in f.barge_ins}
    assert met | set(f.unmet_interrupts) == interrupts
    assert not met & set(f.unmet_interrupts)
    assert sum(len(f.barge_ins_of(i)) for i in interrupts) == len(f.barge_ins)
