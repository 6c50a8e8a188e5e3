"""Speech on the caller's line that the caller never said (a babble bed's talkers) is said: a
warning naming each such caller turn, never a silent extra turn of the caller's."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import yaml

from tests.conftest import reference_agent
from tests.interop.pipecat import call_bot
from turnscope.actors.caller.lines import LineRecord
from turnscope.actors.caller.notes import CallerNote
from turnscope.actors.caller.own_line import (
    Held,
    lines_unheard,
    not_sent,
    past_lines,
    sent_spans,
    spoken_spans,
    warn_own_line,
    warn_unheard,
)
from turnscope.asr.assembly import Heard, assemble
from turnscope.asr.events import Span
from turnscope.asr.settings import load_settings
from turnscope.asr.transcriber import Transcription
from turnscope.reasons import Findings, Severity
from turnscope.scoring.verifier import verifier_facts


def _record(line: int, sent: dict | None) -> LineRecord:
    return LineRecord(line, "x", "line", "after_agent_ms", 0, status="spoken", sent=sent)


def _turn(start: float, end: float, text: str = "words") -> dict:
    return {"speaker": "caller", "start_ms": start, "end_ms": end, "text": text}


def test_a_caller_turn_near_no_sent_line_is_named_and_one_over_a_line_is_not():
    records = [
        _record(1, {"start_ms": 1800.0, "end_ms": 5200.0}),
        _record(3, {"dtmf": [{"at_ms": 9000.0, "digit": "1"}]}),
        _record(5, {"start_ms": 12000.0}),  # cut off by the hang-up: runs on
        _record(7, None),  # never spoken
    ]
    assert sent_spans(records) == [(1800.0, 5200.0), (9000.0, 9200.0), (12000.0, float("inf"))]
    dialogue = [
        _turn(1750, 5600),  # the line, its edges a little wide
        {"speaker": "agent", "start_ms": 6000, "end_ms": 7500, "text": "agent"},
        _turn(7600, 7900, "I'm gonna drop it"),  # a babble talker, in the agent's reply
        _turn(9050, 9150),  # a key's tone
        _turn(30000, 31000),  # the cut-off line's
    ]
    assert [t["start_ms"] for t in not_sent(dialogue, sent_spans(records))] == [7600]
    found = Findings()
    warn_own_line(found, dialogue, records)
    (note,) = found.notes
    assert note.code is CallerNote.NOT_SENT
    assert "1 caller turn(s)" in note.message and '7.6 s ("I\'m gonna drop it")' in note.message
    quiet = Findings()
    warn_own_line(quiet, dialogue[:2], records)
    assert quiet.notes == []


def test_a_caller_turn_reaching_far_past_its_line_is_named():
    """A talker right before a line, joined to it: the turn's start is the talker's."""
    records = [_record(1, {"start_ms": 2000.0, "end_ms": 5500.0}),
               _record(3, {"start_ms": 9000.0, "end_ms": 10000.0})]  # fmt: skip
    spans = sent_spans(records)
    joined = [_turn(300, 5600), _turn(8800, 10900), _turn(8000, 8200)]
    reaching = [(t["start_ms"], b, a) for t, b, a in past_lines(joined, spans)]
    assert reaching == [(300, 1700.0, 100.0)]
    found = Findings()
    warn_own_line(found, joined, records)
    (past, alone) = found.notes
    assert past.code is CallerNote.PAST_ITS_LINES and alone.code is CallerNote.NOT_SENT
    assert "1 caller turn(s) reach far past" in past.message
    assert "0.3-5.6 s (1.7 s before its line(s), 0.1 s after)" in past.message


def _heard(channel: str, index: int, start: float, end: float, text: str) -> Heard:
    return Heard(channel, index, start, end, (Span(start, end),), end + 600, Transcription(text))


def test_a_sent_line_heard_as_no_words_is_the_callers_turn_and_said():
    """The new-user call: line 3 (a clip under street noise, AMR-NB, loss) went out 17180-20222
    ms and the ASR made out no word of it. Without the send records (a replay) that utterance
    is no turn and the agent's answer is timed from line 1 (11 s); with them it is the caller's
    turn with no text, the answer is timed from it, and the warning names the line. A line that
    left nothing on the caller's channel makes no turn: degraded, named with what was there."""
    cfg = load_settings().assembly
    heard = [
        _heard("agent", 0, 588, 4549, "Thank you for calling. How can I help you today?"),
        _heard("caller", 0, 5710, 9890, "I would like a refund please."),
        _heard("agent", 1, 10487, 16043, "Sure, our refund policy gives you 30 days."),
        _heard("caller", 1, 17196, 20289, ""),  # the line the ASR heard no words of
        _heard("agent", 2, 20948, 23949, "Yes, we will email you a return label."),
        _heard("agent", 3, 30000, 31000, "Are you still there?"),
    ]
    records = [
        _record(1, {"start_ms": 5700.0, "end_ms": 9954.9}),
        _record(3, {"start_ms": 17180.0, "end_ms": 20222.4}),
        _record(5, {"start_ms": 25080.0, "end_ms": 27132.3}),  # nothing of it on the channel
        _record(7, {"dtmf": [{"at_ms": 28000.0, "digit": "1"}]}),  # a key: no speech
        LineRecord(
            9,
            "mm-hmm",
            "backchannel",
            "backchannel_ms",
            500,
            status="spoken",
            spoken_as="backchannel",
            sent={"start_ms": 28500.0, "end_ms": 28800.0},
        ),
        _record(11, {"start_ms": 40000.0}),  # cut off by the hang-up: past the recording
    ]
    said = spoken_spans(records)
    assert said == [(5700.0, 9954.9), (17180.0, 20222.4), (25080.0, 27132.3),
                    (40000.0, float("inf"))]  # fmt: skip

    replay = assemble(heard, cfg)  # no send records: as before
    assert [r.reason for r in replay.rejected] == ["no words recognised"]
    assert [g.gap_ms for g in verifier_facts(replay.dialogue()).gaps][1] == 20948 - 9890

    call = assemble(heard, cfg, said)
    assert call.rejected == []
    kept = [t for t in call.dialogue() if t["speaker"] == "caller"][1]
    assert (kept["start_ms"], kept["text"], kept["unheard"]) == (17196, "", True)
    assert "unheard" not in call.dialogue()[0]
    assert [g.gap_ms for g in verifier_facts(call.dialogue()).gaps][1] == 20948 - 20289
    # an agent utterance with no words stays no turn, line or not
    agent_blank = assemble([*heard, _heard("agent", 4, 17500, 18000, "")], cfg, said)
    assert [r.utterance for r in agent_blank.rejected] == ["agent:4"]

    unheard = lines_unheard(call, records, until_ms=32000)
    assert [(x.record.line, x.held) for x in unheard] == [(3, Held.NO_WORDS), (5, Held.NOTHING)]
    found = Findings()
    warn_unheard(found, call, records, until_ms=32000)
    warned, lost = found.notes
    assert (warned.code, warned.severity) == (CallerNote.LINE_UNHEARD, Severity.WARNING)
    assert "1 caller line(s) sent were heard as no words" in warned.message
    assert "script[3] 'x' sent 17.2-20.2 s (an utterance with no words recognised)" in (
        warned.message
    )
    assert (lost.code, lost.severity) == (CallerNote.LINE_NO_TURN, Severity.DEGRADED)
    assert "script[5] 'x' sent 25.1-27.1 s (nothing voiced)" in lost.message
    assert "timed from an earlier caller turn" in lost.message
    # an utterance the ASR rejected on its own grounds is named with them
    gate = Transcription("", rejected="second opinion: Silero VAD found 5% speech")
    gated = [*heard, Heard("caller", 2, 25100, 27000, (Span(25100, 27000),), 27600, gate)]
    unheard = lines_unheard(assemble(gated, cfg, said), records, until_ms=32000)
    (line5,) = [x for x in unheard if x.record.line == 5]
    assert line5.held is Held.REJECTED and "Silero VAD found 5% speech" in line5.named()
    heard_all = Findings()
    warn_unheard(heard_all, assemble(heard[:3], cfg, said), records[:1], until_ms=32000)
    assert heard_all.notes == []


