"""Turn assembly rules on hand-built utterances: barge-ins, yields, backchannels, talk-over."""

from __future__ import annotations

import pytest

from turnscope.asr.assembly import Heard, assemble
from turnscope.asr.backchannel_text import is_backchannel_text
from turnscope.asr.events import Span
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import Transcription, Word
from turnscope.scoring import score_voice_episode

CFG = load_settings().assembly
_count: dict[str, int] = {}


def heard(channel, spans, text, words=None, rejected=None):
    idx = _count[channel] = _count.get(channel, -1) + 1
    spans = tuple(Span(s, e) for s, e in spans)
    ws = tuple(Word(t, s, e, 0.9) for t, s, e in (words or []))
    return Heard(
        channel,
        idx,
        spans[0].start_ms,
        spans[-1].end_ms,
        spans,
        spans[-1].end_ms + 600,
        Transcription(text, ws, rejected=rejected),
    )


def caller(spans, text, **kw):
    return heard("caller", spans, text, **kw)


def agent(spans, text, **kw):
    return heard("agent", spans, text, **kw)


def shape(assembly):
    return [
        (t.speaker, round(t.start_ms), round(t.end_ms), t.text, t.interrupt) for t in assembly.turns
    ]


def test_seed_dialogue_from_utterances():
    # The agent yields 400 ms after "wait" and answers 150 ms after its own stop: one agent
    # utterance (the pause is shorter than end-of-turn) must become two turns.
    words = [
        ("Sure,", 1700, 1900),
        ("our", 1950, 2100),
        ("refund", 2100, 2500),
        ("policy", 2500, 2900),
        ("30", 2900, 3200),
        ("days.", 3200, 3480),
        ("Yes,", 3650, 3800),
        ("go", 3850, 4000),
        ("ahead.", 4000, 4180),
    ]
    items = [
        caller([(0, 1500)], "I want a refund please"),
        agent(
            [(1700, 3500), (3650, 4200)],
            "Sure, our refund policy 30 days. Yes, go ahead.",
            words=words,
        ),
        caller([(3100, 3300)], "wait"),
    ]
    a = assemble(items, CFG)
    assert shape(a) == [
        ("caller", 0, 1500, "I want a refund please", False),
        ("agent", 1700, 3500, "Sure, our refund policy 30 days.", False),
        ("caller", 3100, 3300, "wait", True),
        ("agent", 3650, 4200, "Yes, go ahead.", False),
    ]
    got = score_voice_episode(a.dialogue(), required_content=["refund", "30"])
    assert got["result"]["pass_fail"]["voice"] is True


def test_agent_ignoring_a_barge_in_is_one_turn_and_fails_barge_in():
    items = [
        caller([(0, 1000)], "I need help with my bill"),
        # "stop" at 2000; the agent's next pause is 1500 ms later, beyond yield_split_ms.
        agent([(1300, 3500), (3800, 6000)], "Let me explain the whole bill in detail for you."),
        caller([(2000, 2300)], "stop"),
    ]
    a = assemble(items, CFG)
    assert shape(a)[1:] == [
        ("agent", 1300, 6000, a.turns[1].text, False),
        ("caller", 2000, 2300, "stop", True),
    ]
    assert score_voice_episode(a.dialogue())["result"]["components"]["barge_in"] == 0.0


@pytest.mark.parametrize("text", ["mm-hmm", "Yeah.", "okay", "Uh-huh.", "I see."])
def test_backchannel_inside_agent_speech_is_not_a_turn(text):
    items = [
        caller([(0, 1000)], "What is the refund policy?"),
        # The agent pauses right where the caller acknowledges, then carries on.
        agent([(1400, 3000), (3300, 6000)], "You have thirty days. After that we offer credit."),
        caller([(3020, 3280)], text),
    ]
    a = assemble(items, CFG)
    assert [t.speaker for t in a.turns] == ["caller", "agent"]
    assert a.turns[1].end_ms == 6000
    assert [(b.text, b.start_ms) for b in a.backchannels] == [(text, 3020)]
    assert score_voice_episode(a.dialogue())["result"]["pass_fail"]["voice"] is True


@pytest.mark.parametrize("text", ["wait", "stop", "no, hold on"])
def test_short_non_backchannel_stays_a_barge_in(text):
    items = [
        caller([(0, 1000)], "What is the refund policy?"),
        agent([(1400, 3000)], "You have thirty days."),
        caller([(2500, 2900)], text),
    ]
    a = assemble(items, CFG)
    assert a.backchannels == []
    assert a.turns[-1].interrupt is True and a.turns[-1].text == text


def test_long_acknowledgement_is_not_a_backchannel():
    items = [
        agent([(0, 5000)], "A long explanation of the policy."),
        caller([(1000, 2500)], "okay"),
    ]
    a = assemble(items, CFG)
    assert a.backchannels == [] and a.turns[1].interrupt


def test_backchannel_needs_agent_speech():
    items = [agent([(0, 1000)], "Anything else?"), caller([(1500, 1800)], "yeah")]
    a = assemble(items, CFG)
    assert a.backchannels == [] and a.turns[1].interrupt is False


