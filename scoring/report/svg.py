"""A figure as inline SVG for report.html (no xmlns URL needed inside HTML; nothing external)."""

from __future__ import annotations

import html

from turnscope.scoring.report.figure import Figure, Poly, Rect, Stroke

CHAR_W = 0.6  # estimated glyph width per font px, for truncating SVG text to a bar


def fit(text: str, max_w: float | None, size: int) -> str:
    """Text cut (with an ellipsis) to an estimated width; empty when not even a glyph fits."""
    if max_w is None or len(text) * size * CHAR_W <= max_w:
        return text
    n = int(max_w / (size * CHAR_W)) - 1
    return text[:n].rstrip() + "…" if n >= 2 else ""


def _n(v: float) -> str:
    r = round(float(v), 1)
    return str(int(r)) if r == int(r) else str(r)


def _marked(mark: str | None) -> str:
    return f' data-mark="{mark}"' if mark else ""


def _none(mark: str | None) -> str:
    return ""


def _play(at_s: float | None) -> str:
    return f' data-t="{max(0.0, at_s):.2f}"' if at_s is not None else ""


def to_svg(fig: Figure, *, marks: bool = True) -> str:
    """The figure as one <svg> element; ``marks=False`` leaves out the data-mark attributes
    (a close-up repeats what its row already marks)."""
    e = html.escape
    _attr = _marked if marks else _none
    out = [
        f'<svg width="{fig.width}" height="{fig.height}" viewBox="0 0 {fig.width} {fig.height}"'
        f' role="img" aria-label="{e(fig.title or "timeline")}">'
    ]
    for sh in fig.shapes:
        if isinstance(sh, Rect):
            extra = f' fill-opacity="{sh.opacity}"' if sh.opacity < 1 else ""
            extra += f' stroke="{sh.stroke}" stroke-width="2"' if sh.stroke else ""
            body = f"<title>{e(sh.title)}</title></rect>" if sh.title else "</rect>"
            out.append(
                f'<rect x="{_n(sh.x)}" y="{_n(sh.y)}" width="{_n(sh.w)}" height="{_n(sh.h)}"'
                f' fill="{sh.fill}"{extra}{_attr(sh.mark)}{_play(sh.play_s)}>{body}'
            )
        elif isinstance(sh, Stroke):
            dash = ' stroke-dasharray="4 3"' if sh.dash else ""
            out.append(
                f'<line x1="{_n(sh.x1)}" y1="{_n(sh.y1)}" x2="{_n(sh.x2)}" y2="{_n(sh.y2)}"'
                f' stroke="{sh.color}" stroke-width="{_n(sh.width)}"{dash}{_attr(sh.mark)}/>'
            )
        elif isinstance(sh, Poly):
            pts = " ".join(f"{_n(px)},{_n(py)}" for px, py in sh.points)
            op = f' fill-opacity="{sh.opacity}"' if sh.opacity < 1 else ""
            out.append(f'<polygon points="{pts}" fill="{sh.fill}"{op}/>')
        else:
            text = fit(sh.text, sh.max_w, sh.size)
            if not text:
                continue
            weight = ' font-weight="bold"' if sh.bold else ""
            anchor = f' text-anchor="{sh.anchor}"' if sh.anchor != "start" else ""
            out.append(
                f'<text x="{_n(sh.x)}" y="{_n(sh.y)}" font-size="{sh.size}" fill="{sh.color}"'
                f"{anchor}{weight}{_attr(sh.mark)}>{e(text)}</text>"
            )
    out.append("</svg>")
    return "".join(out)
