"""`turnscope synth`: voiced extents, the timeline, noise, the phone line, scenario errors, CLI."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT
from turnscope.actors.caller import speech as tts
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.actors.caller.synth import render, write_call
from turnscope.errors import EnvironmentProblem, InputError
from turnscope.scoring.verifier import score_voice_episode

SR = 16000
SCENARIOS = ROOT / "configs" / "scenarios"
SHIPPED = ["refund-call", "backchannel", "talk-over", "barge-ins", "quick-exchange"]

pytestmark = pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="needs espeak-ng")


def write_yaml(path: Path, text: str) -> Path:
    path.write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")
    return path


SMALL = """
    name: small
    agent: {latency_ms: 300, yield_ms: 200}
    script:
      - caller: I would like to cancel my subscription.
        at_ms: 250
      - agent: I can help with that. Before I cancel it, may I ask why you are leaving us?
      - caller: mm-hmm
        backchannel_ms: 900
      - caller: wait
        barge_in_ms: 2500
      - agent: Yes, go ahead please.
      - caller: It is simply too expensive for me.
      - agent: I understand. I have cancelled it for you.
        talk_over_ms: 300
      - caller: Thanks a lot.
      - agent: Let me also tell you about our cheaper plans and the discounts we offer.
        yield_ms: null
      - caller: no thanks
        barge_in_ms: 800
