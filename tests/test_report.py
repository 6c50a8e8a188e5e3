"""report.html and timeline.png: built from a real replay bundle, self-contained, rendered by
headless Chromium with the turns, verdict, barge-in and latency marks visible; a degraded bundle
still renders and says why; a 10-minute call stays small; a non-bundle is one line, exit 2; the
report, the live view and the timeline markers show the verifier's own facts."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import soundfile as sf
from PIL import Image
from rich.console import Console

from tests.conftest import ROOT
from turnscope.asr.assembly import Assembly, Turn
from turnscope.live_view import LiveView
from turnscope.pipeline import TurnUpdate
from turnscope.scoring.evidence.bundle import BundleIds, empty_wav, write_bundle
from turnscope.scoring.report.html import build_report
from turnscope.scoring.report.model import read_report
from turnscope.scoring.report.timeline import PLOT
from turnscope.scoring.verifier import failed_floors, score_voice_episode, verifier_facts
from turnscope.scoring.wer import measure_wer
from turnscope.timeline_record import timeline_document

SAMPLE = ROOT / "recordings" / "refund-call.wav"
RATE = 16000


# --- helpers -----------------------------------------------------------------------------------


def chromium(tmp: Path, *args: str) -> str:
    """Run headless Chromium offline; return its stdout. Missing Chromium fails, never skips."""
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None and Path("/usr/bin/chromium").exists():
        exe = "/usr/bin/chromium"
    if exe is None:
        pytest.fail("chromium is not installed: run ./scripts/setup.sh --dev")
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp / 'chromium-profile'}",
        *args,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=90)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout


class _Text(HTMLParser):
    """Visible text of a DOM dump (no <style>, no tooltip <title>s)."""

    def __init__(self) -> None:
        super().__init__()
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag, attrs):
        self.hidden += tag in ("style", "title", "script")

    def handle_endtag(self, tag):
        self.hidden -= tag in ("style", "title", "script")

    def handle_data(self, data):
        if not self.hidden:
            self.parts.append(data)


def visible_text(dom: str) -> str:
    p = _Text()
    p.feed(dom)
    return " ".join(" ".join(p.parts).split())


def marks(dom: str, mark: str) -> list[str]:
    """Texts of the SVG elements carrying data-mark=MARK."""
    return re.findall(rf'<text[^>]*data-mark="{mark}"[^>]*>([^<]*)</text>', dom)


def colours(path: Path) -> int:
    img = Image.open(path).convert("RGB")
    return len(img.getcolors(maxcolors=1 << 20) or [])


@pytest.fixture(scope="module")
def bundle(sample_bundle: Path) -> Path:
    """The session's sample bundle (one replay for every test module that reads it)."""
    return sample_bundle


@pytest.fixture(scope="module")
def built(bundle: Path) -> tuple[Path, Path]:
    html_path, png_path = build_report(bundle)
    return html_path, png_path


