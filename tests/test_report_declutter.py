"""The timeline's annotation labels never print over each other: a crowded row's latency
figures are shortened or left to the turn's close-up, its barge-in and talk-over notes stacked
on two lines or cut short (scoring/report/declutter.py). Before, a real 51 s call's row printed
"640 ms" over "687 ms" and "agent #1 talked over caller #0" over "barge-in #3: agent yielded
in 465 ms"."""

from __future__ import annotations

from dataclasses import replace
from itertools import pairwise

from tests.test_report import EDGE, fake_bundle
from turnscope.scoring.report.declutter import GAP_PX, NOTES, _extent, centred, stacked
from turnscope.scoring.report.figure import Label
from turnscope.scoring.report.model import read_report
from turnscope.scoring.report.timeline import NOTE_Y, PLOT, row_figures, zoom_figure

MARKS = ("latency-label", *NOTES)


def _label(x: float, text: str, anchor: str = "start") -> Label:
    return Label(x, NOTE_Y[0], text, "#000", 10, anchor, bold=True, mark=NOTES[0])


def test_centred_labels_are_shortened_then_left_out_where_they_would_meet():
    labels = [_label(100, "640 ms", "middle"), _label(135, "687 ms", "middle"),
              _label(150, "690 ms", "middle"), _label(400, "1500 ms > 1200", "middle")]  # fmt: skip
    kept = centred(labels, lambda text: text.split(" ")[0])
    assert [x.text for x in kept] == ["640 ms", "687", "1500 ms > 1200"]


def test_stacked_notes_take_the_second_line_then_cut_the_one_that_ends_first():
    notes = [_label(0, "agent #1 talked over caller #0"), _label(90, "barge-in #3: agent yielded"),
             _label(150, "barge-in #5: agent yielded"), _label(600, "far")]  # fmt: skip
    laid = stacked(notes, NOTE_Y)
    where = {x.text: (x.y, x.max_w) for x in laid}
    assert where["agent #1 talked over caller #0"] == (NOTE_Y[0], 150 - GAP_PX)
    assert where["barge-in #3: agent yielded"] == (NOTE_Y[1], None)
    assert where["barge-in #5: agent yielded"] == (NOTE_Y[0], None)
    assert where["far"] == (NOTE_Y[0], None)


def test_a_crowded_calls_rows_print_no_label_over_another_and_lose_no_latency(tmp_path):
    m = read_report(fake_bundle(tmp_path / "edge", turns=EDGE, seconds=13), PLOT)
    shown = set()
    for fig in row_figures(m):
        labels = [s for s in fig.shapes if isinstance(s, Label) and s.mark in MARKS]
        assert labels
        for y in {x.y for x in labels}:
            line = sorted((x for x in labels if x.y == y), key=lambda x: _extent(x)[0])
            for a, b in pairwise(line):
                assert _extent(a)[1] + GAP_PX <= _extent(b)[0] + 0.01, (a, b)
        shown |= {x.text.split(" ")[0] for x in labels if x.mark == "latency-label"}
    # a latency left out of the row is in its agent turn's close-up
    for g in m.gaps:
        if str(g.gap_ms) not in shown:
            t = m.turns[g.agent]
            zoom = zoom_figure(m, t.start_ms, t.end_ms, g.agent)
            texts = [s.text for s in zoom.shapes if isinstance(s, Label)]
            assert any(x.split(" ")[0] == str(g.gap_ms) for x in texts), (g, texts)


def test_a_reply_over_budget_takes_the_place_of_a_figure_within_it():
    """Of two latency figures that would meet, the one over budget is never left out (a long
    call's row printed "395 ms" and left the 3326 ms reply beside it a bare red line)."""
    ok, over = _label(100, "395 ms", "middle"), _label(150, "3326 ms > 1200", "middle")
    kept = centred([ok, replace(over, urgent=True)], lambda text: text.split(" ")[0])
    assert [x.text for x in kept] == ["3326 ms > 1200"]
    near = replace(ok, x=85)  # room for the figure within budget, shortened, before it
    kept = centred([near, replace(over, urgent=True)], lambda text: text.split(" ")[0])
    assert [x.text for x in kept] == ["395", "3326 ms > 1200"]
    both = centred([replace(ok, urgent=True), replace(over, urgent=True)], lambda t: t)
    assert [x.text for x in both] == ["395 ms"]  # two over budget: the first, as before
