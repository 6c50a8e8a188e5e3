"""timeline.png: the report's timeline figures drawn with Pillow (no matplotlib, no browser)."""

from __future__ import annotations

import io
from collections.abc import Sequence
from functools import lru_cache

from PIL import Image, ImageDraw, ImageFont

from turnscope.scoring.report.figure import Figure, Label, Poly, Rect, Stroke

_ANCHOR = {"start": "ls", "middle": "ms", "end": "rs"}


@lru_cache(maxsize=16)
def _font(size: int, bold: bool) -> ImageFont.ImageFont | ImageFont.FreeTypeFont:
    # DejaVu is what Debian's Chromium renders the SVG with; Pillow's own font is the fallback.
    for name in ("DejaVuSans-Bold.ttf" if bold else "DejaVuSans.ttf", "DejaVuSans.ttf"):
        try:
            return ImageFont.truetype(name, size)
        except OSError:
            continue
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1 has only the fixed bitmap font
        return ImageFont.load_default()


def _rgba(colour: str, opacity: float = 1.0) -> tuple[int, int, int, int]:
    c = colour.lstrip("#")
    return int(c[0:2], 16), int(c[2:4], 16), int(c[4:6], 16), round(255 * opacity)


def _fit(text: str, max_w: float | None, font) -> str:
    """Cut text to a measured width, with an ellipsis."""
    if max_w is None or font.getlength(text) <= max_w:
        return text
    lo, hi = 0, len(text)
    while lo < hi:  # longest prefix that fits with the ellipsis
        mid = (lo + hi + 1) // 2
        if font.getlength(text[:mid].rstrip() + "…") <= max_w:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo].rstrip() + "…" if lo >= 2 else ""


def _dashed(draw: ImageDraw.ImageDraw, sh: Stroke, fill) -> None:
    length = max(abs(sh.x2 - sh.x1), abs(sh.y2 - sh.y1))
    pos = 0.0
    while pos < length:
        a, b = pos / length, min(pos + 4, length) / length
        draw.line(
            [
                (sh.x1 + (sh.x2 - sh.x1) * a, sh.y1 + (sh.y2 - sh.y1) * a),
                (sh.x1 + (sh.x2 - sh.x1) * b, sh.y1 + (sh.y2 - sh.y1) * b),
            ],
            fill=fill,
            width=round(sh.width),
        )
        pos += 7


def draw_figure(draw: ImageDraw.ImageDraw, fig: Figure, dy: int) -> None:
    """Draw one figure's shapes with its top at ``dy``."""
    for sh in fig.shapes:
        if isinstance(sh, Rect):
            box = [sh.x, sh.y + dy, sh.x + max(sh.w - 1, 0), sh.y + dy + sh.h - 1]
            draw.rectangle(box, fill=_rgba(sh.fill, sh.opacity))
            if sh.stroke:
                draw.rectangle(box, outline=_rgba(sh.stroke), width=2)
        elif isinstance(sh, Stroke):
            fill = _rgba(sh.color)
            if sh.dash:
                _dashed(
                    draw, Stroke(sh.x1, sh.y1 + dy, sh.x2, sh.y2 + dy, sh.color, sh.width), fill
                )
            else:
                pts = [(sh.x1, sh.y1 + dy), (sh.x2, sh.y2 + dy)]
                draw.line(pts, fill=fill, width=round(sh.width))
        elif isinstance(sh, Poly):
            draw.polygon([(x, y + dy) for x, y in sh.points], fill=_rgba(sh.fill, sh.opacity))
        elif isinstance(sh, Label):
            font = _font(sh.size, sh.bold)
            text = _fit(sh.text, sh.max_w, font)
            if text:
                kw = {"anchor": _ANCHOR[sh.anchor]} if hasattr(font, "getbbox") else {}
                draw.text((sh.x, sh.y + dy), text, fill=_rgba(sh.color), font=font, **kw)


def png_bytes(figures: Sequence[Figure]) -> bytes:
    """Stack the figures top to bottom into one PNG."""
    width = max(f.width for f in figures)
    height = sum(f.height for f in figures)
    img = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(img, "RGBA")  # RGBA mode blends translucent fills onto the picture
    dy = 0
    for fig in figures:
        draw_figure(draw, fig, dy)
        dy += fig.height
    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=True)
    return buf.getvalue()
