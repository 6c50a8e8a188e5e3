"""A timeline row's annotation labels that would print over each other, laid out so each reads:
a latency figure shortened to its number, or left to the turn's close-up (which has room);
barge-in and talk-over notes stacked on two lines, or cut short before the next one starts.

Before, a 51 s call's row printed "640 ms" over "687 ms" and "agent #1 talked over caller #0"
over "barge-in #3: agent yielded in 465 ms": text nobody could read at a glance.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from turnscope.scoring.report.figure import Label, Shape

__all__ = ["centred", "declutter", "stacked"]

BOLD_CHAR_W = 0.62  # estimated glyph width per font px of a bold label (svg.py: 0.6 plain)
GAP_PX = 6.0  # the least room between two labels on a line
NOTES = ("barge-in-label", "talk-over-label")  # the labels under the agent lane


def declutter(shapes: Sequence[Shape], note_ys: Sequence[float]) -> list[Shape]:
    """A row's shapes with its latency figures and its notes (on the lines ``note_ys``) laid
    out to be read, drawn last."""
    latency = [s for s in shapes if isinstance(s, Label) and s.mark == "latency-label"]
    notes = [s for s in shapes if isinstance(s, Label) and s.mark in NOTES]
    moved = {id(s) for s in (*latency, *notes)}
    return [
        *(s for s in shapes if id(s) not in moved),
        *centred(latency, lambda text: text.split(" ")[0]),  # "687 ms" -> "687"
        *stacked(notes, note_ys),
    ]


def _extent(label: Label) -> tuple[float, float]:
    w = len(label.text) * label.size * BOLD_CHAR_W
    if label.max_w is not None:
        w = min(w, label.max_w)
    if label.anchor == "middle":
        return label.x - w / 2, label.x + w / 2
    if label.anchor == "end":
        return label.x - w, label.x
    return label.x, label.x + w


def centred(labels: Sequence[Label], short: Callable[[str], str]) -> list[Label]:
    """Labels on one line, in x order: one that would print over the last one kept is
    shortened (``short`` of its text), else left out; unless it is urgent and that one is not:
    then it takes that one's place, whole where it can be (that one stays, shortened, where
    there is room for it)."""
    kept: list[Label] = []
    for label in sorted(labels, key=lambda s: s.x):
        whole, small = label, replace(label, text=short(label.text))
        if _clear(kept, whole):
            kept.append(whole)
        elif label.urgent and not kept[-1].urgent:
            _displace(kept, whole, small, short)
        elif _clear(kept, small):
            kept.append(small)
    return kept


def _displace(kept: list[Label], whole: Label, small: Label, short: Callable[[str], str]) -> None:
    """An urgent label in the last kept one's place (a reply over budget is the figure a
    reader looks for), whole if it can be; that one stays, shortened, if there is room."""
    last = kept.pop()
    fit = whole if _clear(kept, whole) else small if _clear(kept, small) else None
    if fit is None:
        kept.append(last)
        return
    brief = replace(last, text=short(last.text))
    if _clear(kept, brief) and _extent(brief)[1] + GAP_PX <= _extent(fit)[0]:
        kept.append(brief)
    kept.append(fit)


def _clear(kept: Sequence[Label], label: Label) -> bool:
    """Whether ``label`` starts clear of the last label kept."""
    return not kept or _extent(label)[0] >= _extent(kept[-1])[1] + GAP_PX


def stacked(labels: Sequence[Label], line_ys: Sequence[float]) -> list[Label]:
    """Labels that start where their event is, each on the first of ``line_ys`` (baselines)
    where it clears the last label there; where none has room, on the line whose last label
    ends first, that one cut short (with an ellipsis) before this one starts."""
    lines: list[list[Label]] = [[] for _ in line_ys]
    for label in sorted(labels, key=lambda s: s.x):
        ends = [_extent(line[-1])[1] if line else -math.inf for line in lines]
        k = next((i for i, end in enumerate(ends) if label.x >= end + GAP_PX), None)
        if k is None:
            k = min(range(len(lines)), key=lambda i: ends[i])
            last = lines[k][-1]
            lines[k][-1] = replace(last, max_w=max(0.0, label.x - GAP_PX - last.x))
        lines[k].append(replace(label, y=line_ys[k]))
    return [label for line in lines for label in line]