def fake_bundle(
    out: Path,
    *,
    turns: list[dict],
    seconds: float,
    degraded: list[str] = (),
    wer: dict | None = None,
    backchannels: list[dict] = (),
) -> Path:
    """A bundle written by hand: channel wavs with noise where each speaker talks, documents in
    the shapes turnscope writes, and the manifest from the real bundle writer."""
    out.mkdir(parents=True)
    rng = np.random.default_rng(7)
    for ch in ("caller", "agent"):
        if seconds <= 0:
            empty_wav(out / f"{ch}.wav")
            continue
        audio = (rng.standard_normal(int(seconds * RATE)) * 0.002).astype(np.float32)
        for t in turns:
            if t["speaker"] == ch:
                a, b = int(t["start_ms"] * 16), int(t["end_ms"] * 16)
                audio[a:b] += rng.standard_normal(b - a).astype(np.float32) * 0.2
        sf.write(out / f"{ch}.wav", np.clip(audio, -1, 1), RATE, subtype="PCM_16")
    dialogue = [
        {k: t[k] for k in ("speaker", "start_ms", "end_ms", "text", "interrupt")} for t in turns
    ]
    scored = score_voice_episode(dialogue) if turns else score_voice_episode([])
    verdict = "pass" if scored["result"]["pass_fail"].get("voice") else "fail"
    status = "degraded" if degraded else "passed"
    continuity = {
        "status": status,
        "metrics": {"evidence_status": status},
        "caveats": list(degraded),
    }
    transcript = {
        "schema": "turnscope.transcript.v1",
        "duration_ms": seconds * 1000,
        "turns": [
            {**t, "turn_index": i, "spans": [[t["start_ms"], t["end_ms"]]]}
            for i, t in enumerate(turns)
        ],
        "backchannels": list(backchannels),
        "utterances": [],
        "events": [],
    }
    documents = {
        "transcript_json": transcript,
        "waveform_timeline_json": {
            "channels": [
                {"channel": c, "duration_ms": seconds * 1000} for c in ("caller", "agent")
            ],
            "markers": [],
            "turns": [],
        },
        "structured_output_json": {
            "output": {
                "verdict": verdict,
                "failed_floors": failed_floors(scored["result"]),
                "verifier": scored,
                "wer": wer,
                "task": {"budgets": {"max_latency_ms": 1200}, "required_content": []},
                "continuity": continuity,
                "run": {"degraded": list(degraded), "warnings": []},
            }
        },
        "live_continuity_report_json": continuity,
    }
    write_bundle(out, documents, ids=BundleIds.new("fake"), metadata={})
    return out


# --- the real bundle ---------------------------------------------------------------------------


def test_report_command_builds_both_files(bundle: Path, built, cli):
    code, out, err = cli("report", str(bundle))
    assert code == 0, err
    assert out.split() == [str(bundle / "report.html"), str(bundle / "timeline.png")]
    code, out, _ = cli("open", str(bundle))
    assert code == 0 and out.strip() == str((bundle / "report.html").resolve())


AUDIO = re.compile(r'src="data:audio/ogg;base64,[A-Za-z0-9+/=]+"')


def test_report_is_one_self_contained_file(built):
    page = built[0].read_text(encoding="utf-8")
    assert len(AUDIO.findall(page)) == 1  # the call's audio, inline; nothing else has a src
    page = AUDIO.sub("", page)
    assert "http://" not in page and "https://" not in page
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.I)
    assert not re.search(r"<link\b[^>]*\bhref\s*=", page, re.I)
    assert not re.search(r"\bsrc\s*=|url\(|@import", page, re.I)
    assert "Content-Security-Policy" in page and "default-src 'none'" in page


