"""The scorecard page from real benches (two replays of the sample call): the suite's name and
version, every task (tags, verdict, dimensions, WER or "not measured", a link to its
report.html), the pinned baseline with what changed per cell (red when worse, never green for a
regression), the gate's own thresholds; headless Chromium draws it (not blank)."""

from __future__ import annotations

import copy
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.test_pages_split import assert_drawn, colour_pixels, screenshot
from turnscope.cli.main import main
from turnscope.cli.render import scorecard_html, write_scorecard_page
from turnscope.scoring.suites.gate import DEFAULT_FLOORS, DEFAULT_TOLERANCE
from turnscope.scoring.suites.scorecard_page import BASELINE_BESIDE, direction

CALL = ROOT / "recordings" / "refund-call.wav"
REFERENCE = ROOT / "recordings" / "refund-call.reference.json"


def _suite(path: Path, slow_budget: int | None = None) -> Path:
    """Two recorded fixtures replaying the sample call: ``clean`` with its WER reference,
    ``bare`` without one (WER not measured); ``slow_budget``: bare's latency budget."""
    bare = {"source": "recorded", "audio": str(CALL), "wer": False, "tags": ["speaker"]}
    tasks = [
        {"id": "clean", "fixture": {"source": "recorded", "audio": str(CALL),
                                    "references": str(REFERENCE), "tags": ["acoustic"]}},
        {"id": "bare", "fixture": bare,
         **({"budgets": {"max_latency_ms": slow_budget}} if slow_budget else {})},
    ]  # fmt: skip
    suite = {"kind": "agent-learning.bench-suite.v1", "control": "voice", "modality": "voice",
             "name": "pages", "version": "3", "tasks": tasks}  # fmt: skip
    path.write_text(json.dumps(suite))
    return path


class _Page(HTMLParser):
    """Cells of the tasks table by task, the tag cells' classes, the links."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: dict[str, list[tuple[str, str]]] = {}
        self.hrefs: list[str] = []
        self._task: str | None = None
        self._cls: str | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "tr":
            self._task = a.get("data-task")
            if self._task:
                self.rows[self._task] = []
        elif tag == "td" and self._task:
            self._cls = a.get("class") or ""
            self.rows[self._task].append((self._cls, ""))
        elif tag == "a":
            self.hrefs.append(a["href"])

    def handle_data(self, data):
        if self._task and self.rows[self._task]:
            cls, text = self.rows[self._task][-1]
            self.rows[self._task][-1] = (cls, text + data)


def _parse(html: str) -> _Page:
    p = _Page()
    p.feed(html)
    return p


def _tag_cell(html: str, tag: str, column: int) -> tuple[str, str]:
    """(class, text) of a tag row's cell (0: scored/void, then the dimensions)."""
    row = re.search(rf"<tr><th class='l'>{tag}</th>(.*?)</tr>", html, re.S).group(1)
    cells = re.findall(r"<td class='([^']*)'[^>]*>(.*?)</td>", row)
    if column == 0:
        return "", re.search(r"<td>([^<]*)</td>", row).group(1)
    return cells[column - 1]


@pytest.fixture(scope="module")
def benches(tmp_path_factory) -> dict:
    """Bench 1 (as recorded) pinned as the baseline; bench 2 with ``bare``'s budget cut to
    100 ms (its agent too slow now), gated against it."""
    root = tmp_path_factory.mktemp("pages-scorecard")
    baseline = root / "baseline.json"
    first = _suite(root / "suite.json")
    code = main(["bench", str(first), "-o", str(root / "one" / "bench.json"),
                 "--runs", str(root / "one" / "runs"), "-q"])  # fmt: skip
    assert code == 0
    card_one = root / "one" / "bench.scorecard.json"
    assert main(["gate", str(card_one), "--baseline", str(baseline), "--update-baseline"]) == 0
    second = _suite(root / "suite2.json", slow_budget=100)
    code = main(["bench", str(second), "-o", str(root / "two" / "bench.json"),
                 "--runs", str(root / "two" / "runs"), "-q", "--no-fail"])  # fmt: skip
    assert code == 0
    card_two = root / "two" / "bench.scorecard.json"
    before = (root / "two" / "bench.scorecard.html").read_text()
    gate_code = main(["gate", str(card_two), "--baseline", str(baseline)])
    return {"root": root, "one": card_one, "two": card_two, "baseline": baseline,
            "before_gate": before, "gate_code": gate_code}  # fmt: skip


