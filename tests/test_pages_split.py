"""report.html's latency split from a real replay of the sample call (the agent's log read back
with --agent-trace): the bars have a scale in ms and s and the budget as a marker on each bar;
headless Chromium draws the page (not blank). Also the screenshot helper the other page tests
use."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from tests.conftest import ROOT
from turnscope.scoring.report.axis import ms_label, nice_step, ticks

CALL = ROOT / "recordings" / "refund-call.wav"


def chromium_exe() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser")
    if exe is None and Path("/usr/bin/chromium").exists():
        exe = "/usr/bin/chromium"
    if exe is None:
        pytest.skip("headless Chromium is not installed (./scripts/setup.sh --dev installs it)")
    return exe


def screenshot(page: Path, tmp: Path, *, size: str = "1300,1600", scroll_to: str = "") -> Path:
    """``page`` drawn by headless Chromium (offline) into a PNG; ``scroll_to``: an element id
    brought to the top first (a copy of the page with a fragment link)."""
    png = tmp / f"{page.stem}.png"
    url = page.resolve().as_uri() + (f"#{scroll_to}" if scroll_to else "")
    proc = subprocess.run(
        [
            chromium_exe(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            f"--user-data-dir={tmp / 'chromium-profile'}", f"--window-size={size}",
            "--hide-scrollbars", f"--screenshot={png}", url,
        ],
        capture_output=True, text=True, timeout=90,
    )  # fmt: skip
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
    return png


def assert_drawn(png: Path, box: tuple[int, int, int, int] | None = None) -> np.ndarray:
    """The PNG is not empty and not a blank page: its pixels vary, and many are not the page's
    background. ``box``: the part to look at (left, top, right, bottom)."""
    assert png.stat().st_size > 5_000
    img = Image.open(png).convert("RGB")
    if box is not None:
        img = img.crop(box)
    px = np.asarray(img).astype(float)
    grey = px.mean(axis=2)
    assert grey.std() > 8.0, grey.std()
    background = np.median(px.reshape(-1, 3), axis=0)
    inked = (np.abs(px - background).sum(axis=2) > 60).mean()
    assert inked > 0.01, inked
    return px


def colour_pixels(px: np.ndarray, hex_colour: str, tol: int = 40) -> int:
    rgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=float)
    return int((np.abs(px - rgb).sum(axis=2) < tol).sum())


def test_axis_ticks_are_round_and_labelled_in_ms_and_s():
    assert nice_step(1300) == 500 and ticks(1300) == [0, 500, 1000, 1500]
    assert ticks(42, 6) == [0, 10, 20, 30, 40, 50]
    assert [ms_label(v) for v in (0, 250, 1000, 1500)] == ["0 ms", "250 ms", "1 s", "1.5 s"]


@pytest.fixture(scope="module")
def split_bundle(sample_bundle, tmp_path_factory) -> Path:
    """The sample call replayed with an agent log saying when it decided the caller had
    finished and when it began to speak (half the gap each, 120 ms of delivery)."""
    from turnscope.cli.main import main

    tmp = tmp_path_factory.mktemp("split")
    turns = json.loads((sample_bundle / "transcript.json").read_text())["turns"]
    lines, base = [], 5000.0
    for prev, t in itertools.pairwise(turns):
        if t["speaker"] == "agent" and prev["speaker"] == "caller":
            gap = t["start_ms"] - prev["end_ms"]
            decided = prev["end_ms"] + (gap - 120) / 2
            began = t["start_ms"] - 120
            lines.append({"monotonic": base + decided / 1000, "event": "user-stopped-speaking"})
            lines.append({"monotonic": base + began / 1000, "event": "bot-started-speaking"})
    trace = tmp / "agent.jsonl"
    trace.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    out = tmp / "replay"
    code = main(["replay", str(CALL), "-q", "-o", str(out), "--agent-trace", str(trace)])
    assert code in (0, 1)
    return out


def _section(html: str) -> str:
    found = re.search(r'<section id="latency">.*?</section>', html, re.S)
    assert found, "no latency section"
    return found.group(0)


def test_the_split_bars_have_a_scale_and_the_budget_marked(split_bundle, tmp_path):
    result = json.loads((split_bundle / "result.json").read_text())
    replies = [r for r in result["latency_breakdown"]["replies"] if "missing" not in r]
    assert len(replies) >= 2
    budget = result["verifier"]["raw"]["max_latency_ms"]
    section = _section((split_bundle / "report.html").read_text())
    labels = re.findall(r'<span class="tick[^"]*" style="left:([\d.]+)%">([^<]+)</span>', section)
    assert [text for _, text in labels][:2] == ["0 ms", "500 ms"]
    assert any(text.endswith(" s") for _, text in labels)  # a second and up read in s
    assert float(labels[-1][0]) == 100.0
    top = ticks(max(max(r["latency_ms"] for r in replies), budget) * 1.05)[-1]
    marks = re.findall(r'class="budget-mark" style="left:([\d.]+)%"', section)
    assert len(marks) == len(replies)
    assert all(float(m) == pytest.approx(100 * budget / top, abs=0.01) for m in marks)
    assert f"budget {budget} ms" in section
    # each bar's parts on the same scale: their widths sum to the latency over the scale's top
    for bar in re.findall(r'<div class="split"[^>]*>(.*?)</div>', section)[: len(replies)]:
        widths = [float(w) for w in re.findall(r"width:([\d.]+)%", bar)]
        assert 0 < sum(widths) < 100 * budget / top + 1e-6  # these replies are within budget
    png = screenshot(split_bundle / "report.html", tmp_path, size="1300,3600")
    px = assert_drawn(png)
    assert colour_pixels(px, "#c53030", 60) > 50  # the dashed budget marks are drawn