def test_agent_talking_over_caller_gets_no_flag():
    items = [
        caller([(0, 3000)], "I have been waiting for my refund for weeks now"),
        agent([(2500, 4000)], "I understand, let me check."),
    ]
    a = assemble(items, CFG)
    assert [t.interrupt for t in a.turns] == [False, False]
    assert score_voice_episode(a.dialogue())["result"]["components"]["turn_taking"] == 0.0


def test_same_speaker_utterances_merge_within_gap_but_not_across_the_caller():
    items = [
        caller([(0, 1000)], "Hello?"),
        agent([(1300, 2500)], "Hi, thanks for calling."),
        agent([(3300, 4500)], "How can I help you today?"),  # 800 ms later: same turn
        caller([(5000, 6000)], "My order is late."),
        agent([(6400, 7000)], "Sorry to hear that."),
    ]
    a = assemble(items, CFG)
    assert [(t.speaker, round(t.start_ms), round(t.end_ms)) for t in a.turns] == [
        ("caller", 0, 1000),
        ("agent", 1300, 4500),
        ("caller", 5000, 6000),
        ("agent", 6400, 7000),
    ]
    assert a.turns[1].text == "Hi, thanks for calling. How can I help you today?"


def test_gap_longer_than_merge_gap_splits():
    items = [agent([(0, 1000)], "Are you there?"), agent([(3000, 4000)], "Hello?")]
    assert len(assemble(items, CFG).turns) == 2


def test_rejected_and_empty_utterances_are_not_turns():
    items = [
        caller([(0, 500)], "", rejected="second opinion: Silero VAD found 0% speech"),
        caller([(1000, 1500)], "  "),
    ]
    a = assemble(items, CFG)
    assert a.turns == [] and [r.reason for r in a.rejected] == [
        "second opinion: Silero VAD found 0% speech",
        "no words recognised",
    ]


def test_turns_sorted_by_start():
    items = [agent([(500, 900)], "b"), caller([(0, 400)], "a"), caller([(1200, 1500)], "c")]
    assert [t.text for t in assemble(items, CFG).turns] == ["a", "b", "c"]


def test_backchannel_lexicon():
    yes = [
        "Mm-hmm.",
        "mhm",
        "Uh-huh",
        "Yeah, okay.",
        "right",
        "Got it.",
        "M. M. M. M. M.",
        "okay okay okay",
    ]
    no = ["wait", "No.", "hold on", "yeah but", "I want", "okay yeah sure"]
    assert all(is_backchannel_text(t, CFG) for t in yes)
    assert not any(is_backchannel_text(t, CFG) for t in no)


def test_breath_pause_while_agent_talks_over_stays_one_caller_turn():
    # The caller pauses for breath inside one utterance while the agent talks over them, and
    # carries on talking: one caller turn, no barge-in, and the agent's overlap is harmful.
    items = [
        caller([(0, 2000), (2200, 4000)], "I have been waiting for weeks, and nobody calls back."),
        agent([(1500, 5000)], "I understand, let me look into that for you right away."),
    ]
    a = assemble(items, CFG)
    assert [(t.speaker, t.interrupt) for t in a.turns] == [("caller", False), ("agent", False)]
    assert a.turns[0].end_ms == 4000
    assert score_voice_episode(a.dialogue())["result"]["components"]["turn_taking"] == 0.0


def test_an_agent_that_cut_in_on_a_pause_and_yielded_answers_in_a_turn_of_its_own():
    # As heard live (a dysfluent caller's pause): the agent says "Sure." over the caller's
    # last words, stops when the caller goes on ("please."), then answers 560 ms after the
    # caller's end. Before: one agent turn 10085-16047, "please." a barge-in the agent "kept
    # talking" through for 5.6 s, and barge-in failed.
    items = [
        caller(
            [(5710, 9472), (9905, 10239), (10441, 10624)],
            "Hi, I would like a refund, please.",
            words=[("Hi,", 5710, 5974), ("refund,", 9905, 10239), ("please.", 10441, 10624)],
        ),
        agent([(10085, 10360)], "Sure."),
        agent([(11188, 11748), (12044, 16047)], "Thank you. I have found your order."),
    ]
    a = assemble(items, CFG)
    assert [(t.speaker, round(t.start_ms), round(t.end_ms), t.interrupt) for t in a.turns] == [
        ("caller", 5710, 10239, False),
        ("agent", 10085, 10360, False),
        ("caller", 10441, 10624, False),
        ("agent", 11188, 16047, False),
    ]
    assert a.turns[3].start_ms - a.turns[2].end_ms == pytest.approx(564)


def test_wordless_short_sound_during_agent_speech_is_a_backchannel():
    items = [agent([(0, 4000)], "Let me explain the policy."), caller([(1500, 1900)], "")]
    a = assemble(items, CFG)
    assert a.turns[-1].speaker == "agent" and len(a.turns) == 1
    assert [b.text for b in a.backchannels] == [""]