TALKER = """
name: talker-caller
caller:
  timeout_s: 60
  hangup_after_ms: 800
  acoustics: {noise: talker.wav, snr_db: 3, seed: 3}
script:
  - agent: Thank you for calling. How can I help you today?
  - caller: Hi, I ordered headphones on Monday and I would like a refund.
  - agent: Sure, I can help with that. Refunds go back to the card you paid with.
  - caller: Great, it was order number five five two.
  - agent: Thank you, I have found order five five two.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def test_a_talker_behind_the_caller_on_a_live_call_is_said_as_not_the_caller(tmp_path: Path):
    """A real call to the reference agent, a talker behind the caller (a recording used as its
    noise bed, 3 dB under it, looping): the caller turns that overlap no line it sent (by its
    own send records), and those that reach far past the lines they carry, are counted and
    named, in result.json with their codes."""
    import numpy as np
    import soundfile as sf

    from turnscope.actors.caller.speech import speak

    said = speak("The next train to the city leaves from platform four.", voice="en-gb-x-rp")
    talker = np.concatenate([said, np.zeros(24000, np.float32)])
    sf.write(tmp_path / "talker.wav", talker, 16000)
    (tmp_path / "talker.yaml").write_text(TALKER)
    with reference_agent(tmp_path / "talker.yaml") as url:
        asyncio.run(call_bot(url, tmp_path / "talker.yaml", tmp_path / "call"))
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    transcript = json.loads((tmp_path / "call" / "transcript.json").read_text())
    sent = [(u["start_ms"], u["end_ms"]) for u in result["caller_truth"]["utterances"]]
    caller = [t for t in transcript["turns"] if t["speaker"] == "caller"]
    unsent = [t for t in caller if not any(t["start_ms"] < e + 500 and t["end_ms"] > s - 100
                                           for s, e in sent)]  # fmt: skip
    assert unsent, (caller, sent)  # the talker was heard as the caller's turns
    (warned,) = [w for w in result["warnings"] if "overlap no line the caller sent" in w]
    assert f"{len(unsent)} caller turn(s)" in warned, (warned, unsent)
    assert f"{unsent[0]['start_ms'] / 1000:.1f} s" in warned
    assert "caller_turn_not_sent" in result["warning_codes"]

    # ... and a turn joined to the talker before or after a line is named with how far it
    # reaches past it (the talker speaks from the call's start, before the first line)
    def reach(t: dict) -> float:
        inside = [(s, e) for s, e in sent if t["start_ms"] < e and t["end_ms"] > s]
        if not inside:
            return 0.0
        return max(inside[0][0] - t["start_ms"], t["end_ms"] - inside[-1][1])

    past = [t for t in caller if reach(t) > 1000]
    assert past, (caller, sent)
    (reaching,) = [w for w in result["warnings"] if "reach far past the lines they carry" in w]
    assert f"{len(past)} caller turn(s)" in reaching, (reaching, past)
    assert "caller_turn_past_its_lines" in result["warning_codes"]


def test_an_agent_that_answered_none_of_the_callers_turns_fails_the_call():
    """The stock pipecat bot on a babble bed greeted, then never found the caller's end of turn:
    latency "not exercised" is no pass of the call when the script planned replies."""
    import dataclasses

    from turnscope.actors.caller.scenario_contract import scenario_contract, scenario_plan
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.configs import config_path
    from turnscope.scoring.outcome import score_outcome

    sc = load_scenario(config_path("scenarios", "refund-call.yaml"))
    assert scenario_plan(sc).replies == 4  # the policy, "go ahead", the label, goodbye
    contract = scenario_contract(sc)
    greeted = [
        {"speaker": "agent", "start_ms": 100, "end_ms": 800, "text": "Hello?"},
        _turn(2000, 5500, "I would like a refund"),
        _turn(13000, 15000, "Can I get a label?"),
    ]
    outcome = score_outcome(greeted, contract, evidence_class="live_lane")
    assert not outcome.passed
    assert outcome.failures == [
        "the agent answered none of the caller's 2 turn(s) (4 replies planned)"
    ]
    answered = [*greeted[:2], {**greeted[0], "start_ms": 6000, "end_ms": 7000}]
    assert score_outcome(answered, contract, evidence_class="live_lane").failures == []
    unplanned = dataclasses.replace(contract, plan=None)  # a replay: no plan, no such failure
    assert score_outcome(greeted, unplanned, evidence_class="live_lane").failures == []


MUTE_AFTER_GREETING = """
name: greets-only
caller: {timeout_s: 40, hangup_after_ms: 500, reply_timeout_ms: 2500}
script:
  - agent: Thank you for calling. How can I help you today?
  - caller: Hi, I would like a refund for my headphones.
  - agent: Sure, I can help with that.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def test_a_live_agent_that_greets_and_never_answers_fails_the_call(tmp_path: Path, cli):
    """`turnscope agent --never-answer`: its greeting, then silence; the call fails with the
    reason on the terminal and in result.json (it used to pass, latency "not exercised")."""
    scenario = tmp_path / "greets.yaml"
    scenario.write_text(MUTE_AFTER_GREETING)
    with reference_agent(scenario, "--never-answer") as url:
        code, out, err = cli("call", url, "--scenario", str(scenario), "--loopback-only",
                             "-q", "-o", str(tmp_path / "call"))  # fmt: skip
    result = json.loads((tmp_path / "call" / "result.json").read_text())
    assert code == 1 and result["verdict"] == "fail", (code, out, err)
    (why,) = [f for f in result["failures"] if "answered none of the caller's" in f]
    assert "(2 replies planned)" in why and why in out + err, (why, out, err)