def test_chromium_renders_turns_verdict_barge_in_and_latency(bundle: Path, built, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", built[0].as_uri())
    text = visible_text(dom)
    turns = json.loads((bundle / "transcript.json").read_text())["turns"]
    assert turns, "the replay found no turns"
    for t in turns:
        assert " ".join(t["text"].split()) in text, t["text"]
    assert "PASS" in text
    # barge-in: one mark per interrupt, labelled with how fast the agent yielded
    interrupts = [t for t in turns if t["interrupt"]]
    assert interrupts and dom.count('data-mark="barge-in"') == len(interrupts)
    labels = marks(dom, "barge-in-label")
    for c in interrupts:
        agent = next(
            a
            for a in turns
            if a["speaker"] == "agent" and a["start_ms"] < c["start_ms"] < a["end_ms"]
        )
        assert (
            f"barge-in #{c['turn_index']}: agent yielded in {agent['end_ms'] - c['start_ms']} ms"
            in labels
        )
    # latency: every agent turn after a caller turn is annotated with the ms the verifier scores
    expected, last = [], None
    for t in turns:
        if t["speaker"] == "caller":
            last = t
        elif last is not None:
            expected.append(f"{t['start_ms'] - last['end_ms']} ms")
    assert sorted(marks(dom, "latency-label")) == sorted(expected)
    assert "reply latency" in text


def test_chromium_screenshot_is_not_blank(built, tmp_path):
    shot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,1000", built[0].as_uri())
    assert Image.open(shot).size == (1400, 1000)
    assert colours(shot) > 16


def test_timeline_png_is_a_sensible_picture(built):
    img = Image.open(built[1])
    assert img.format == "PNG"
    assert 1000 <= img.width <= 2000 and 200 <= img.height <= 600
    assert colours(built[1]) > 16


# --- other bundles -----------------------------------------------------------------------------


def test_the_embedded_audio_is_both_channels_and_encoded_ahead_once(bundle: Path, tmp_path):
    """The call's audio decodes back to both channels at their length; encoded ahead (when the
    recording ended), it is used as is, and encoded again if a file changed since."""
    import io
    import shutil

    import soundfile as sf

    from turnscope.scoring.report import listen

    copy = tmp_path / "b"
    shutil.copytree(bundle, copy)
    data = listen.opus_of(copy)
    audio, rate = sf.read(io.BytesIO(data))
    seconds = sf.info(copy / "caller.wav").duration
    assert audio.shape[1] == 2 and rate == 16000 and abs(len(audio) / rate - seconds) < 0.1
    listen.prepare(copy)
    ahead = listen._prepared[copy.resolve()][1]
    assert listen.opus_of(copy) is ahead  # no second encode
    listen.prepare(copy)
    sf.write(copy / "agent.wav", np.zeros(16000, np.int16), 16000, subtype="PCM_16")
    assert listen.opus_of(copy) is not ahead  # the file changed: encoded again


def test_report_on_a_folder_that_is_not_a_bundle_is_one_line(cli, tmp_path):
    (tmp_path / "transcript.json").write_text("{}")
    code, out, err = cli("report", str(tmp_path))
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "not a voice artifact bundle" in err
    assert "voice_artifact_manifest.json" in err and "waveform_timeline.json" in err
    code, _, err = cli("open", str(tmp_path / "nope"))
    assert code == 2 and "nope: no such run folder or page" in err


def test_degraded_bundle_renders_and_says_why(cli, tmp_path):
    reason = "agent audio: 31% of frames lost <in transit>"
    fake = fake_bundle(tmp_path / "degraded", turns=[], seconds=0, degraded=[reason])
    code, out, err = cli("open", str(fake))
    assert code == 0, err
    page = Path(out.strip())
    assert page.is_file() and (fake / "timeline.png").is_file()
    text = visible_text(chromium(tmp_path, "--dump-dom", page.as_uri()))
    assert "DEGRADED EVIDENCE" in text and reason in text
    assert "No turns" in text and "WER not measured" in text


def test_ten_minute_call_stays_small_and_wraps_a_minute_per_row(tmp_path):
    turns, t, i = [], 500.0, 0
    words = ["please", "check", "my", "order", "and", "the", "refund", "status", "now"]
    while t < 595_000:
        caller_end = t + 3000
        turns.append(
            {
                "speaker": "caller",
                "start_ms": int(t),
                "end_ms": int(caller_end),
                "text": " ".join(words[i % 5 :]),
                "interrupt": False,
            }
        )
        start = caller_end + (400 if i % 7 else 1500)  # every 7th reply is too slow
        turns.append(
            {
                "speaker": "agent",
                "start_ms": int(start),
                "end_ms": int(start + 4000),
                "text": " ".join(words * 2),
                "interrupt": False,
            }
        )
        t, i = start + 4600, i + 1
    turns[6]["interrupt"], turns[6]["start_ms"] = True, turns[5]["end_ms"] - 300  # a barge-in
    turns[3]["text"] = '<script>alert("x")</script> & more'  # text is data, never markup
    ref = {
        ch: " ".join(x["text"] for x in turns if x["speaker"] == ch) for ch in ("caller", "agent")
    }
    hyp = {ch: text.replace("refund", "re fund") for ch, text in ref.items()}
    wer = measure_wer(ref, hyp).to_dict(with_alignment=True)
    bc = [{"speaker": "caller", "start_ms": 12_000, "end_ms": 12_300, "text": "mm-hmm"}]
    fake = fake_bundle(tmp_path / "long", turns=turns, seconds=600, wer=wer, backchannels=bc)
    html_path, png_path = build_report(fake)
    page = html_path.read_text(encoding="utf-8")
    audio = AUDIO.findall(page)
    assert len(audio) == 1 and len(audio[0]) < 600 * 6000 * 4 / 3  # Opus, under 6 kB/s
    assert len(AUDIO.sub("", page)) < 3_000_000
    assert page.count('<div id="row-') == 10
    assert page.count('data-mark="latency-label"') == len(turns) // 2
    assert 'class="tag bad">reply latency 1500 ms' in page
    assert "<script>alert" not in page and page.count("<script") == 1  # ours, the seek only
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; more" in page
    img = Image.open(png_path)
    assert img.width < 2000 and img.height < 3000


# --- every view renders the verifier's facts --------------------------------------------------


def _turn(speaker: str, start: float, end: float, interrupt: bool = False) -> dict:
    return {
        "speaker": speaker,
        "start_ms": start,
        "end_ms": end,
        "text": "",
        "interrupt": interrupt,
    }


# An interrupt that overlaps two agent turns, one that starts before the agent does, one that
# meets no agent speech, a talk-over, another speaker, and times that round (the verifier's ints).
EDGE = [
    _turn("agent", 0, 800),
    _turn("caller", 500, 2000.6),
    _turn("agent", 1900, 5000.4),
    _turn("caller", 4000.5, 5200, True),
    _turn("agent", 5100, 7000),
    _turn("caller", 7500, 7600, True),
    _turn("caller", 8000, 8500, True),
    _turn("system", 8100, 8200),
    _turn("agent", 8300.6, 9900),
    _turn("caller", 9999.5, 10500),
    _turn("agent", 10499.6, 12000),
]


def test_report_renders_the_verifiers_facts(tmp_path):
    fake = fake_bundle(tmp_path / "edge", turns=EDGE, seconds=13)
    m = read_report(fake, PLOT)
    facts = verifier_facts(EDGE, budgets={"max_latency_ms": 1200})
    assert [(g.caller, g.agent, g.gap_ms, g.ok) for g in m.gaps] == [
        (g.caller, g.agent, g.gap_ms, g.ok) for g in facts.gaps
    ]
    assert sorted((b.caller, b.agent, b.yield_ms, b.ok) for b in m.barge_ins if b.agent) == sorted(
        (b.caller, b.agent, b.yield_ms, b.handled) for b in facts.barge_ins
    )
    assert [b.caller for b in m.barge_ins if b.agent is None] == list(facts.unmet_interrupts)
    assert m.harmful == set(facts.harmful)
    page = build_report(fake)[0].read_text(encoding="utf-8")
    handled = sum(bool(b.handled) for b in facts.barge_ins)
    assert f"{handled} of {len(facts.barge_ins)} barge-ins: agent stopped within" in page
    for b in facts.barge_ins:
        verb = "yielded in" if b.handled else "kept talking for"
        assert f"barge-in: agent #{b.agent} {verb} {b.yield_ms} ms" in page


def test_live_view_and_timeline_markers_render_the_verifiers_facts():
    turns = [Turn(t["speaker"], t["start_ms"], t["end_ms"], "", t["interrupt"]) for t in EDGE]
    assembly = Assembly(turns=turns)
    facts = verifier_facts(assembly.dialogue(), budgets={"max_latency_ms": 1200})
    out = io.StringIO()
    view = LiveView(Console(file=out, width=400, color_system=None), budget_ms=1200)
    view.on_update(TurnUpdate(assembly, list(turns), [], 1e9))
    lines = out.getvalue().splitlines()
    assert len(lines) == len(turns)  # EDGE is in start order: one line per turn, in list order
    for i, line in enumerate(lines):
        gap = facts.gap_of(i)
        shown = re.findall(r"\[latency (-?\d+) ms\]", line)
        assert shown == ([] if gap is None else [str(gap.gap_ms)]), line
        yields = re.findall(r"barge-in: agent (?:yielded after|kept talking) (\d+) ms", line)
        assert yields == [str(b.yield_ms) for b in facts.barge_ins_of(i)], line
    doc = timeline_document(
        SimpleNamespace(assembly=assembly, info=SimpleNamespace(details={})), [], {}
    ).model_dump(mode="json")
    stopped = {
        m["turn_index"]: m.get("agent_stopped_after_ms")
        for m in doc["markers"]
        if m["key"] == "barge_in"
    }
    first = {i: facts.barge_ins_of(i)[:1] for i, t in enumerate(turns) if t.interrupt}
    assert stopped == {i: b[0].yield_ms if b else None for i, b in first.items()}


def test_malformed_pieces_are_named_and_the_rest_is_shown(tmp_path):
    fake = fake_bundle(tmp_path / "bad", turns=EDGE[:3], seconds=6)
    path = fake / "transcript.json"
    doc = json.loads(path.read_text())
    doc["turns"][1]["start_ms"] = "soon"
    doc["turns"].append("not a turn")
    doc["backchannels"] = {"not": "a list"}
    path.write_text(json.dumps(doc))
    m = read_report(fake, PLOT)
    assert [(t.speaker, t.start_ms) for t in m.turns] == [
        ("agent", 0.0),
        ("caller", 0.0),
        ("agent", 1900.0),
    ]
    assert m.backchannels == []
    note = next(n for n in m.notes if n.startswith("transcript.json has malformed values"))
    assert "start_ms" in note and "backchannels" in note and "turns" in note
    page = build_report(fake)[0].read_text(encoding="utf-8")
    assert "Not shown (missing or unreadable)" in page and "malformed values" in page


def test_the_report_shows_the_callers_line(tmp_path):
    """A caller on a noisy line: report.html says the bed and its SNR at the microphone and on
    the line, the room, the codec, a line's own noise, the packets lost, the dysfluency with its
    seed and the words as said, from result.json's ``script.acoustics`` (a real synthesis's)."""
    from turnscope.actors.caller.scenario_file import load_scenario
    from turnscope.actors.caller.synth import render

    (tmp_path / "noisy.yaml").write_text(
        "name: noisy\ncaller:\n  voice: en-us\n"
        "  acoustics: {noise: street, snr_db: 12, reverb: office, telephone: g711, loss: 0.05,"
        " seed: 3}\n  dysfluency: {restarts: 1, seed: 4}\nscript:\n"
        "  - caller: I would like a refund for my headphones please.\n  - agent: Sure.\n"
        "  - caller: Thank you very much.\n    acoustics: {noise: car, snr_db: 5, level_db: 6}\n"
    )
    record = render(load_scenario(tmp_path / "noisy.yaml")).settings["acoustics"]
    fake = fake_bundle(tmp_path / "b", turns=EDGE[:3], seconds=6)
    (fake / "result.json").write_text(json.dumps({"script": {"acoustics": record}}))
    m = read_report(fake, PLOT)
    assert m.conditions == record and not [n for n in m.notes if "result.json" in n]
    dom = build_report(fake)[0].read_text(encoding="utf-8")
    text = visible_text(dom[dom.index('id="caller-line"') :].split("</section>")[0])
    sent = record["snr_db_sent"]
    assert 18 < sent < 25  # the phone band takes the street's low end: higher on the line
    assert (
        f"whole call noise street at 12 dB SNR at the microphone, {sent:g} dB on the line; "
        "room office; telephone g711; 5% of packets lost by chance" in text
    )
    assert "script[2] noise car at 5 dB SNR at the microphone; level +6 dB" in text
    assert "acoustics seed 3" in text
    lost, packets = record["packets"]["lost"], record["packets"]["sent"]
    assert lost > 0 and f"packets lost {lost} of {packets} (" in text
    assert "dysfluency fillers 0, restarts 1, corrections 0, seed 4" in text
    assert f"script[0] said as “{record['spoken_texts']['0']}”" in text
    plain = fake_bundle(tmp_path / "plain", turns=EDGE[:3], seconds=6)
    assert 'id="caller-line"' not in build_report(plain)[0].read_text(encoding="utf-8")