def test_a_sent_barge_in_heard_as_no_words_stays_a_barge_in():
    # Rule 6: the caller's send records say a line went out there ("Stop, wait."), so a short
    # wordless utterance over the agent is that line, a barge-in; without them, a hum.
    items = [agent([(0, 4000)], "Let me explain the policy."), caller([(1500, 1900)], "")]
    a = assemble(items, CFG, said=[(1490, 1880)])
    assert [(t.speaker, t.text, t.interrupt) for t in a.turns] == [
        ("agent", "Let me explain the policy.", False),
        ("caller", "", True),
    ]
    assert a.backchannels == [] and a.turns[1].to_dict()["unheard"] is True
    assert [b.text for b in assemble(items, CFG).backchannels] == [""]


def test_agent_answering_a_barge_in_it_talked_through_starts_a_new_turn():
    # The agent ignores "no, hold on" (no yield), finishes its line, pauses, then answers it.
    items = [
        agent([(0, 6000)], "It is a blue office chair, scheduled for delivery on Friday."),
        caller([(3000, 3700)], "no, hold on"),
        agent([(6800, 8800)], "Sorry, did you want to add something?"),
    ]
    turns = shape(assemble(items, CFG))
    assert [(s, i) for s, _, _, _, i in turns] == [
        ("agent", False),
        ("caller", True),
        ("agent", False),
    ]
    # A backchannel is no floor: the agent's pause after "mm-hmm" stays inside its turn.
    items = [
        agent([(0, 6000)], "It is a blue office chair, scheduled for delivery on Friday."),
        caller([(3000, 3400)], "mm-hmm"),
        agent([(6800, 8800)], "It will come in the afternoon."),
    ]
    assert [t.speaker for t in assemble(items, CFG).turns] == ["agent"]


@pytest.mark.parametrize(("pause_ms", "turns"), [(600, 2), (400, 2), (330, 1)])
def test_an_answer_after_a_talk_through_inside_one_utterance(pause_ms, turns):
    # A real agent (libwebrtc, in a browser) ignored "wait", finished its sentence, paused
    # 600 ms and said "Yes, go ahead.": one utterance (the pause is shorter than end-of-turn),
    # which must still be two agent turns; a pause between sentences (330 ms) stays inside.
    items = [
        caller([(0, 1000)], "I would like a refund."),
        agent(
            [(1500, 4500), (4500 + pause_ms, 5500 + pause_ms)],
            "Our policy gives you thirty days. Yes, go ahead.",
        ),
        caller([(2500, 2900)], "wait"),
    ]
    got = [(sp, i) for sp, _, _, _, i in shape(assemble(items, CFG))]
    expected = [("caller", False), ("agent", False), ("caller", True)]
    assert got == expected + [("agent", False)] * (turns - 1)


@pytest.mark.parametrize(("answer_pause_ms", "turns"), [(650, 2), (395, 1), (320, 1), (617, 2)])
@pytest.mark.parametrize("wait_at", [9300, 9405])
def test_regular_sentence_pauses_are_not_answers(answer_pause_ms, turns, wait_at):
    # The pipecat bot's long reply pauses 395 ms between every sentence; "wait" during its
    # first sentence. Its sentence pauses stay inside the turn (they are all alike); an answer
    # after a longer pause is a turn of its own; one queued straight behind the reply (shorter
    # than its own sentence pauses) cannot be told apart from the caller's side. "wait" begun
    # more than yield_split_ms before its first pause, or within it (995 ms: the bot's first
    # sentence pause is no yield, as a CI run took it, then merging its answer into the reply).
    spans, t = [], 8800
    for length in (1600, 1700, 1600, 2100):
        spans.append((t, t + length))
        t += length + 395
    t += answer_pause_ms - 395
    spans.append((t, t + 1000))
    items = [
        caller([(4600, 7500)], "Hi, I would like a refund for my headphones please."),
        agent(spans, "Let me explain. First this. Then that. Finally a summary. Yes, go ahead."),
        caller([(wait_at, wait_at + 380)], "wait"),
    ]
    got = [(sp, start) for sp, start, *_ in shape(assemble(items, CFG))]
    answer = [("agent", spans[-1][0])] if turns == 2 else []
    assert got == [("caller", 4600), ("agent", 8800), ("caller", wait_at), *answer], got


@pytest.mark.parametrize(
    ("text", "expected"),
    [("And Mm-hmm.", True), ("So yeah.", True), ("And", False), ("And wait.", False)],
)
def test_leading_filler_before_a_backchannel(text, expected):
    assert is_backchannel_text(text, CFG) is expected


def test_split_without_word_times_snaps_to_a_sentence_end():
    # One agent utterance, cut by a barge-in it yielded to: the proportional share would give
    # "Yes," to the first turn; the cut moves to the sentence end one word away.
    items = [
        agent(
            [(0, 6000), (6600, 7600)],
            "Our refund policy gives you thirty days and the money goes back. Yes, go ahead.",
        ),
        caller([(5500, 5900)], "Wait."),
    ]
    texts = [(t.speaker, t.text) for t in assemble(items, CFG).turns]
    assert texts == [
        ("agent", "Our refund policy gives you thirty days and the money goes back."),
        ("caller", "Wait."),
        ("agent", "Yes, go ahead."),
    ]
