"""load.html from a real load run (two calls to the reference agent): the chart has a latency
axis with ms and s ticks, a time axis, the scenario's budget drawn and labelled, p90 drawn
beside p99 (its own marks on top), and every call's bundle a relative link to its report.html;
headless Chromium draws it (not blank)."""

from __future__ import annotations

import json
import re
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import ROOT, reference_agent, turnscope_exe
from tests.test_pages_split import assert_drawn, colour_pixels, screenshot
from turnscope.load.chart import SERIES
from turnscope.load.html import render
from turnscope.load.report import LoadReport
from turnscope.scoring.voice_wer import voice_label

BUDGET_MS = 900
SCENARIO = f"""
name: pages-load
task: {{budgets: {{max_latency_ms: {BUDGET_MS}}}}}
caller: {{voice: en-us, timeout_s: 30, hangup_after_ms: 300}}
agent: {{voice: en-gb, latency_ms: 500}}
script:
  - caller: Hi, I need help with my order.
  - agent: Sure, what is the number?
  - caller: It is four two seven.
  - agent: Thanks, it ships tomorrow.
"""


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag == "a":
            self.hrefs.append(dict(attrs)["href"])


@pytest.fixture(scope="module")
def load_run(tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("pages-load")
    scenario = tmp / "pages-load.yaml"
    scenario.write_text(SCENARIO)
    out = tmp / "run"
    with reference_agent(scenario) as url:
        proc = subprocess.run(
            [*turnscope_exe(), "load", url, "--scenario", str(scenario), "-o", str(out), "-q",
             "--loopback-only", "--calls", "2", "--rate", "2"],
            capture_output=True, text=True, timeout=240, cwd=ROOT,
        )  # fmt: skip
    # 1: a call failed its verdict (a machine too busy makes the agent late): the page is
    # what is tested here, and it is written either way
    assert proc.returncode in (0, 1) and (out / "load.html").exists(), proc.stdout + proc.stderr
    return out


def test_the_load_chart_has_axes_a_budget_line_and_p90_beside_p99(load_run, tmp_path):
    html = (load_run / "load.html").read_text()
    svg = re.search(r"<svg class=\"chart\".*?</svg>", html, re.S).group(0)
    y = re.search(r'<g class="y-axis">(.*?)</g>', svg, re.S).group(1)
    y_labels = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', y)
    assert y_labels[0] == "0 ms" and all(re.fullmatch(r"[\d.]+ (ms|s)", t) for t in y_labels)
    assert any(t.endswith(" s") for t in y_labels)  # the budget 900 ms: the scale passes 1 s
    assert "reply latency" in y
    x = re.search(r'<g class="x-axis">(.*?)</g>', svg, re.S).group(1)
    x_labels = re.findall(r'<text class="tick"[^>]*>([^<]+)</text>', x)
    assert x_labels[0] == "0 s" and len(x_labels) >= 3 and "time into the run" in x
    budget = re.search(r'<g class="budget" data-budget-ms="(\d+)">(.*?)</g>', svg, re.S)
    assert budget and int(budget.group(1)) == BUDGET_MS
    assert f"budget {BUDGET_MS} ms (the scenario's)" in budget.group(2)
    # p99 first (wide, pale), p90 after it: on top, with marks of its own shape
    order = re.findall(r'<g class="series" data-series="(p\d\d)">', svg)
    assert order.index("p99") < order.index("p90")
    widths = {s.key: s.width for s in SERIES}
    assert widths["p99"] > widths["p90"]
    assert re.search(r'<rect [^>]*data-series="p90"', svg)  # square marks
    assert re.search(r'<circle [^>]*data-series="p99"', svg)
    assert_drawn(screenshot(load_run / "load.html", tmp_path, size="1200,1400"))
    # the chart alone (no legend, no tables): each percentile's colour is on it
    alone = tmp_path / "chart.html"
    alone.write_text(f"<!doctype html><body style='margin:0;background:#fff'>{svg}</body>")
    px = assert_drawn(screenshot(alone, tmp_path, size="800,320"))
    for s in SERIES:
        assert colour_pixels(px, s.colour, 30) > 20, s.key  # p90 not hidden under p99


def test_every_calls_bundle_links_its_report(load_run):
    html = (load_run / "load.html").read_text()
    report = LoadReport.model_validate_json((load_run / "load.json").read_text())
    parser = _Links()
    parser.feed(html)
    reports = [h for h in parser.hrefs if h.endswith("report.html")]
    assert len(reports) == len(report.calls) == 2
    for href in reports:
        assert not href.startswith(("/", "file:")), href  # relative: the folder can move
        assert (load_run / href).is_file(), href


def test_each_caller_voice_is_pooled_over_the_calls(load_run):
    """load.json and load.html: how the project's ASR heard each caller voice, its words over
    every call that used it (each call's own figure in its bundle's result.json)."""
    report = LoadReport.model_validate_json((load_run / "load.json").read_text())
    page = (load_run / "load.html").read_text()
    assert report.voices and all(v.calls == len(report.calls) for v in report.voices)
    for v in report.voices:
        per_call = [x for r in report.calls for x in r.voices if x.voice == v.voice]
        assert v.words == sum(x.words for x in per_call) > 0
        errors = sum(x.wer * x.words for x in per_call)
        assert abs(v.wer - errors / v.words) < 1e-3
        assert f"caller voice {v.voice}: the project's ASR heard it at WER" in page
    for r in report.calls:  # each call's figure is its bundle's, not scored again
        doc = json.loads((load_run / r.bundle / "result.json").read_text())
        voices = [v for v in doc["script"]["voices"] if "asr" in v]
        heard = {voice_label(v): v["asr"]["wer"] for v in voices}
        assert {x.voice: x.wer for x in r.voices} == heard


def test_the_budget_line_is_drawn_whatever_the_replies(load_run):
    """A budget far above every reply still sets the scale (the line is on the chart)."""
    report = LoadReport.model_validate_json((load_run / "load.json").read_text())
    html = render(report, budget_ms=5000, budget_source="test", here=load_run)
    labels = re.findall(r'<g class="y-axis">.*?</g>', html, re.S)[0]
    assert ">5 s<" in labels or ">6 s<" in labels
    assert 'data-budget-ms="5000"' in html


def test_the_page_says_at_a_glance_what_is_over_budget_and_how_the_run_went(load_run):
    """The verdict is coloured as the scorecard's is; a latency over the scenario's budget is a
    red cell (each percentile, each span of the run, each call's median), and nothing is red
    under a budget every reply met; a call's verdict is green or red."""
    report = LoadReport.model_validate_json((load_run / "load.json").read_text())
    tight = render(report, budget_ms=1, budget_source="test", here=load_run)
    loose = render(report, budget_ms=60_000, budget_source="test", here=load_run)
    colour = "void" if report.degraded else "v-fail" if report.verdicts_failed else "pass"
    assert re.search(rf"<p class='v {colour}'>", tight), tight[:2000]
    red = re.findall(r"<td class='fail'>(\d+) ms</td>", tight)
    windows = [w for w in report.latency_over_time if w.latency_ms.n]
    # reply latency's four percentiles, p50/p90/p99 of each span with replies, each call's p50
    assert len(red) >= 4 + 3 * len(windows) + len(report.calls), red
    assert "class='fail'" not in loose and "class='fail l'" not in loose
    verdicts = re.findall(r"<td class='(pass|v-fail) l'>(pass|fail[^<]*)</td>", loose)
    assert len(verdicts) == report.completed, verdicts
    # no barge-in was planned: the line is not flagged, and says nothing of barge-ins
    assert "<p>unanswered caller turns" in loose and "barge-ins planned" not in loose


def test_the_runs_budget_is_kept_and_marked_on_the_page_and_in_the_terminal(load_run, monkeypatch):
    """load.json keeps the budget the replies were held to (the scenario's); load.html draws
    and marks it without being told; the terminal's latency table names it and prints each
    figure over it in red (a figure under it plain)."""
    import io

    from rich.console import Console

    from turnscope.cli import load_latency

    report = LoadReport.model_validate_json((load_run / "load.json").read_text())
    assert (report.latency_budget_ms, report.latency_budget_source) == (BUDGET_MS, "the scenario's")
    page = (load_run / "load.html").read_text()
    assert (
        f'data-budget-ms="{BUDGET_MS}"' in page and f"budget {BUDGET_MS} ms (the scenario" in page
    )
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, color_system="standard", width=120)
    monkeypatch.setattr(load_latency, "out", console)
    report.latency_budget_ms = 1  # every reply over it
    load_latency.latency_tables(report)
    text = screen.getvalue()
    assert "latency (ms; budget 1)" in text
    assert f"\x1b[1;31m{report.latency_ms.p50:.0f}\x1b[0m" in text, text
    screen.truncate(0)
    report.latency_budget_ms = 60_000  # none over it
    load_latency.latency_tables(report)
    assert "\x1b[1;31m" not in screen.getvalue()


