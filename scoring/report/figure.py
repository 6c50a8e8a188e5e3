"""The timeline picture as drawing primitives: laid out once (timeline.py) and rendered twice,
as inline SVG for report.html (svg.py) and with Pillow for timeline.png (png.py).
"""

from __future__ import annotations

from dataclasses import dataclass, field

TEXT = "#111827"  # the default text colour


@dataclass(frozen=True)
class Rect:
    x: float
    y: float
    w: float
    h: float
    fill: str
    opacity: float = 1.0
    stroke: str | None = None
    title: str | None = None
    mark: str | None = None
    play_s: float | None = None  # report.html plays the call from here when it is clicked


@dataclass(frozen=True)
class Stroke:
    x1: float
    y1: float
    x2: float
    y2: float
    color: str
    width: float = 1.0
    dash: bool = False
    mark: str | None = None


@dataclass(frozen=True)
class Poly:
    points: tuple[tuple[float, float], ...]
    fill: str
    opacity: float = 1.0


@dataclass(frozen=True)
class Label:
    x: float
    y: float  # baseline
    text: str
    color: str = TEXT
    size: int = 11
    anchor: str = "start"  # start | middle | end
    bold: bool = False
    max_w: float | None = None
    mark: str | None = None
    urgent: bool = False  # wins its place over a label that is not (a reply over budget)


Shape = Rect | Stroke | Poly | Label


@dataclass
class Figure:
    width: int
    height: int
    shapes: list[Shape] = field(default_factory=list)
    id: str | None = None
    title: str = ""