UNHEARD = """
name: unheard-line
caller: {timeout_s: 60, hangup_after_ms: 800}
script:
  - agent: Thank you for calling. How can I help you today?
  - caller: Hi, I ordered headphones on Monday and I would like a refund.
  - agent: Sure, I can help with that. Refunds go back to the card you paid with.
  - caller: Do I have to send the headphones back before I get my refund?
    audio: drowned.wav
  - agent: Yes, we will email you a prepaid return label today.
  - caller: Thank you, goodbye.
  - agent: Goodbye.
"""


def test_a_line_the_asr_hears_no_words_of_on_a_live_call_is_the_callers_turn(tmp_path: Path):
    """A real call to the reference agent whose second caller line is a clip of the question
    drowned in noise 10 dB over it (voiced throughout, not a word for the ASR): the caller's
    turn there is kept with no text, so the agent's answer is timed from it (it was timed from
    the line before, seconds earlier: a latency failure blamed on the agent), and the warning
    names the line, in result.json with its code and in report.html."""
    import numpy as np
    import soundfile as sf

    from turnscope.actors.caller.speech import speak

    said = speak("Do I have to send the headphones back before I get my refund?", voice="en-us")
    noise = np.random.default_rng(7).standard_normal(len(said)).astype(np.float32)
    drowned = said + noise * float(np.sqrt(np.mean(said**2))) * 10 ** (10 / 20)
    sf.write(tmp_path / "drowned.wav", 0.3 * drowned / np.abs(drowned).max(), 16000)
    (tmp_path / "unheard.yaml").write_text(UNHEARD)
    with reference_agent(tmp_path / "unheard.yaml") as url:
        run, _, _ = asyncio.run(call_bot(url, tmp_path / "unheard.yaml", tmp_path / "call"))
    out = tmp_path / "call"
    result = json.loads((out / "result.json").read_text())
    turns = json.loads((out / "transcript.json").read_text())["turns"]
    (line,) = [r["sent"] for r in result["caller_truth"]["trace"] if r["line"] == 3]
    (kept,) = [t for t in turns if t.get("unheard")]
    assert kept["speaker"] == "caller" and kept["text"] == "", turns
    assert kept["start_ms"] < line["end_ms"] and kept["end_ms"] > line["start_ms"], (kept, line)
    answer = turns[turns.index(kept) + 1]
    assert answer["speaker"] == "agent" and "label" in answer["text"], turns
    (reply,) = [r for r in run.replies if r.start_ms == answer["start_ms"]]
    assert reply.latency_ms == answer["start_ms"] - kept["end_ms"] < 2000, reply
    assert "caller_line_unheard" in result["warning_codes"], result["warnings"]
    assert "caller_line_no_turn" not in result["warning_codes"] + result["degraded_codes"]
    (warned,) = [w for w in result["warnings"] if "heard as no words" in w]
    assert f"script[3] 'Do I have to send the headp...' sent {line['start_ms'] / 1000:.1f}" in (
        warned
    )
    page = (out / "report.html").read_text()
    assert "heard as no words, at script[3]" in page and "no words recognised" in page
    # The same audio replayed has no send records: no turn there, said as a warning; re-driven
    # (scenario from-recording), the recorded caller's wordless speech is still its line.
    from turnscope import api
    from turnscope.redrive import scenario_from_recording

    again = api.replay(caller=out / "caller.wav", agent=out / "agent.wav", outdir=tmp_path / "r")
    (no_words,) = [
        n for n in again.result.findings.notes if n.code_name == "speech_heard_as_no_words"
    ]
    assert "the caller channel held" in no_words.message, no_words
    redrive = scenario_from_recording(out, outdir=tmp_path / "fr")
    lines = yaml.safe_load(redrive.built.scenario.read_text())["script"]
    assert [x["caller"] for x in lines if "caller" in x][1] == "(no words heard)", lines
