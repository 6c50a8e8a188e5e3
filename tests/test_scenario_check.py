"""`turnscope scenario check`: scenario files checked as a call loads them, no call placed, and
each line shown with the moment the caller says it (the caller's own rule, agent_lines.py)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, turnscope_exe

SHIPPED = sorted((ROOT / "configs" / "scenarios").glob("*.yaml"))

# The guide's script of the caller's lines alone (docs/guide/caller.md), and a script whose
# caller opens and says two lines in a row: the three ways a line at the default trigger waits.
CALLER_ALONE = """
name: opening-hours
until: {agent_says: {says: [goodbye]}}
script:
  - caller: Hi, what are your opening hours?
  - caller: And are you open on Sundays?
    when: {says: [monday, weekdays]}
"""
OPENS = """
name: caller-opens
script:
  - caller: Hi, I need help with my bill.
  - agent: Sure, what is the problem?
  - caller: I was charged twice.
  - caller: For the same order.
  - agent: I am sorry, I will refund one of them.
"""


def test_every_shipped_scenario_is_valid(cli):
    code, out, err = cli("scenario", "check", *map(str, SHIPPED), "-q")
    assert code == 0 and not err, err
    assert out.splitlines()[-1] == f"{len(SHIPPED)} of {len(SHIPPED)} scenarios valid", out
    assert sum(line.startswith("ok  ") for line in out.splitlines()) == len(SHIPPED), out


def test_each_line_says_what_it_waits_for(tmp_path: Path, cli):
    from turnscope.use_cases.scenario_check import check_scenario

    (tmp_path / "alone.yaml").write_text(CALLER_ALONE)
    (tmp_path / "opens.yaml").write_text(OPENS)
    alone = check_scenario(tmp_path / "alone.yaml")
    assert alone.shape.startswith("each caller line answers the agent's turn: the first the "
                                  "greeting"), alone.shape  # fmt: skip
    assert [p.when for p in alone.lines] == [
        "500 ms after the agent's turn ends",
        "500 ms after the agent's turn ends, once the agent says 'monday' or 'weekdays'",
    ]
    assert alone.reactions == ["the caller hangs up when its turn comes once: the agent says "
                               "'goodbye'"]  # fmt: skip
    opens = check_scenario(tmp_path / "opens.yaml")
    assert [(p.speaker, p.when) for p in opens.lines] == [
        ("caller", "500 ms after the call starts"),
        ("agent", "its turn"),
        ("caller", "500 ms after the agent's turn ends"),
        ("caller", "500 ms after script[2] ends"),  # the second of two in a row: said after it
        ("agent", "its turn"),
    ]
    code, out, _ = cli("scenario", "check", str(tmp_path / "opens.yaml"))
    assert code == 0 and "caller-opens: 3 caller lines, 2 agent lines" in out, out


def test_a_bad_file_is_one_line_and_the_rest_are_still_checked(tmp_path: Path, cli):
    (tmp_path / "bad.yaml").write_text("name: x\nscript:\n  - caller: hi\n    timeout_s: 30\n")
    (tmp_path / "good.yaml").write_text(OPENS)
    code, out, err = cli("scenario", "check", str(tmp_path / "bad.yaml"),
                         str(tmp_path / "good.yaml"), str(tmp_path / "none.yaml"))  # fmt: skip
    assert code == 2, (out, err)
    errors = err.strip().splitlines()
    assert len(errors) == 2 and "Traceback" not in err, err
    assert errors[0].startswith(f"turnscope: error: {tmp_path / 'bad.yaml'}: script[0]"), err
    assert "timeout_s" in errors[0] and str(tmp_path / "none.yaml") in errors[1], err
    assert "caller-opens" in out and out.splitlines()[-1] == "1 of 3 scenarios valid", out
    # a suite given for a scenario (the README writes both side by side) says what it is
    suite = ROOT / "configs" / "suites" / "voice_starter.json"
    code, _, err = cli("scenario", "check", str(suite))
    assert code == 2 and "not a scenario: its kind is 'agent-learning.bench-suite.v1'" in err, err
    assert "fixture.audio" in err, err


@pytest.mark.skipif(sys.platform == "win32", reason="a POSIX terminal")
def test_the_page_fits_a_narrow_terminal(tmp_path: Path):
    """At a terminal 80 columns wide every line's number, speaker and moment are shown whole;
    a long agent line is cut to its first words, never the times."""
    from tests.pty_run import run_in_pty

    shown = run_in_pty([*turnscope_exe(), "scenario", "check", "refund-call"], cwd=tmp_path,
                       cols=80, deadline_s=60)  # fmt: skip
    assert shown.code == 0, shown.screen
    screen = shown.screen
    assert "barge-in, 6200 ms into the" in screen and "agent's turn" in screen, screen
    rows = re.findall(r"^ *(\d) +(agent|caller) ", screen, re.M)
    assert [int(k) for k, _ in rows] == list(range(9)), screen
    assert screen.count("its turn") == 5 and "1 of 1 scenario valid" in screen, screen
