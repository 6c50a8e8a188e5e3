"""Turn-taking metrics in Full-Duplex-Bench's terms (scoring/turn_taking.py).

Conformance: the hand-built cases below are timestamped turns written here; their expected
numbers were computed by hand from Full-Duplex-Bench's definitions (v1/v1.5, commit d7336bd,
v1_v1.5/evaluation/: eval_pause_handling.py, eval_smooth_turn_taking.py,
eval_user_interruption.py, eval_backchannel.py, get_timing.py): takeover when the agent's speech
(first word start to last word end) lasts >= 1 s or has more than 3 words; smooth turn-taking
latency = first agent word - caller end of turn, a negative one counted as 0 in the mean; user
interruption latency (v1) and latency_resp (v1.5) from the END of the interrupting speech;
v1.5 latency_stop = the overlap from the caller's start, capped at the caller's end. Nothing is
fetched at run time. Then one real replay, checked for sense.
"""

from __future__ import annotations

import json

from turnscope.scoring.turn_taking import from_dicts, measure, takes_over
from turnscope.scoring.turn_taking_model import Behaviour


def t(speaker, start, end, text, interrupt=False, words=None):
    d = {"speaker": speaker, "start_ms": start, "end_ms": end, "text": text, "interrupt": interrupt}
    if words is not None:
        d["words"] = [{"start_ms": a, "end_ms": b} for a, b in words]
    return d


def _one(d):
    return from_dicts([d]).turns[0]


def test_fdb_takeover_rule_on_word_times():
    """FDB: duration = last word end - first word start; under 1 s only > 3 words take over."""
    three = [(0, 200), (300, 500), (600, 990)]
    four = [(0, 100), (200, 300), (400, 500), (600, 800)]
    assert not takes_over([_one(t("agent", 0, 990, "yes go ahead", words=three))])
    assert takes_over([_one(t("agent", 0, 800, "a b c d", words=four))])
    assert takes_over([_one(t("agent", 0, 1000, "oh right", words=[(0, 300), (700, 1000)]))])
    assert not takes_over([])  # no speech: TOR 0


def test_smooth_turn_taking_tor_and_latency_by_hand():
    """Three caller ends of turn: answered 400 ms after; answered from 200 ms before the end
    (latency -200, counted 0 in FDB's mean); only "Okay." (1 word, 300 ms: no takeover).
    TOR = 2/3 = 0.6667; mean latency = (400 + 0) / 2 = 200 ms. Nothing else is exercised."""
    tt = measure(
        from_dicts(
            [
                t("caller", 0, 2000, "I need to change my address."),
                t("agent", 2400, 5000, "Sure, what is the new address?"),
                t("caller", 6000, 8000, "It is ten Main Street."),
                t("agent", 7800, 9500, "Got it, ten Main Street."),
                t("caller", 10000, 11000, "Thanks a lot."),
                t("agent", 11500, 11800, "Okay."),
            ],
            duration_ms=20000,
        )
    )
    s = tt.conditions["smooth_turn_taking"]
    assert (s.events, s.takeovers, s.tor, s.latency_ms) == (3, 2, 0.6667, 200.0)
    lat = [e.latency_ms for e in tt.events if e.kind == "smooth_turn_taking"]
    assert lat == [400.0, -200.0, None]
    for cond in ("pause_handling", "backchannel", "user_interruption"):  # not exercised
        assert tt.conditions[cond].events == 0 and tt.conditions[cond].tor is None
    assert tt.backchannel_false_yield_rate is None and tt.pause_talk_over_count is None
    assert tt.t_stop_ms is None and tt.t_resp_ms is None


