"""The scorecard's per-tag turn-taking block where people read it (issue 32): the scorecard page
and `turnscope bench`'s terminal (a rich table on a terminal, plain aligned lines when piped);
a metric no scored task of a tag exercised reads "not exercised", never 0 or a pass; the gate's
failures (a limit, a regression, a metric the baseline had and this run lost) show red."""

from __future__ import annotations

import io
import re

from rich.console import Console

from turnscope.cli.turn_taking_table import print_turn_taking
from turnscope.scoring.suites.scorecard import TaskScores, scorecard
from turnscope.scoring.suites.scorecard_page import page
from turnscope.scoring.suites.turn_taking_gate import task_metrics
from turnscope.scoring.suites.turn_taking_view import NONE_EXERCISED, State, rows

DIMS = {"latency": 1.0, "turn_taking": 1.0, "barge_in": 1.0, "content": 1.0}


def _card():
    """Two tags: ``pauses`` exercised pause handling and smooth turn-taking, ``noisy``
    exercised only smooth turn-taking (no barge-in, backchannel or pause anywhere there)."""
    paused = {
        "conditions": {
            "pause_handling": {"events": 2, "takeovers": 1, "tor": 0.5},
            "smooth_turn_taking": {"events": 4, "tor": 1.0, "latency_ms": 420.0},
        },
        "pause_talk_over_ms": 640.0,
    }
    plain = {"conditions": {"smooth_turn_taking": {"events": 3, "tor": 1.0, "latency_ms": 380.0}}}
    return scorecard(
        [
            TaskScores("a", ["pauses"], "pass", DIMS, turn_taking=task_metrics(paused)),
            TaskScores("b", ["noisy"], "pass", DIMS, turn_taking=task_metrics(plain)),
        ]
    )


def _cells(html: str, metric: str) -> list[tuple[str, str]]:
    """(class, text) of a metric row's tag cells on the page."""
    row = re.search(rf"<tr data-metric='{metric}'>(.*?)</tr>", html, re.S).group(1)
    tds = re.findall(r"<td class='([^']*)'[^>]*>(.*?)</td>", row, re.S)
    return [(cls, re.sub(r"<[^>]+>", " ", text).strip()) for cls, text in tds[2:]]


def test_the_page_shows_each_metric_per_tag_and_not_exercised():
    html = page(_card())
    assert "<h2 id='turn-taking'>Turn-taking</h2>" in html
    # Tags in the scorecard's order: noisy, pauses, all.
    assert _cells(html, "pause_tor") == [
        ("note", "not exercised"),
        ("", "0.500 1 of 1 tasks"),
        ("", "0.500 1 of 2 tasks"),
    ]
    assert _cells(html, "takeover_latency_ms")[2] == ("", "400 ms 2 of 2 tasks")
    for metric in ("t_stop_ms", "interruption_tor", "backchannel_false_yield"):
        assert {c for c, _ in _cells(html, metric)} == {"note"}
        assert {t for _, t in _cells(html, metric)} == {"not exercised"}


def test_the_page_marks_the_gates_failures():
    """Against a baseline: pause TOR 0.0 -> 0.5 is worse than the tolerance (red, "was 0.000");
    t_stop the baseline measured and this run did not exercise fails as not exercised."""
    card = _card()
    base = {**card, "turn_taking": {"all": {"pause_tor": 0.0, "t_stop_ms": 300.0}}}
    html = page(card, baseline=base)
    cls, text = _cells(html, "pause_tor")[2]
    assert cls == "fail" and "was 0.000" in text
    assert "worse than the baseline" in html
    assert _cells(html, "t_stop_ms")[2] == ("fail", "not exercised")
    assert "t_stop_ms not exercised in this run" in html


def test_the_terminal_table_rich_on_a_terminal_plain_when_piped():
    card = _card()
    piped = io.StringIO()
    print_turn_taking(Console(file=piped, force_terminal=False, width=200), card)
    lines = piped.getvalue().splitlines()
    assert lines[1].split() == ["metric", "better", "noisy", "pauses", "all"]
    by_metric = {line.split()[0]: line for line in lines[2:]}
    assert by_metric["pause_tor"].split() == ["pause_tor", "lower", "not", "exercised", "0.500",
                                              "0.500"]  # fmt: skip
    assert by_metric["pause_talk_over_ms"].endswith("640 ms")
    assert "\x1b[" not in piped.getvalue() and "┃" not in piped.getvalue()
    term = io.StringIO()
    print_turn_taking(Console(file=term, force_terminal=True, width=160), card)
    shown = term.getvalue()
    assert "┃" in shown and "\x1b[" in shown  # a table, in colour
    assert "pause TOR" in shown and "not exercised" in shown


def test_a_terminal_too_narrow_for_the_tables_gets_a_line_per_row_no_word_broken():
    """An 80-column terminal and the shipped audio suite's seven tags broke every word of bench's
    tables ('exercis' / 'ed', 'adversari' / 'al'); a terminal that fits them keeps the tables."""
    from turnscope.cli.narrow import print_scorecard

    tags = ("acoustic", "adversarial", "complexity", "conversational", "language", "speaker")
    card = scorecard([TaskScores(f"t{k}", [t], "pass", DIMS) for k, t in enumerate(tags)])
    narrow = io.StringIO()
    console = Console(file=narrow, force_terminal=True, width=80, color_system=None)
    print_scorecard(console, card)  # its turn-taking block: none, as the card has none
    print_turn_taking(console, _card())
    text = narrow.getvalue()
    assert "┃" not in text and "adversarial  1 scored, 0 void: latency" in text
    words = set(re.findall(r"[a-z_]+", text))
    assert not words & {"exercis", "adversari", "conversat", "ed", "al"}, words
    assert "pause TOR (took the floor at a caller pause)  pause_tor, lower is better" in text
    assert "pauses 0.500 · all 0.500; not exercised: noisy" in " ".join(text.split())
    wide = io.StringIO()
    console = Console(file=wide, force_terminal=True, width=200, color_system=None)
    print_scorecard(console, card)
    print_turn_taking(console, _card())
    assert wide.getvalue().count("┃ tag ") == 1 and "┃ metric " in wide.getvalue()


def test_nothing_exercised_is_one_line_and_an_old_scorecard_shows_nothing():
    card = scorecard([TaskScores("a", ["x"], "pass", DIMS, turn_taking={})])
    assert all(c.state is State.NOT_EXERCISED for r in rows(card) for c in r.cells)
    out = io.StringIO()
    print_turn_taking(Console(file=out, force_terminal=False, width=200), card)
    assert out.getvalue().strip() == NONE_EXERCISED
    assert NONE_EXERCISED in page(card)
    old = {k: v for k, v in card.items() if k != "turn_taking"}
    assert rows(old) == [] and "id='turn-taking'" not in page(old)
