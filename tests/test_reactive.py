"""The caller's decisions on the agent's words, as plain functions: the same words always give
the same decision, text normalised as WER is; and the scenario keys that ask for them, with a
bad one named in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from turnscope.actors.caller import reactive
from turnscope.actors.caller.scenario import Branch, Condition, Fact
from turnscope.actors.caller.scenario_file import load_scenario
from turnscope.errors import InputError


def test_conditions_match_whole_words_after_normalisation():
    assert reactive.test(Condition(says=["order number"]), "Your ORDER NUMBER, please?")
    assert reactive.test(Condition(says=["order four two seven"]), "Order 427 ships.")
    assert reactive.test(Condition(says=["bye"]), "Goodbye.") is None  # whole words only
    # A compound the ASR split or joined (a CI run heard "Good bye." for "Goodbye.")
    assert reactive.test(Condition(says=["goodbye"]), "You are welcome. Good bye.")
    assert reactive.test(Condition(says=["good bye"]), "Goodbye!")
    assert reactive.test(Condition(says=["goodbye"]), "A good byelaw.") is None
    assert reactive.test(Condition(matches=r"ship(s|ping)"), "It ships today").matched == "ships"
    both = Condition(says=["refund"], matches=r"\d+ day")
    assert reactive.test(both, "A refund within 30 days") is not None
    assert reactive.test(both, "A refund soon") is None


def test_the_first_matching_branch_is_taken_and_the_default_last():
    branches = [
        Branch(caller="It is 427.", when=Condition(says=["order number"])),
        Branch(caller="Ana.", when=Condition(says=["name"])),
        Branch(caller="Sorry?"),
    ]
    assert reactive.choose(branches, "What is your name?")[0] == 1
    assert reactive.choose(branches, "Name and order number?")[0] == 0
    assert reactive.choose(branches, "Hmm.")[0] == 2
    assert reactive.choose(branches[:2], "Hmm.") is None
    # Deterministic: the same words, the same decision, every time.
    assert {reactive.choose(branches, "your name please")[0] for _ in range(20)} == {1}


def test_a_fact_is_asked_for_once_per_turn_and_not_when_the_line_gives_it():
    facts = {"order number": Fact(value="four two seven"), "name": Fact(value="Ana Lopez")}
    assert reactive.fact_asked(facts, "Your name and order number?", set())[0] == "order number"
    assert reactive.fact_asked(facts, "Your name and order number?", {"order number"})[0] == "name"
    assert reactive.fact_asked(facts, "How can I help?", set()) is None
    assert reactive.said_in("four two seven", "It is order 427.")


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("  - caller: hi\n    when: {matches: '(unclosed'}", "not a regular expression"),
        ("  - caller: hi\n    when: {}", "a condition needs says: or matches:"),
        ("  - choose: [{caller: a}, {caller: b, when: {says: [x]}}]", "default branch last"),
        ("  - caller: wait\n    barge_in_at: early\n    when: {says: [x]}", "must answer it"),
        ("  - agent: hi\n    when: {says: [x]}", "when: is for caller lines"),
    ],
)
def test_a_bad_reactive_key_is_one_line_naming_it(tmp_path: Path, body: str, needle: str):
    path = tmp_path / "s.yaml"
    path.write_text(f"name: s\nscript:\n  - agent: Hello.\n{body}\n")
    with pytest.raises(InputError) as err:
        load_scenario(path)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_until_the_goal_needs_a_way_to_tell(tmp_path: Path):
    path = tmp_path / "s.yaml"
    path.write_text("name: s\nuntil: {goal_reached: true}\nscript:\n  - caller: hi\n")
    with pytest.raises(InputError, match=r"goal\.reached_when"):
        load_scenario(path)