def test_pause_handling_and_talk_over_by_hand():
    """Two caller pauses. In the first (1500-2700) the agent starts at 2000 and speaks 1.6 s
    (takeover), over the caller's resumption until 3600: talk-over 3600 - 2700 = 900 ms. In the
    second (7000-7800) it waits. TOR = 1/2 = 0.5; talk-over 1x, 900 ms."""
    tt = measure(
        from_dicts(
            [
                t("caller", 0, 4000, "I'd like to change the delivery address"),
                t("agent", 2000, 3600, "Sure, which address is it?"),
                t("caller", 6000, 9000, "It is ten Main Street in Springfield"),
                t("agent", 9400, 11000, "Thank you, that is updated."),
            ],
            caller_pauses=[(1500, 2700), (7000, 7800)],
            duration_ms=12000,
        )
    )
    s = tt.conditions["pause_handling"]
    assert (s.events, s.takeovers, s.tor, s.lower_is_better) == (2, 1, 0.5, True)
    assert (tt.pause_talk_over_count, tt.pause_talk_over_ms) == (1, 900.0)


def test_user_interruption_t_stop_t_resp_and_class_by_hand():
    """Barge-in 1 (4000-4500): the agent stops at 4300 and answers 5000-6500 with 6 words.
    t_stop 300, FDB latency_stop 300, t_resp 1000, FDB latency 5000 - 4500 = 500; yielded and
    answered. Barge-in 2 (11000-11600): the agent talks on to 16000 and never answers: t_stop
    5000, FDB latency_stop capped at the caller's end 600, kept talking, no takeover.
    TOR = 1/2; latency 500 (FDB: takeovers only); medians t_stop 2650, t_resp 1000."""
    tt = measure(
        from_dicts(
            [
                t("agent", 0, 4300, "Our refund policy gives you thirty days from delivery"),
                t("caller", 4000, 4500, "wait", interrupt=True),
                t("agent", 5000, 6500, "Yes, go ahead, what is it?"),
                t("agent", 10000, 16000, "You can also return it in any of our stores"),
                t("caller", 11000, 11600, "hold on", interrupt=True),
            ],
            duration_ms=20000,
        )
    )
    s = tt.conditions["user_interruption"]
    assert (s.events, s.takeovers, s.tor, s.latency_ms) == (2, 1, 0.5, 500.0)
    a, b = [e for e in tt.events if e.kind == "user_interruption"]
    assert (a.t_stop_ms, a.overlap_ms, a.t_resp_ms, a.response_gap_ms) == (300, 300, 1000, 500)
    assert a.behaviour is Behaviour.YIELDED_ANSWERED
    assert (b.t_stop_ms, b.overlap_ms, b.t_resp_ms, b.behaviour) == (
        5000, 600, None, Behaviour.KEPT_TALKING,
    )  # fmt: skip
    assert (tt.t_stop_ms, tt.t_resp_ms) == (2650.0, 1000.0)
    assert tt.behaviour == {"yielded_and_answered": 1, "kept_talking": 1}


def test_backchannel_false_yield_and_agent_backchannels_by_hand():
    """Caller "mm-hmm" at 3000 while the agent talks to 8000: kept talking (right). Caller
    "uh-huh" at 13000-13300 while the agent's turn ends at 13500 (<= 13300 + 600: it yielded),
    then it restarts 14500-17000 opening with its own words: repeated itself, a takeover.
    False-yield rate 1/2, backchannel TOR 1/2. The agent's own "mm-hmm" (400 ms, 1 word) inside
    a 6 s caller turn: 1 backchannel per 0.1 min of caller speech = 10 per minute."""
    tt = measure(
        from_dicts(
            [
                t("agent", 0, 8000, "Let me explain how the refund works for you today"),
                t("agent", 10000, 13500, "Our refund policy gives you thirty days"),
                t("agent", 14500, 17000, "Our refund policy gives you thirty days from delivery"),
                t("caller", 18000, 24000, "Okay so I bought it last week and it broke"),
                t("agent", 20000, 20400, "Mm-hmm."),
            ],
            backchannels=[
                t("caller", 3000, 3400, "mm-hmm"),
                t("caller", 13000, 13300, "uh-huh"),
            ],
            duration_ms=30000,
        )
    )
    s = tt.conditions["backchannel"]
    assert (s.events, s.takeovers, s.tor) == (2, 1, 0.5)
    assert tt.backchannel_false_yield_rate == 0.5
    kinds = [e.behaviour for e in tt.events if e.kind == "backchannel"]
    assert kinds == [Behaviour.KEPT_TALKING, Behaviour.REPEATED]
    assert (tt.agent_backchannels, tt.agent_backchannels_per_min) == (1, 10.0)


