"""The caller's acoustics, dysfluencies, implied tags and default voice (issue 31 items 2, 3, 5).

- a line through the room and the line keeps its length (the truth), its tail sent after it by
  the caller track's queue, outside the send record; the background runs in the silence and
  through a lost packet (comfort noise), the speech does not;
- every telephone option keeps the speech where it was (codec delay taken out);
- seeded: the same seed, the same audio; the bed a load run's calls share is made once;
- dysfluencies: the same words every run, in the WER reference too;
- tags a fixture's caller implies are added, never removed;
- no caller.voice: the neural voice where installed, espeak-ng named as the fallback;
- bad input: one line naming the key or the file and the fix, exit 2.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from turnscope.actors.caller import acoustics, codecs, speech
from turnscope.actors.caller.acoustic_keys import Acoustics, Dysfluency, Telephone
from turnscope.actors.caller.dysfluency import stumble
from turnscope.actors.caller.scenario import Scenario
from turnscope.capture.player import ClipPlayer, ClipQueue

TEXT = "My order number is four two seven, and I would like a refund."


def test_a_line_keeps_its_extent_and_its_room_goes_out_after_it():
    a = Acoustics(noise="car", snr_db=10, reverb="office", telephone=Telephone.G711, seed=5)
    dry = speech.speak(TEXT, voice="en-us")
    sent = acoustics.process(dry, a, a.seed, TEXT)
    assert sent.size == dry.size and sent.tail is not None and sent.tail.size > 0.3 * 16000
    again = acoustics.process(dry, a, a.seed, TEXT)
    assert np.array_equal(sent, again) and np.array_equal(sent.tail, again.tail)
    loop = acoustics.bed_loop(a, 0.05, 16000)
    assert loop is acoustics.bed_loop(a, 0.05, 16000)  # made once per process
    other = acoustics.bed_loop(a.model_copy(update={"seed": 6}), 0.05, 16000)
    assert not np.array_equal(loop, other)

    class Track(ClipPlayer):
        def __init__(self) -> None:
            self.clips = ClipQueue(320)

    async def play() -> tuple[list[np.ndarray], Track]:
        track = Track()
        track.clips.bed = acoustics.Bed(loop, None, 16000)
        track.play(sent, "line", at_ms=100)
        frames = [track.clips.take(k * 320) for k in range(int(1.5 * dry.size / 320) + 60)]
        return frames, track

    frames, track = asyncio.run(play())
    out = np.concatenate(frames).astype(np.int32)
    [rec] = track.log
    assert (rec.start, rec.end) == (1600, 1600 + dry.size)  # the speech's own extent
    background = loop.take(np.arange(out.size), mode="wrap").astype(np.int32)
    assert np.array_equal(out[:1600], background[:1600])  # the bed before the line
    tail = out[rec.end : rec.end + sent.tail.size] - background[rec.end : rec.end + sent.tail.size]
    assert np.abs(tail - np.round(sent.tail * 32767)).max() <= 2  # the tail right after it
    rest = rec.end + sent.tail.size
    assert np.array_equal(out[rest:], background[rest:])


def test_a_lost_packet_loses_the_speech_not_the_background():
    a = Acoustics(noise="office", loss=0.3, seed=2)
    loop = acoustics.bed_loop(a, 0.1, 8000)
    lost = acoustics.lost_packets(a)
    assert lost is not None and 0.25 < lost[:5000].mean() < 0.35
    bed = acoustics.Bed(loop, lost, 8000)  # a phone line: 8 kHz queue samples
    tone = np.full(160, 3000, np.int16)
    for k in range(50):
        out = bed.mix(tone, k * 320).astype(np.int32)  # call-clock positions are 16 kHz
        expect = loop.take(np.arange(k * 160, k * 160 + 160), mode="wrap").astype(np.int32)
        assert np.array_equal(out, expect + (0 if lost[k] else 3000))
    assert (bed.packets, bed.lost_count) == (50, int(lost[:50].sum()))
    jittery = acoustics.lost_packets(Acoustics(jitter_ms=30, jitter_buffer_ms=60, seed=2))
    assert 0.08 < jittery[:5000].mean() < 0.2  # exp(-2) of the packets come too late


@pytest.mark.parametrize("line", list(Telephone))
def test_each_telephone_line_keeps_the_speech_in_place(line: Telephone):
    x = speech.speak("Do I have to send them back by post?", voice="piper:joe-us")
    y = codecs.telephone(x, line)
    assert y.size == x.size
    lags = [float(np.dot(y[3000 + k : 25000 + k], x[3000:25000])) for k in range(-40, 41)]
    assert abs(int(np.argmax(lags)) - 40) <= 2
    if line is not Telephone.OPUS:  # 8 kHz: nothing above the band
        spectrum = np.abs(np.fft.rfft(y)) ** 2
        f = np.fft.rfftfreq(y.size, 1 / 16000)
        assert spectrum[f > 4000].sum() < 1e-3 * spectrum.sum()


def test_dysfluencies_are_the_same_every_run_and_in_the_reference():
    from turnscope.actors.caller.scenario_contract import scenario_contract

    d = Dysfluency(fillers=0.2, restarts=1, self_correction=1, seed=4)
    said = stumble(TEXT, d)
    assert said == stumble(TEXT, d) and said != stumble(TEXT, d.model_copy(update={"seed": 5}))
    assert "sorry, I mean" in said and said.split()[0].endswith("-") is False
    sc = Scenario.model_validate(
        {"name": "d", "caller": {"dysfluency": d.model_dump()}, "script": [{"caller": TEXT}]}
    )
    assert scenario_contract(sc).reference.texts["caller"] == said
    assert acoustics.record(sc)["spoken_texts"] == {"0": said}
    from turnscope.actors.caller.synth import render

    [placed] = render(sc).utterances  # synth says it too, its truth the words as spoken
    assert placed.text == said


def test_a_fixtures_caller_adds_its_tags(tmp_path: Path):
    from turnscope.actors.caller.tags import with_implied_tags
    from turnscope.scoring.suites.fixtures import Fixture

    (tmp_path / "s.yaml").write_text(
        "name: s\ncaller: {acoustics: {noise: street, snr_db: 5}}\nscript:\n"
        "  - caller: Hello there.\n    voice: fr\n"
    )
    live = Fixture(source="synthetic", audio="s.yaml", tags=["complexity"])
    assert with_implied_tags(live, tmp_path / "suite.json").tags == [
        "complexity", "acoustic", "speaker", "language",
    ]  # fmt: skip
    (tmp_path / "p.yaml").write_text("name: p\nscript:\n  - caller: Hello there.\n")
    recipe = {"scenario": "p.yaml", "telephone": True, "caller_voice": "en-gb-scotland"}
    synth = Fixture(source="synthetic", synth=recipe, tags=["speaker"])
    assert with_implied_tags(synth, tmp_path / "suite.json").tags == ["speaker", "acoustic"]
    plain = Fixture(source="synthetic", synth={"scenario": "p.yaml"}, tags=["acoustic"])
    assert with_implied_tags(plain, tmp_path / "suite.json").tags == ["acoustic"]  # kept


def test_no_caller_voice_is_the_neural_one_or_espeak_ng_named(monkeypatch):
    from turnscope.actors.caller.voices import default

    sc = Scenario.model_validate({"name": "v", "script": [{"caller": "Hello."}]})
    assert default.caller_voice(sc) == "piper:joe-us"
    assert "neural default" in default.default_note(sc)
    named = Scenario.model_validate(
        {"name": "v", "caller": {"voice": "en-us"}, "script": [{"caller": "Hello."}]}
    )
    assert default.caller_voice(named) == "en-us" and default.default_note(named) is None
    monkeypatch.setattr(default, "neural_installed", lambda: False)
    assert default.caller_voice(sc) == "en-us"
    note = default.default_note(sc)
    assert "espeak-ng en-us (the fallback" in note and "pip install" in note


@pytest.mark.parametrize(
    ("acoustics_yaml", "expect"),
    [
        ("{noise: babble, snr_db: -50}", "caller.acoustics.snr_db: snr_db is -50: give -10 to 60"),
        ("{noise: babble, snr_db: nan}", "caller.acoustics.snr_db: snr_db is nan: give -10"),
        ("{noise: babble, snr_db: .nan}", "finite: caller.acoustics.snr_db is nan: give a finite"),
        ("{noise: gone.wav}", "caller.acoustics.noise: no such noise file"),
        ("{noise: low.wav}", "the noise is at 4000 Hz: give one at 8000 Hz or more"),
        ("{reverb: stereo.wav}", "the impulse response has 2 channels: give a mono one"),
        ("{noise: hush.wav}", "caller.acoustics.noise: | hush.wav: the noise file is silent: give"),
        ("{reverb: hush.wav}", "caller.acoustics.reverb: | hush.wav: the impulse response file is"),
        ("{snr_db: 10}", "caller.acoustics: snr_db needs a noise"),
        ("{telephone: gsm}", "caller.acoustics.telephone:"),
        ("{loss: 0.9}", "caller.acoustics.loss: loss is 0.9: give 0 to 0.5"),
    ],
)
def test_bad_acoustics_are_one_line_naming_the_key(tmp_path, cli, acoustics_yaml, expect):
    sf.write(tmp_path / "low.wav", np.zeros(8000, np.float32), 4000)
    sf.write(tmp_path / "stereo.wav", np.zeros((16000, 2), np.float32), 16000)
    sf.write(tmp_path / "hush.wav", np.zeros(16000 * 2, np.float32), 16000)
    (tmp_path / "s.yaml").write_text(
        f"name: bad\ncaller: {{acoustics: {acoustics_yaml}}}\nscript:\n  - caller: Hello.\n"
    )
    code, _, err = cli("synth", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out"))
    assert code == 2, err
    # " | " parts: the key, then the file and what is wrong with it (the path between them)
    assert all(part in err for part in expect.split(" | ")), err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.parametrize(
    ("line", "expect"),
    [
        ("{caller: Hello., acoustics: {loss: 0.1}}", "loss is the whole call's line"),
        ("{agent: Hello., acoustics: {reverb: hall}}", "acoustics is for a spoken caller line"),
        ("{caller: Hello., dysfluency: {fillers: 2}}", "fillers is 2: give 0 to 0.5"),
    ],
)
def test_bad_line_acoustics_are_one_line_naming_the_line(tmp_path, cli, line, expect):
    (tmp_path / "s.yaml").write_text(f"name: bad\nscript:\n  - {line}\n")
    code, _, err = cli("synth", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "out"))
    assert code == 2 and expect in err and "script[0]" in err, err
    assert len(err.strip().splitlines()) == 1, err


def test_the_record_says_how_to_make_the_same_caller_again(tmp_path: Path):
    """result.json's ``script.acoustics`` (truth.json's ``settings.acoustics`` alike) holds the
    dysfluency settings, the call's and a line's, with their seeds, and the acoustics seed: the
    words said follow from them alone, and the bundle's model keeps them as written."""
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.actors.caller.synth import render, write_call
    from turnscope.scoring.evidence.results import ResultDocument

    other = "I paid 30 dollars on Friday and it came on Monday."
    (tmp_path / "d.yaml").write_text(
        "name: d\ncaller:\n  voice: en-us\n"
        "  dysfluency: {fillers: 0.2, restarts: 1, self_correction: 1, seed: 4}\n"
        f"script:\n  - caller: {TEXT}\n  - agent: Sure.\n  - caller: {other}\n"
        "    dysfluency: {self_correction: 1}\n    acoustics: {noise: car, reverb: small}\n"
    )
    sc = load_scenario(tmp_path / "d.yaml")
    paths = write_call(render(sc), tmp_path / "out")
    rec = json.loads(paths["truth"].read_text())["settings"]["acoustics"]
    assert rec["seed"] == 0 and rec["lines"]["2"] == {
        "noise": "car",
        "reverb": "small",
        "snr_db": 15.0,
    }
    call, own = rec["dysfluency"]["call"], rec["dysfluency"]["lines"]["2"]
    assert call == {"fillers": 0.2, "restarts": 1.0, "self_correction": 1.0, "seed": 4}
    assert own == {"fillers": 0.0, "restarts": 0.0, "self_correction": 1.0, "seed": 0}
    said = rec["spoken_texts"]
    assert said["0"] == stumble(TEXT, Dysfluency(**call)) != TEXT
    assert said["2"] == stumble(other, Dysfluency(**own)) != other
    doc = ResultDocument.model_validate({"script": {"acoustics": rec}})
    assert doc.script.acoustics.dysfluency == rec["dysfluency"] and doc.script.acoustics.seed == 0
    assert doc.model_dump(mode="json", by_alias=True, exclude_unset=True)["script"] == {
        "acoustics": rec
    }
    # A caller who only stumbles is recorded too (synth wrote no acoustics for it before).
    plain = Scenario.model_validate(
        {"name": "p", "caller": {"dysfluency": call}, "script": [{"caller": TEXT}]}
    )
    assert render(plain).settings["acoustics"]["dysfluency"] == {"call": call}
