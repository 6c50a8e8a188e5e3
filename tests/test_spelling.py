"""A key a document does not allow where it stands: its fix (turnscope/spelling.py), on the
scenario model and on a model inside itself (whose paths would never end)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from turnscope.actors.caller.scenario import Scenario
from turnscope.spelling import extra_fix, field_names


class Node(BaseModel):
    model_config = ConfigDict(extra="forbid")
    label: str = ""
    children: list[Node] = []


Node.model_rebuild()


def test_a_misplaced_key_says_where_it_goes_and_a_misspelt_one_the_key_of_its_place():
    keys = field_names(Scenario)
    assert extra_fix(("timeout_s",), keys) == "remove it, or move it under caller"
    assert extra_fix(("caller", "timout_s"), keys) == "remove it, or fix its spelling: 'timeout_s'?"
    assert extra_fix(("facts", "order number", "valeu"), keys) == (
        "remove it, or fix its spelling: 'value'?"
    )
    # spelt close to a key of another place only: that place said
    assert extra_fix(("hangup_after",), keys) == (
        "remove it, or fix its spelling: 'hangup_after_ms' under caller?"
    )
    assert extra_fix(("wibble",), keys) is None


def test_a_model_inside_itself_is_read_to_its_keys_at_every_depth():
    keys = field_names(Node)
    for loc in (("children", 0, "lable"), ("children", 0, "children", 3, "lable")):
        assert extra_fix(loc, keys) == "remove it, or fix its spelling: 'label'?"