def test_a_real_replay_measures_its_barge_in(sample_bundle):
    """recordings/refund-call.wav: one barge-in ("wait"), answered "Yes, go ahead." (3 words,
    about 1 s: right at FDB's duration rule, so "acknowledged" or, 1 ms longer, a takeover
    "yielded and answered" as the boundary refinement places its end); t_stop and t_resp
    measured and plausible; no caller backchannel, so that condition is not exercised. Its only
    caller pause is the ~0.3 s between "Thank you so much." and "Bye.", where the agent waits
    (TOR 0)."""
    doc = json.loads((sample_bundle / "result.json").read_text())["turn_taking"]
    cond = doc["conditions"]
    assert cond["user_interruption"]["events"] == 1
    assert 0 < doc["t_stop_ms"] < 600 and doc["t_stop_ms"] < doc["t_resp_ms"] < 1500
    (barge,) = [e for e in doc["events"] if e["kind"] == "user_interruption"]
    assert barge["behaviour"] in ("acknowledged", "yielded_and_answered")
    assert barge["text"].lower().startswith("wait")
    assert cond["backchannel"]["events"] == 0 and cond["backchannel"]["tor"] is None
    assert cond["pause_handling"]["events"] <= 1 and cond["pause_handling"]["takeovers"] == 0
    assert cond["smooth_turn_taking"]["tor"] == 1.0
    assert doc["pause_talk_over_ms"] in (None, 0.0)
    page = (sample_bundle / "report.html").read_text()
    assert '<section id="turn-taking">' in page and 'id="tt-0"' in page


def test_a_takeover_at_a_pause_is_not_a_smooth_answer():
    """The agent jumps into the caller's pause (1500-2700) with 5 words and stops before the
    caller resumes: the caller's line is two turns, but the first one's end is the pause, not an
    end of turn. Pause TOR 1/1 with no talk-over; the one real end of turn (4000) goes unanswered:
    smooth TOR 0/1."""
    tt = measure(
        from_dicts(
            [
                t("caller", 0, 1500, "I'd like to change"),
                t("agent", 1800, 2500, "Sure, what is the address?"),
                t("caller", 2700, 4000, "the delivery address"),
            ],
            caller_pauses=[(1500, 2700)],
            duration_ms=12000,
        )
    )
    assert tt.conditions["pause_handling"].tor == 1.0
    assert (tt.pause_talk_over_count, tt.pause_talk_over_ms) == (0, 0.0)
    s = tt.conditions["smooth_turn_taking"]
    assert (s.events, s.tor) == (1, 0.0)


def test_a_long_calls_events_are_folded_under_one_line(sample_bundle, tmp_path):
    """A call of many events: the measures stay open, the list of events is folded under one
    line saying how many (a short call's list stays open)."""
    import shutil

    from turnscope.scoring.report.html import build_report
    from turnscope.scoring.report.turn_taking import FOLD_AFTER

    short = (sample_bundle / "report.html").read_text()
    assert 'id="tt-0"' in short and 'class="tt-events"' not in short
    bundle = tmp_path / "long"
    shutil.copytree(sample_bundle, bundle)
    result = json.loads((bundle / "result.json").read_text())
    events = result["turn_taking"]["events"]
    result["turn_taking"]["events"] = (events * (FOLD_AFTER // len(events) + 2))[: FOLD_AFTER + 3]
    (bundle / "result.json").write_text(json.dumps(result))
    build_report(bundle)
    page = (bundle / "report.html").read_text()
    n = FOLD_AFTER + 3
    assert f'<details class="tt-events"><summary>the {n} events, one per row (show)' in page
    assert page.count('class="tt-event"') == n and 'id="tt-0"' in page
