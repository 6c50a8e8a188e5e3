"""Small HTML pieces every section of report.html uses (all text goes through ``e``)."""

from __future__ import annotations

import html
from collections.abc import Iterable
from typing import Any

e = html.escape


def tag(text: str, kind: str) -> str:
    return f'<span class="tag {kind}">{e(text)}</span>'


def bullets(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{e(str(i))}</li>" for i in items) + "</ul>"


def fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 10 else f"{v:.1f}"
    return "-" if v is None else str(v)
