"""report.html and timeline.png: a run bundle made readable at a glance, without reading JSON.

``build_report(bundle)`` writes both into the bundle. report.html is one self-contained file
(inline CSS, SVG, audio and one small script; a Content-Security-Policy that forbids fetching
anything): the verdict and degraded evidence first, the four sub-scores with the failing floors,
the call's audio, the timeline of both channels, each reply's latency split, a reacting
caller's decisions, the turn table, the caller's line (noise, room, codec, losses,
dysfluencies), WER with its word alignment, and the continuity metrics. Clicking a turn plays
from it. This module is the page; its sections are verdict.py, turns.py, decisions.py,
caller_line.py and measures.py.
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from turnscope.jsonio import write_bytes, write_text
from turnscope.scoring.evidence.bundle import seal
from turnscope.scoring.report import REPORT
from turnscope.scoring.report.caller_line import caller_line
from turnscope.scoring.report.decisions import conversation
from turnscope.scoring.report.explained import CSS as SPLIT_CSS
from turnscope.scoring.report.explained import breakdown
from turnscope.scoring.report.figure import Figure
from turnscope.scoring.report.legend import header_figure, legend_figure
from turnscope.scoring.report.listen import SEEK, player
from turnscope.scoring.report.markup import e
from turnscope.scoring.report.measures import continuity, wer
from turnscope.scoring.report.model import ReportModel, read_report
from turnscope.scoring.report.png import png_bytes
from turnscope.scoring.report.redrive import redrive
from turnscope.scoring.report.spans import span_lanes
from turnscope.scoring.report.timeline import PLOT, row_figures
from turnscope.scoring.report.turn_taking import turn_taking
from turnscope.scoring.report.turns import timeline, turn_table
from turnscope.scoring.report.verdict import alerts, header, scores

TIMELINE_PNG = "timeline.png"

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:#111827;margin:0;
 background:#f9fafb}
main{max-width:1320px;margin:0 auto;padding:16px 20px 40px}
h1{font-size:20px;margin:4px 0}h2{font-size:16px;margin:26px 0 8px}
.meta{color:#4b5563;font-size:13px}
.box{border-radius:8px;padding:10px 14px;margin:12px 0}
.degraded{background:#fef2f2;border:2px solid #dc2626;color:#7f1d1d}
.degraded strong{font-size:16px}
.warn{background:#fffbeb;border:1px solid #f59e0b}
.note{background:#f3f4f6;border:1px solid #d1d5db}
.verdict{display:flex;gap:18px;align-items:center;flex-wrap:wrap}
.badge{display:inline-block;font-weight:700;border-radius:6px;padding:2px 10px;color:#fff}
.big{font-size:28px;padding:4px 18px}
.pass,.passed,.ok{background:#15803d}.fail,.failed,.bad{background:#dc2626}
.warn-b{background:#d97706}.none,.degraded-b{background:#6b7280}
.cards{display:grid;grid-template-columns:repeat(4,1fr);gap:10px}
.card{background:#fff;border:1px solid #d1d5db;border-radius:8px;padding:10px 12px}
.card.failing{border:2px solid #dc2626;background:#fef2f2}
.card .score{font-size:26px;font-weight:700}
.card .floor{font-size:12px;font-weight:700}
.card.failing .floor{color:#dc2626}.card .why{font-size:12px;color:#374151}
.meter{height:6px;background:#e5e7eb;border-radius:3px;position:relative;margin:4px 0}
.meter i{display:block;height:6px;border-radius:3px;background:#15803d}
.card.failing .meter i{background:#dc2626}
.card.unexercised{border:2px dashed #d97706;background:#fffbeb}
.card.unexercised .floor{color:#b45309}.card.unexercised .meter i{background:#9ca3af}
.meter b{position:absolute;left:75%;top:-3px;width:2px;height:12px;background:#111827}
.scroll{overflow-x:auto;background:#fff;border:1px solid #d1d5db;border-radius:8px;padding:6px 0}
svg{display:block}svg text{font-family:"DejaVu Sans",system-ui,sans-serif}
table{border-collapse:collapse;width:100%;background:#fff;font-size:13px}
th,td{border-bottom:1px solid #e5e7eb;padding:5px 8px;text-align:left;vertical-align:top}
th{background:#f3f4f6}td.t{white-space:nowrap;font-variant-numeric:tabular-nums}
tr.caller td.s{color:#2563eb;font-weight:700}tr.agent td.s{color:#7c3aed;font-weight:700}
tr.backchannel td{color:#92400e;background:#fffbeb}
tr.decision td:first-child,tr.tt-event td:first-child{border-left:3px solid #0d9488}
tr[data-t]{cursor:pointer}
.tag{display:inline-block;border-radius:4px;padding:0 6px;margin:1px 4px 1px 0;font-size:12px;
 color:#fff}
.tag.ok{background:#15803d}.tag.bad{background:#dc2626}.tag.info{background:#6b7280}
.align{background:#fff;border:1px solid #d1d5db;border-radius:8px;padding:8px 12px;
 line-height:1.9}
.align del,.align ins,.align .sub{border-radius:3px;padding:1px 3px}
.align .sub{background:#fef3c7}.align .sub del{background:none;color:#92400e}
.align .sub ins{background:none;color:#1d4ed8;text-decoration:none;font-weight:600}
.align del.d{background:#fee2e2;color:#991b1b}
.align ins.i{background:#dbeafe;color:#1e40af;text-decoration:underline}
.kv td:first-child{color:#374151;width:40%}
"""


def script_hash(script: str) -> str:
    """A CSP source that allows exactly this inline script and no other."""
    digest = hashlib.sha256(script.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


CSP = (
    f"default-src 'none'; style-src 'unsafe-inline'; script-src {script_hash(SEEK)}; "
    "media-src data:; base-uri 'none'; form-action 'none'"
)


def render_html(m: ReportModel, legend: Figure, rows: list[Figure]) -> str:
    """The whole page as one string (the timeline figures are shared with the PNG)."""
    title = f"turnscope · {m.bundle.name} · {(m.verdict or 'no verdict').upper()}"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        # Nothing may be fetched: the report must open the same offline, from any folder. The
        # audio is inline (data:) and the one script is inline too (play from a clicked turn),
        # allowed by its hash alone: markup that escaping missed could never run a script.
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}{SPLIT_CSS}</style></head><body><main>"
        f"{header(m)}{alerts(m)}{scores(m)}{player(m.bundle)}{timeline(m, legend, rows)}"
        f"{breakdown(m)}{span_lanes(m)}{conversation(m)}{redrive(m)}{turn_taking(m)}{turn_table(m)}{caller_line(m)}{wer(m)}{continuity(m)}"
        "</main>"
        f"<script>{SEEK}</script></body></html>\n"
    )


def build_report(bundle: Path) -> list[Path]:
    """Write report.html and timeline.png into a bundle; return their paths.

    Raises InputError when ``bundle`` is not a bundle folder (no manifest, transcript or
    timeline); any optional piece that is missing is shown as missing instead.
    """
    bundle = Path(bundle)
    model = read_report(bundle, PLOT)
    legend, rows = legend_figure(model), row_figures(model)
    page = render_html(model, legend, rows)
    # Atomic writes: a reader never sees half a report.
    html_path = write_text(bundle / REPORT, page)
    figures = [header_figure(model), legend, *rows]
    png_path = write_bytes(bundle / TIMELINE_PNG, png_bytes(figures))
    seal(bundle)  # the manifest's checksums cover the report too
    return [html_path, png_path]
