"""The look the table pages share (the scorecard page, load.html): one stylesheet, so a red
cell, a green verdict and an amber "not exercised" mean the same thing on each."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["TABLE_CSS", "Mark"]

TABLE_CSS = """
body{font:14px system-ui,sans-serif;margin:2em;max-width:1200px}
table{border-collapse:collapse;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:4px 8px;text-align:right}th{background:#f4f4f4}
td.l,th.l{text-align:left}.d{display:block;font-size:12px}
.fail{background:#fdd;color:#9b1c1c;font-weight:bold}.worse{background:#fff0f0}
.worse .d,.fail .d{color:#c53030}.better .d{color:#2f855a}.better{background:#f0fff4}
.note{background:#fff7e0;color:#7a5a00}.pass{color:#2f855a;font-weight:bold}
.void{color:#7a5a00;font-weight:bold}.v-fail{color:#c53030;font-weight:bold}
.meta{color:#555}
"""


class Mark(StrEnum):
    """What a cell or line says at a glance, as TABLE_CSS colours it."""

    FAIL = "fail"  # red ground: over a budget, below a floor
    NOTE = "note"  # amber ground: not exercised, degraded, late
    PASS = "pass"  # green text
    FAILED = "v-fail"  # red text: a verdict that failed
    VOID = "void"  # amber text: a verdict that cannot be trusted