"""


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    path = write_yaml(tmp_path_factory.mktemp("scn") / "small.yaml", SMALL)
    scenario = load_scenario(path)
    return scenario, render(scenario)


# -- tts ---------------------------------------------------------------------------------------


def test_voiced_extent_of_a_known_burst():
    x = np.zeros(8000)
    t = np.arange(3000)
    x[1000:4000] = 0.5 * np.sin(2 * np.pi * 300 * t / SR + 0.3)
    assert tts.voiced_extent(x, SR) == (1000, 4000)
    # a floor 50 dB below the burst stays outside the extent
    floor = np.random.default_rng(1).normal(0, 0.5 * 10 ** (-50 / 20), x.size)
    assert tts.voiced_extent(x + floor, SR) == (1000, 4000)
    assert np.array_equal(tts.trim(x, SR), x[1000:4000])
    assert tts.voiced_extent(np.zeros(100), SR) == (0, 0)
    assert tts.voiced_extent(np.zeros(0), SR) == (0, 0)
    # against a louder reference the quiet burst is below the 40 dB floor
    assert tts.voiced_extent(x * 1e-3, SR, peak_rms=1.0) == (0, 0)


def test_speak_is_trimmed_float_and_cached_copies():
    x = tts.speak("hello there, how are you", voice="en-us")
    assert x.dtype == np.float32 and x.ndim == 1 and np.abs(x).max() <= 1.0
    assert 0.8 * SR < x.size < 3 * SR
    clip = tts.synthesize("hello there, how are you", voice="en-us")
    assert np.array_equal(clip.voiced, x)
    assert tts.voiced_extent(clip.audio, SR) == (clip.start, clip.end)
    assert clip.start <= 80 and clip.audio.size - clip.end <= 80  # at most 5 ms kept around
    x[:] = 0  # callers get their own copy
    assert np.abs(tts.speak("hello there, how are you", voice="en-us")).max() > 0.1
    assert tts.speak("-starts with a dash", voice="en-gb").size > 0  # not read as an option


def test_unknown_voice_lists_english_voices():
    with pytest.raises(InputError) as exc:
        tts.speak("hello there", voice="en-sc")  # espeak-ng would silently speak "en"
    assert "unknown espeak-ng voice 'en-sc'" in str(exc.value)
    assert "en-gb-scotland" in str(exc.value) and "en-us" in str(exc.value)
    tts.check_voice("en-us+f3")
    with pytest.raises(InputError):
        tts.check_voice("en-us+nosuchvariant")


def test_missing_espeak_names_the_fix(monkeypatch):
    monkeypatch.setattr(tts.shutil, "which", lambda name: None)
    with pytest.raises(EnvironmentProblem, match="apt-get install -y espeak-ng"):
        tts.speak("a sentence nobody has spoken in this process yet", voice="en-us")


def test_load_clip_mixes_resamples_and_trims(tmp_path):
    t = np.arange(8000) / 8000
    tone = 0.4 * np.sin(2 * np.pi * 440 * t)
    stereo = np.zeros((16000, 2))
    stereo[4000:12000, 0] = tone
    stereo[4000:12000, 1] = tone
    sf.write(tmp_path / "clip.wav", stereo, 8000)
    clip = tts.load_clip(tmp_path / "clip.wav", SR)
    assert clip.dtype == np.float32 and abs(clip.size - SR) <= 40
    with pytest.raises(InputError, match="no such audio file"):
        tts.load_clip(tmp_path / "none.wav", SR)


# -- the timeline ------------------------------------------------------------------------------


def test_turns_in_order_with_interrupts_and_separate_backchannels(small):
    _, call = small
    truth = call.truth()
    turns = truth["turns"]
    assert [t["start_ms"] for t in turns] == sorted(t["start_ms"] for t in turns)
    assert [t["speaker"] for t in turns] == [
        "caller", "agent", "caller", "agent", "caller", "agent", "caller", "agent", "caller"
    ]  # fmt: skip
    assert [t["text"] for t in turns if t["interrupt"]] == ["wait", "no thanks"]
    assert [b["text"] for b in truth["backchannels"]] == ["mm-hmm"]
    assert set(truth["backchannels"][0]) == {"speaker", "start_ms", "end_ms", "text"}
    assert "mm-hmm" not in [t["text"] for t in turns]
    kinds = [u["kind"] for u in truth["utterances"]]
    assert kinds.count("backchannel") == 1 and kinds.count("barge_in") == 2
    assert truth["sample_rate"] == SR and truth["duration_ms"] == call.caller.size / 16
    # the backchannel sits inside the agent's first line, which keeps talking
    agent1 = next(u for u in truth["utterances"] if u["line"] == 1)
    back = truth["backchannels"][0]
    assert agent1["start_ms"] < back["start_ms"] < back["end_ms"] < agent1["end_ms"]


def test_barge_in_cuts_the_agent_at_start_plus_yield(small):
    _, call = small
    utts = {u.line: u for u in call.utterances}
    cut, wait = utts[1], utts[3]
    assert wait.start == cut.start + 2500 * 16  # barge_in_ms counts from the agent's start
    assert cut.truncated
    assert wait.start < cut.end <= wait.start + 200 * 16  # yield_ms 200
    assert len(cut.text.split()) < len(cut.full_text.split())
    # after a barge-in the agent answers latency_ms after the barge-in line ends
    assert utts[4].start == wait.end + 300 * 16
    # talk_over_ms: the agent starts 300 ms before the caller's end
    assert utts[6].start == utts[5].end - 300 * 16
    # yield_ms: null on the agent line: the barge-in does not cut it
    assert not utts[8].truncated and utts[9].start < utts[8].end
    # every utterance starts and ends at the voiced extent of the clean audio placed there
    for u in call.utterances:
        clean = call.clean_caller if u.speaker == "caller" else call.clean_agent
        pad = 200
        start, end = tts.voiced_extent(clean[u.start - pad : u.end + pad], SR)
        if u.speaker == "agent" and u.truncated:  # measured against the whole line's peak
            ref = tts.peak_window_rms(tts.synthesize(u.full_text, voice=u.voice).audio, SR)
            start, end = tts.voiced_extent(clean[u.start - pad : u.end + pad], SR, peak_rms=ref)
        assert (start, end) == (pad, pad + u.end - u.start), u


def test_verifier_sees_the_yield(small):
    _, call = small
    scored = score_voice_episode(call.turns())["result"]["components"]
    # one barge-in yielded to within 600 ms, the other ignored (yield_ms: null)
    assert scored["barge_in"] == 0.5


def test_noise_hits_the_target_snr_and_is_seeded(small):
    scenario, clean = small
    noisy = render(scenario, snr_db=3.0, seed=7)
    for side in ("caller", "agent"):
        speech = getattr(noisy, f"clean_{side}").astype(np.float64)
        noise = getattr(noisy, side).astype(np.float64) - speech
        mask = np.zeros(speech.size, bool)
        for u in noisy.utterances:
            if u.speaker == side:
                mask[u.start : u.end] = True
        snr = 10 * np.log10(np.mean(speech[mask] ** 2) / np.mean(noise**2))
        assert abs(snr - 3.0) < 0.5, (side, snr)
        assert np.abs(getattr(noisy, side)).max() <= 1.0
    assert noisy.truth()["turns"] == clean.truth()["turns"]
    assert noisy.truth()["settings"]["snr_db"] == 3.0
    again = render(scenario, snr_db=3.0, seed=7)
    assert np.array_equal(again.caller, noisy.caller)
    other = render(scenario, snr_db=3.0, seed=8)
    assert not np.array_equal(other.caller, noisy.caller)


def test_telephone_band_and_rate(small):
    scenario, _ = small
    call = render(scenario, telephone=True)
    assert call.truth()["sample_rate"] == SR and call.truth()["settings"]["telephone"] is True
    for x in (call.caller, call.agent):
        power = np.abs(np.fft.rfft(x.astype(np.float64))) ** 2
        f = np.fft.rfftfreq(x.size, 1 / SR)
        assert 10 * np.log10(power[f > 3600].sum() / power.sum()) < -50
        assert 10 * np.log10(power[(f > 0) & (f < 200)].sum() / power.sum()) < -40
        assert power[(f > 500) & (f < 3000)].sum() / power.sum() > 0.5


def test_recorded_audio_line(tmp_path):
    t = np.arange(SR) / SR
    sf.write(tmp_path / "hello.wav", 0.3 * np.sin(2 * np.pi * 220 * t), SR)
    path = write_yaml(
        tmp_path / "rec.yaml",
        """
        name: rec
        script:
          - caller: hello there
            audio: hello.wav
            at_ms: 1000
          - agent: Hello, how can I help?
        """,
    )
    call = render(load_scenario(path))
    first = call.truth()["turns"][0]
    assert (first["start_ms"], first["end_ms"], first["text"]) == (1000, 2000, "hello there")


# -- scenario errors ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("name: x\ncolour: red\nscript:\n  - caller: hi there\n", "colour: Extra inputs"),
        ("name: x\nscript:\n  - caller: hi there\n    speed: 3\n", "script[0].speed: Extra"),
        (
            "name: x\nscript:\n  - agent: hello there\n  - caller: hi\n    at_ms: 1\n"
            "    barge_in_ms: 2\n",
            "script[1]: give one trigger per caller line, not both at_ms and barge_in_ms",
        ),
        (
            "name: x\nscript:\n  - caller: wait\n    barge_in_ms: 100\n",
            "script[0].barge_in_ms: a barge-in must follow an agent line (the turn it goes "
            "into: put `- agent: TEXT` before it)",
        ),
        (
            "name: x\nscript:\n  - agent: hello there\n  - caller: wait\n    barge_in_ms: soon\n",
            "script[1].barge_in_ms: Input should be a valid integer",
        ),
        ("name: x\nscript:\n  - caller: hi there\n    agent: hello\n", "script[0]: a line needs"),
        ("name: x\nscript:\n  - agent: hi there\n    at_ms: 5\n", "at_ms is a caller trigger"),
        (
            "name: x\nscript:\n  - caller: hi there\n    audio: gone.wav\n",
            "script[0].audio: no such audio file",
        ),
        ("name: x\nscript: [\n", "invalid YAML at line"),
        ("- just\n- a list\n", "a scenario must be a YAML mapping"),
        ("name: x\ntask: {suite: nope, id: t}\nscript:\n  - caller: hi\n", "task.suite"),
        ("name: x\ntask: {suite: voice_starter, id: t}\nscript:\n  - caller: hi\n", "no task 't'"),
    ],
)
def test_bad_scenarios_name_the_file_and_field(tmp_path, body, needle):
    path = tmp_path / "bad.yaml"
    path.write_text(body, encoding="utf-8")
    with pytest.raises(InputError) as exc:
        load_scenario(path)
    message = str(exc.value)
    assert needle in message and "bad.yaml" in message and "\n" not in message


def test_missing_scenario_file(tmp_path):
    with pytest.raises(InputError, match="no such scenario file"):
        load_scenario(tmp_path / "none.yaml")


def test_timeline_errors_name_the_line(tmp_path):
    late = write_yaml(
        tmp_path / "late.yaml",
        """
        name: late
        script:
          - agent: Hello there.
          - caller: wait
            barge_in_ms: 60000
        """,
    )
    with pytest.raises(InputError, match=r"late.yaml: script\[1\].barge_in_ms: 60000 ms is past"):
        render(load_scenario(late))
    clash = write_yaml(
        tmp_path / "clash.yaml",
        """
        name: clash
        script:
          - caller: I have a question about my bill.
            at_ms: 0
          - caller: And another one.
            at_ms: 100
        """,
    )
    with pytest.raises(InputError, match=r"script\[1\]: the caller line would start at 100 ms"):
        render(load_scenario(clash))
    with pytest.raises(InputError, match="--agent-voice: unknown espeak-ng voice"):
        render(load_scenario(clash), agent_voice="en-sc")


# -- shipped scenarios, the sample recording, the CLI ------------------------------------------


def test_shipped_scenarios_render_within_30_to_60_s():
    for name in SHIPPED:
        scenario = load_scenario(SCENARIOS / f"{name}.yaml")
        assert scenario.name == name
        for line in scenario.script:
            if line.kind == "line":
                assert len(line.text.split()) >= 2, (name, line.text)
        call = render(scenario)
        assert 30_000 <= call.duration_ms <= 60_000, (name, call.duration_ms)
    refund = render(load_scenario(SCENARIOS / "refund-call.yaml"))
    task = refund.task
    scored = score_voice_episode(
        refund.turns(), budgets=task["budgets"], required_content=task["required_content"]
    )
    assert scored["result"]["pass_fail"]["voice"], scored
    assert [t["text"] for t in refund.turns() if t["interrupt"]] == ["wait"]


def test_sample_recording_matches_its_truth():
    rec = ROOT / "recordings"
    audio, sr = sf.read(rec / "refund-call.wav", dtype="float32")
    truth = json.loads((rec / "refund-call.truth.json").read_text())
    reference = json.loads((rec / "refund-call.reference.json").read_text())
    assert sr == SR and audio.shape[1] == 2
    assert (rec / "refund-call.wav").stat().st_size < 2.5e6
    assert truth["scenario"] == "refund-call" and reference["turns"] == truth["turns"]
    for u in truth["utterances"]:
        channel = audio[:, 0 if u["speaker"] == "caller" else 1]
        s, e = round(u["start_ms"] * 16), round(u["end_ms"] * 16)
        assert np.abs(channel[s:e]).max() > 0.05
        assert np.abs(channel[max(0, s - 160) : s - 8]).max() < 0.02  # quiet just before


def test_synth_says_an_llm_callers_lines_are_not_in_the_call(tmp_path, cli):
    """synth asks no LLM: an LLM-driven scenario is rendered from its script's own lines, and a
    warning says the agent lines after the last caller line follow each other unanswered."""
    code, _, err = cli("synth", "order-status-llm", "-o", str(tmp_path / "o"))
    assert code == 0 and (tmp_path / "o" / "call.wav").exists()
    assert "order-status-llm.yaml: caller.driver is llm, and synth asks no LLM" in err, err
    code, _, err = cli("synth", "quick-exchange", "-o", str(tmp_path / "q"))
    assert code == 0 and "warning" not in err, err
    # the caller's lines alone (a live call's conversation): rendered back to back, said so
    mine = tmp_path / "mine.yaml"
    mine.write_text("name: mine\nscript:\n  - caller: Hi there.\n  - caller: Are you open?\n")
    code, _, err = cli("synth", str(mine), "-o", str(tmp_path / "m"))
    assert code == 0 and f"{mine}: the script has no agent line: synth renders" in err, err


def test_cli_writes_the_call(tmp_path, cli):
    out = tmp_path / "out"
    code, stdout, _ = cli(
        "synth", str(SCENARIOS / "refund-call.yaml"), "-o", str(out), "--snr-db", "20"
    )
    assert code == 0
    for name in ("call.wav", "caller.wav", "agent.wav", "truth.json", "reference.json"):
        assert (out / name).exists(), name
        assert str(out / name) in stdout
    info = sf.info(out / "call.wav")
    assert (info.channels, info.samplerate, info.subtype) == (2, SR, "PCM_16")
    reference = json.loads((out / "reference.json").read_text())
    assert "refund" in reference["agent"] and reference["caller"].startswith("Hi,")
    assert "interrupt" in stdout and "wait" in stdout
    code, _, err = cli("synth", str(tmp_path / "none.yaml"), "-o", str(out))
    assert code == 2 and "no such scenario file" in err and len(err.strip().splitlines()) == 1


def test_write_call_refuses_a_file_as_outdir(tmp_path, small):
    _, call = small
    (tmp_path / "f").write_text("x")
    with pytest.raises(InputError, match="is not a directory"):
        write_call(call, tmp_path / "f")