def test_the_page_shows_the_suite_every_task_and_links_their_reports(benches):
    html = benches["one"].with_suffix(".html").read_text()
    assert "<h1>Scorecard: pages <span class='version'>v3</span></h1>" in html
    page = _parse(html)
    assert set(page.rows) == {"clean", "bare"}
    clean, bare = page.rows["clean"], page.rows["bare"]
    assert [c[1] for c in clean[:3]] == ["clean", "acoustic", "pass"]
    assert [c[1] for c in bare[:3]] == ["bare", "speaker", "pass"]
    card = json.loads(benches["one"].read_text())
    dims = {t["task_id"]: t["dims"] for t in card["tasks"]}
    assert f"{dims['clean']['latency']:.3f}" in [c[1] for c in clean]
    assert f"{dims['clean']['wer']:.3f}" in [c[1] for c in clean]  # measured
    assert "not measured" in [c[1] for c in bare]  # WER without a reference
    reports = [h for h in page.hrefs if h.endswith("report.html")]
    assert sorted(reports) == ["runs/bare/report.html", "runs/clean/report.html"]
    for href in reports:
        assert (benches["one"].parent / href).is_file()
    # the thresholds are the gate's own, not numbers of the page's
    assert f"latency floor {DEFAULT_FLOORS['latency']:g}" in html
    assert f"wer ceiling {DEFAULT_FLOORS['wer']:g}" in html
    assert f"more than {DEFAULT_TOLERANCE:g} fails" in html
    assert "No baseline" in html
    assert card["voices"] == {} and "Caller voices" not in html  # replays: no caller voice


def test_caller_voices_are_shown_per_tag_and_a_broken_entry_is_a_dash(benches):
    card = json.loads(benches["one"].read_text())
    card["voices"] = {
        "all": [{"voice": "piper joe-us", "wer": 0.0417, "words": 48, "calls": 2},
                {"voice": "<b>", "wer": "x", "words": None, "calls": 1}],
        "acoustic": "not a list",
    }  # fmt: skip
    html = scorecard_html(card)
    assert "<th class='l'>all</th><td class='l'>piper joe-us</td><td>0.042</td><td>48</td>" in html
    assert "<td class='l'>&lt;b&gt;</td><td>-</td><td>-</td><td>1</td>" in html
    card["voices"] = ["not", "a", "mapping"]
    assert "Caller voices" not in scorecard_html(card)


def test_the_gate_draws_the_baseline_and_a_regression_in_red(benches, tmp_path):
    assert benches["gate_code"] == 1
    assert "No baseline" in benches["before_gate"]  # bench alone: nothing pinned beside it
    html = benches["two"].with_suffix(".html").read_text()
    assert f"Baseline: {benches['baseline']}" in html
    card = json.loads(benches["two"].read_text())
    dims = card["dimensions"]
    cls, text = _tag_cell(html, "speaker", 1 + dims.index("latency"))
    assert cls == "fail" and "was 1.000" in text and "-1.000" in text, (cls, text)
    cls, text = _tag_cell(html, "acoustic", 1 + dims.index("latency"))
    assert cls == "same" and "was 1.000" in text
    bare = _parse(html).rows["bare"]
    assert ("l v-fail", "fail") in bare
    assert any("verdict fail" in text for _, text in bare)  # why, as the gate says it
    png = screenshot(benches["two"].with_suffix(".html"), tmp_path, size="1300,900")
    px = assert_drawn(png)
    assert colour_pixels(px, "#ffdddd", 12) > 500  # the failing cells' red


def test_a_regression_within_the_tolerance_is_red_never_green(benches):
    base = json.loads(benches["one"].read_text())
    assert direction("latency", 0.833, 1.0) == "worse" and direction("wer", 0.2, 0.1) == "worse"
    assert direction("wer", 0.1, 0.2) == "better"
    for value, expected in ((0.833, "fail"), (0.98, "worse"), (1.0, "same")):
        card = copy.deepcopy(base)
        for tag in card["tags"]:
            card["tags"][tag]["latency"] = value
        html = scorecard_html(card, baseline=base)
        cls, _ = _tag_cell(html, "acoustic", 1 + card["dimensions"].index("latency"))
        assert cls == expected, (value, cls)
    worse = copy.deepcopy(base)
    for tag in worse["tags"]:
        worse["tags"][tag]["latency"] = 0.9
    cls, _ = _tag_cell(scorecard_html(base, baseline=worse), "acoustic", 1)
    assert cls == "better"


def test_a_baseline_pinned_beside_the_scorecard_is_shown(benches, tmp_path):
    folder = tmp_path / "beside"
    shutil.copytree(benches["two"].parent, folder)
    shutil.copy(benches["baseline"], folder / BASELINE_BESIDE)
    card_path = folder / benches["two"].name
    page = write_scorecard_page(card_path, json.loads(card_path.read_text()))
    html = page.read_text()
    assert "Baseline:" in html and BASELINE_BESIDE in html and "class='fail'" in html
    assert all((folder / h).is_file() for h in _parse(html).hrefs if h.endswith(".html"))
    (folder / BASELINE_BESIDE).write_text("{not json")  # broken: the page says no baseline
    assert (
        "No baseline"
        in write_scorecard_page(card_path, json.loads(card_path.read_text())).read_text()
    )