def test_report_writes_a_load_runs_page_again_from_load_json(load_run, tmp_path):
    """`turnscope report DIR` of a load run (a page lost, or made by an older version): the
    page again from load.json, the same facts and marks (it said "not a run bundle")."""
    import shutil

    copy = tmp_path / "load-copy"
    shutil.copytree(load_run, copy)
    (copy / "load.html").unlink()
    done = subprocess.run([*turnscope_exe(), "report", str(copy)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == str(copy / "load.html"), done.stderr
    again = (copy / "load.html").read_text()
    assert again == (load_run / "load.html").read_text().replace(str(load_run), str(copy))
    (copy / "load.json").write_text('{"kind": "something else"}')
    done = subprocess.run([*turnscope_exe(), "report", str(copy)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert done.returncode == 2 and "load.json: is not a load run's record" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr


def test_validate_checks_every_calls_bundle_of_a_load_run(load_run, tmp_path):
    """`turnscope validate` of a load run: every call's bundle, a call folder without its
    manifest among the problems (it said "not a voice artifact bundle", exit 1)."""
    import shutil

    done = subprocess.run([*turnscope_exe(), "validate", str(load_run)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{load_run}: all 2 bundles are valid" in done.stdout + done.stderr
    copy = tmp_path / "load-copy"
    shutil.copytree(load_run, copy)
    (copy / "calls" / "call-0002" / "voice_artifact_manifest.json").unlink()
    done = subprocess.run([*turnscope_exe(), "validate", str(copy)], capture_output=True,
                          text=True, timeout=60, cwd=ROOT)  # fmt: skip
    assert done.returncode == 1 and "call-0002" in done.stdout, done.stdout
    assert "1 of 2 bundles has problems" in done.stdout + done.stderr
