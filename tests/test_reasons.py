"""Warnings and degraded reasons are records with a code: counts and decisions read the code,
so rewording a message changes no count; each stage returns what it found and the runner
assembles it in the order found; result.json writes each code beside its message, and its
typed parts read and write back the same JSON."""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from enum import StrEnum
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from tests.conftest import ROOT
from turnscope.actors.agent.prompts import Prompt, Prompts
from turnscope.capture.player import ClipQueue
from turnscope.capture.telephony.codec import NotAudio, codec
from turnscope.reasons import Findings, Severity, assembled
from turnscope.scoring.evidence.results import ResultDocument, StructuredOutput

CALL = ROOT / "recordings" / "refund-call.wav"


class Code(StrEnum):
    A = "a"
    B = "b"


def test_findings_of_many_stages_assemble_in_the_order_found():
    source, caller = Findings(), Findings()
    source.warn(Code.A, "first")
    caller.degrade(Code.B, "second")
    source.degrade(Code.A, "third")
    found = assembled([source, caller, source])  # a stage given twice counts once
    assert [n.message for n in found.notes] == ["first", "second", "third"]
    assert found.degraded == ["second", "third"] and found.warnings == ["first"]
    assert found.codes(Severity.DEGRADED) == ["b", "a"] and found.has(Code.B)
    with pytest.raises(TypeError):  # text appended where a note belongs fails at once
        source.degraded.append("lost")


@pytest.fixture(scope="module")
def mix() -> np.ndarray:
    audio, rate = sf.read(CALL, dtype="float32", frames=12 * 16000)
    assert rate == 16000
    return 0.5 * (audio[:, 0] + audio[:, 1])


def _replay(tmp_path: Path, name: str, mix: np.ndarray):
    import turnscope

    wav = tmp_path / f"{name}.wav"
    sf.write(wav, mix, 16000, subtype="PCM_16")
    return turnscope.replay(caller=wav, agent=wav, outdir=tmp_path / name)


def _result(run) -> dict:
    return json.loads(Path(run.files["result"]).read_text())


def test_a_reworded_message_is_counted_by_its_code(mix, tmp_path, monkeypatch):
    plain = _replay(tmp_path, "plain", mix)
    warn, degrade = Findings.warn, Findings.degrade
    monkeypatch.setattr(Findings, "warn", lambda s, c, m: warn(s, c, f"reworded: {m[::-1]}"))
    monkeypatch.setattr(Findings, "degrade", lambda s, c, m: degrade(s, c, f"reworded: {m[::-1]}"))
    reworded = _replay(tmp_path, "reworded", mix)
    a, b = _result(plain), _result(reworded)
    assert a["verdict"] == b["verdict"] == "error"  # one recording on both channels
    assert "same_audio" in a["degraded_codes"]
    assert a["degraded_codes"] == b["degraded_codes"] and a["warning_codes"] == b["warning_codes"]
    assert len(a["degraded"]) == len(a["degraded_codes"]) and a["degraded"] != b["degraded"]
    assert all(m.startswith("reworded: ") for m in b["degraded"])
    count = [Counter(n.code for n in r.result.findings.notes) for r in (plain, reworded)]
    assert count[0] == count[1]


def _round_trip(path: Path, model: type) -> None:
    text = path.read_text()
    data = json.loads(text)
    for doc in (model.model_validate(data), model.read(data)):
        assert json.dumps(doc.model_dump(mode="json")) == json.dumps(data), path


def test_result_documents_read_and_write_back_the_same(sample_bundle):
    for doc, model in (
        ("result.json", ResultDocument),
        ("structured_output.json", StructuredOutput),
    ):
        _round_trip(sample_bundle / doc, model)
    result = ResultDocument.model_validate_json((sample_bundle / "result.json").read_text())
    assert result.verifier.result.components["latency"] >= 0.0  # typed, not a dict
    assert result.wer is not None and result.wer.overall.reference_words > 0
    assert result.warning_codes is not None and len(result.warning_codes) == len(result.warnings)


def test_an_agent_prompt_is_found_by_its_clip_not_its_label():
    async def play() -> tuple[Prompts, ClipQueue, object]:
        queue, prompts = ClipQueue(320), Prompts()
        prompt = Prompt(3, "Sure: 3:45 works")  # the text holds the label's separator
        playback = queue.play(np.ones(480, np.int16), prompt.label)
        prompts.add(playback, prompt)
        for position in (0, 320, 640):
            queue.take(position)
        return prompts, queue, playback

    prompts, queue, playback = asyncio.run(play())
    record = queue.log[0]
    assert prompts.of(record) == prompts.of(playback) == Prompt(3, "Sure: 3:45 works")
    assert prompts.of(record).mark == "3" and record.to_dict()["label"] == "3:Sure: 3:45 works"


def test_a_payload_that_is_not_audio_is_known_by_its_kind():
    mulaw = codec("mulaw")
    assert mulaw.diagnose(b"")[0] is NotAudio.EMPTY
    assert mulaw.diagnose(b"RIFF" + bytes(200))[0] is NotAudio.FILE_HEADER
    assert codec("pcm16").diagnose(b"abc")[0] is NotAudio.ODD_BYTES
    rng = np.random.default_rng(0)
    noise = (rng.standard_normal(800) * 8000).astype("<i2").tobytes()
    assert mulaw.diagnose(noise)[0] is NotAudio.NOISE


def test_mu_law_near_silence_is_audio_not_an_mp3_header():
    """0xFF is mu-law's zero: a reply's message may begin FF FB (an MP3 frame's sync), and one
    did and degraded a good call. A file is known by a whole header (an ID3v2 tag's)."""
    mulaw = codec("mulaw")
    quiet = bytes([0xFF, 0xFB, 0xFE, 0xFD] * 40)
    assert mulaw.diagnose(quiet) is None
    assert (
        mulaw.diagnose(b"ID3\x04\x00\x00\x00\x00\x10\x7f" + bytes(150))[0] is NotAudio.FILE_HEADER
    )
    assert mulaw.diagnose(b"ID3\xfe" + quiet[:156]) is None  # not a tag's version: audio bytes


NO_GREETING = """
name: no-greeting
caller: {voice: en-us, timeout_s: 20, hangup_after_ms: 500, greeting_timeout_ms: 1500,
         reply_timeout_ms: 3000}
script:
  - agent: Hello, how can I help?
  - caller: I would like a refund please.
  - agent: Sure, I can help with that refund today.
"""


def test_the_callers_findings_are_the_runs_and_printed_as_found(tmp_path, run_exe):
    """The scripted caller keeps what it finds (it writes nothing into the call's info); the
    runner assembles it with the call's and the pipeline's, and the live view prints it."""
    from tests.test_faults import _start_agent

    scenario = tmp_path / "no-greeting.yaml"
    scenario.write_text(NO_GREETING)
    agent, url = _start_agent("--no-greet")
    try:
        done = run_exe(
            "call", url, "--scenario", str(scenario), "--loopback-only", "-o", str(tmp_path / "o")
        )
    finally:
        agent.terminate()
        agent.wait(10)
    result = json.loads((tmp_path / "o" / "result.json").read_text())
    said = dict(zip(result["warning_codes"], result["warnings"], strict=True))
    assert "agent_did_not_greet" in said, result["warnings"]
    assert f"warning: {said['agent_did_not_greet']}" in " ".join(done.stdout.split()), done.stdout
    assert said["agent_did_not_greet"] in result["script"]["warnings"]
