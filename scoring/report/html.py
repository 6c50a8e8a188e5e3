"""report.html and timeline.png: a run bundle made readable at a glance, without reading JSON.

``build_report(bundle)`` writes both into the bundle. report.html is one self-contained file
(inline CSS and SVG, no script, a Content-Security-Policy that forbids fetching anything): the
verdict and degraded evidence first, the four sub-scores with the failing floors, the timeline of
both channels, the turn table, WER with its word alignment, and the continuity metrics.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from turnscope.jsonio import write_bytes, write_text
from turnscope.scoring.evidence.bundle import seal
from turnscope.scoring.report.model import ReportModel, load_model, number, seconds_per_row
from turnscope.scoring.report.png import png_bytes
from turnscope.scoring.report.timeline import (
    PLOT,
    Figure,
    clock,
    header_figure,
    legend_figure,
    row_figures,
    to_svg,
)
from turnscope.scoring.verifier import BARGE_IN_YIELD_MS, COMPONENTS, PASS_FLOOR

REPORT = "report.html"
TIMELINE_PNG = "timeline.png"

e = html.escape

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


# --- small helpers -----------------------------------------------------------------------------


def _tag(text: str, kind: str) -> str:
    return f'<span class="tag {kind}">{e(text)}</span>'


def _list(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{e(str(i))}</li>" for i in items) + "</ul>"


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.4g}" if abs(v) < 10 else f"{v:.1f}"
    return "-" if v is None else str(v)


def _row_link(m: ReportModel, ms: float) -> str:
    row = int(ms // seconds_per_row(m.duration_ms))
    return f'<a href="#row-{row}">{clock(ms)}</a>'


# --- sections ----------------------------------------------------------------------------------


def _header(m: ReportModel) -> str:
    src = m.run.get("source") or {}
    task = m.run.get("task") or {}
    producer = m.run.get("producer") or {}
    counts = m.run.get("counts") or {}
    bits = [f"{clock(m.duration_ms)} of call"]
    if src.get("description"):
        bits.append(str(src["description"]))
    if m.run.get("evidence_class"):
        bits.append(f"evidence: {m.run['evidence_class']}")
    if task.get("task_id"):
        bits.append(f"task {task.get('suite') or ''}/{task['task_id']}")
    if (producer.get("asr") or {}).get("model"):
        bits.append(f"ASR {producer['asr']['model']}")
    if counts:
        bits.append(
            f"{counts.get('turns', len(m.turns))} turns, {counts.get('barge_ins', 0)} barge-ins, "
            f"{counts.get('backchannels', len(m.backchannels))} backchannels"
        )
    return (
        f"<h1>turnscope report: {e(m.bundle.name)}</h1>"
        f'<div class="meta">{e(" · ".join(bits))}</div>'
        f'<div class="meta">{e(str(m.bundle.resolve()))}</div>'
    )


def _alerts(m: ReportModel) -> str:
    out = []
    if m.degraded:
        out.append(
            '<div class="box degraded" id="degraded"><strong>DEGRADED EVIDENCE</strong>: this '
            "run's audio or timing cannot be fully trusted, so read its verdict with care."
            f"{_list(m.degraded)}</div>"
        )
    if m.warnings:
        out.append(f'<div class="box warn"><strong>Warnings</strong>{_list(m.warnings)}</div>')
    if m.notes:
        out.append(
            '<div class="box note"><strong>Not shown (missing or unreadable)</strong>'
            f"{_list(m.notes)}</div>"
        )
    return "".join(out)


def _why(m: ReportModel, name: str) -> str:
    """One line saying where a sub-score comes from, in the verifier's own terms."""
    if name == "latency":
        ok = sum(g.ok for g in m.gaps)
        if not m.gaps:
            return "no agent turn followed a caller turn"
        return f"{ok} of {len(m.gaps)} agent replies within {m.max_latency_ms} ms"
    if name == "turn_taking":
        agents = sum(t.speaker == "agent" for t in m.turns)
        return f"{len(m.harmful)} of {agents} agent turns talked over the caller"
    if name == "barge_in":
        scored = [b for b in m.barge_ins if b.ok is not None]
        if not scored:
            return "no barge-in overlapped agent speech"
        ok = sum(bool(b.ok) for b in scored)
        return f"{ok} of {len(scored)} barge-ins: agent stopped within {BARGE_IN_YIELD_MS} ms"
    if not m.required_content:
        return "no required content"
    spoken = " ".join(t.text for t in m.turns if t.speaker == "agent").lower()
    found = [f"{k} {'found' if k.lower() in spoken else 'MISSING'}" for k in m.required_content]
    return "required: " + ", ".join(found)


_VERDICT = {"pass": ("PASS", "pass"), "fail": ("FAIL", "fail"), "error": ("ERROR", "fail")}


def _scores(m: ReportModel) -> str:
    result = m.verifier.get("result") or {}
    comps = result.get("components") or {}
    label, cls = _VERDICT.get(str(m.verdict or "").lower(), ("NO VERDICT", "none"))
    scalar = result.get("scalar")
    said = [f"scalar {float(scalar):.3f}"] if scalar is not None else []
    if result.get("explanation"):
        said.append(str(result["explanation"]))
    lines = [
        '<section id="verdict"><div class="verdict">',
        f'<span class="badge big {cls}" id="verdict-badge">{label}</span><div>',
    ]
    if m.error:
        lines.append(f'<div><strong style="color:#dc2626">{e(m.error)}</strong></div>')
    if said:
        lines.append(f"<div>{e(' · '.join(said))}</div>")
    for failure in m.failures:
        lines.append(f'<div><strong style="color:#dc2626">{e(failure)}</strong></div>')
    if m.failed_floors:
        failed = ", ".join(m.failed_floors)
        lines.append(f'<div><strong style="color:#dc2626">failed floor: {e(failed)}</strong></div>')
    elif comps:
        lines.append(f"<div>every sub-score at or above the {PASS_FLOOR} floor</div>")
    lines.append("</div></div>")
    if not comps:
        why = "the run was not scored" if m.error else "the verifier had no turns to score"
        lines.append(f'<div class="box note">No sub-scores: {why}.</div>')
        return "".join([*lines, "</section>"])
    lines.append('<div class="cards">')
    for name in COMPONENTS:
        if name not in comps:
            continue
        value = number(comps[name])
        met = (result.get("pass_fail") or {}).get(f"{name}_floor", value >= PASS_FLOOR)
        cls = "card" if met else "card failing"
        floor = f"floor {PASS_FLOOR}: met" if met else f"FAILING FLOOR (below {PASS_FLOOR})"
        why = _why(m, name)
        evidence = m.exercise.get(name)
        if evidence is not None and not evidence.exercised:
            # The verifier's vacuous score: shown, but never as a tested pass.
            cls, floor = "card unexercised", "NOT EXERCISED"
            why = evidence.note()
        elif evidence is not None and evidence.note():
            why = f"{why}; {evidence.note()}"
        lines.append(
            f'<div class="{cls}" data-component="{name}"><div>{e(name)}</div>'
            f'<div class="score">{value:.3f}</div>'
            f'<div class="meter"><i style="width:{max(0.0, min(1.0, value)) * 100:.0f}%"></i>'
            f'<b></b></div><div class="floor">{floor}</div>'
            f'<div class="why">{e(why)}</div></div>'
        )
    return "".join([*lines, "</div></section>"])


def _timeline(m: ReportModel, legend: Figure, rows: list[Figure]) -> str:
    if m.duration_ms <= 0:
        return (
            '<section id="timeline"><h2>Timeline</h2><div class="box note">No audio was '
            "captured on either channel: nothing to draw.</div></section>"
        )
    parts = [to_svg(legend)]
    for fig in rows:
        parts.append(f'<div id="{fig.id}">{to_svg(fig)}</div>')
    return (
        '<section id="timeline"><h2>Timeline</h2><div class="meta">Both channels on one clock: '
        "waveform envelopes, VAD voiced spans, turns (hover for the full text), overlaps, "
        f"barge-ins and reply latency. {len(rows)} row{'s' if len(rows) > 1 else ''}.</div>"
        f'<div class="scroll">{"".join(parts)}</div></section>'
    )


def _turn_notes(m: ReportModel) -> dict[int, list[str]]:
    notes: dict[int, list[str]] = {t.index: [] for t in m.turns}
    for g in m.gaps:
        if g.gap_ms < 0:
            text, kind = f"started {-g.gap_ms:.0f} ms before caller #{g.caller} ended", "bad"
        else:
            kind = "ok" if g.ok else "bad"
            over = "" if g.ok else f" > budget {m.max_latency_ms} ms"
            text = f"reply latency {g.gap_ms:.0f} ms after caller #{g.caller}{over}"
        notes[g.agent].append(_tag(text, kind))
    gapped = {g.agent for g in m.gaps}
    for t in m.turns:
        if t.speaker == "agent" and t.index not in gapped:
            notes[t.index].append(_tag("no caller turn before it: latency not timed", "info"))
    for b in m.barge_ins:
        if b.agent is None:
            notes[b.caller].append(_tag("barge-in, but the agent was not speaking", "info"))
            continue
        kind = "ok" if b.ok else "bad"
        verb = "yielded in" if b.ok else "kept talking for"
        notes[b.caller].append(_tag(f"barge-in: agent #{b.agent} {verb} {b.yield_ms:.0f} ms", kind))
        notes[b.agent].append(
            _tag(f"interrupted by caller #{b.caller}; stopped {b.yield_ms:.0f} ms later", kind)
        )
    for o in m.overlaps:
        if o.kind != "talk_over":
            continue
        harmful = o.agent in m.harmful
        what = "talked over" if harmful else "overlapped (excused by a barge-in)"
        notes[o.agent].append(_tag(f"{what} caller #{o.caller}", "bad" if harmful else "info"))
        notes[o.caller].append(
            _tag(f"talked over by agent #{o.agent}", "bad" if harmful else "info")
        )
    return notes


def _turn_table(m: ReportModel) -> str:
    if not m.turns and not m.backchannels:
        return '<section id="turns"><h2>Turns</h2><div class="box note">No turns.</div></section>'
    notes = _turn_notes(m)
    rows: list[tuple[float, str]] = []
    for t in m.turns:
        cls = t.speaker if t.speaker in ("caller", "agent") else ""
        rows.append(
            (
                t.start_ms,
                f'<tr class="{cls}" id="turn-{t.index}"><td>{t.index}</td>'
                f'<td class="t">{_row_link(m, t.start_ms)}&ndash;{clock(t.end_ms)}</td>'
                f'<td class="s">{e(t.speaker)}</td><td>{e(t.text)}</td>'
                f"<td>{''.join(notes[t.index])}</td></tr>",
            )
        )
    for b in m.backchannels:
        rows.append(
            (
                b.start_ms,
                f'<tr class="backchannel"><td></td>'
                f'<td class="t">{_row_link(m, b.start_ms)}&ndash;{clock(b.end_ms)}</td>'
                f'<td class="s">{e(b.speaker)}</td><td>{e(b.text)}</td>'
                f"<td>{_tag('backchannel (not a turn, not scored)', 'info')}</td></tr>",
            )
        )
    rows.sort(key=lambda r: r[0])
    return (
        '<section id="turns"><h2>Turns</h2><table><thead><tr><th>#</th><th>time</th>'
        "<th>speaker</th><th>text</th><th>notes</th></tr></thead><tbody>"
        + "".join(r for _, r in rows)
        + "</tbody></table></section>"
    )


def _alignment(ops: Iterable[Mapping[str, Any]]) -> str:
    out = []
    for op in ops:
        ref = " ".join(str(w) for w in op.get("ref") or [])
        hyp = " ".join(str(w) for w in op.get("hyp") or [])
        kind = op.get("op")
        if kind == "equal":
            out.append(e(hyp or ref))
        elif kind == "substitute":
            out.append(
                f'<span class="sub" title="heard instead of the reference">'
                f"<del>{e(ref)}</del> <ins>{e(hyp)}</ins></span>"
            )
        elif kind == "delete":
            out.append(
                f'<del class="d" title="deleted: in the reference, not heard">{e(ref)}</del>'
            )
        elif kind == "insert":
            out.append(
                f'<ins class="i" title="inserted: heard, not in the reference">{e(hyp)}</ins>'
            )
    return " ".join(out)


def _wer(m: ReportModel) -> str:
    head = '<section id="wer"><h2>Word error rate</h2>'
    if not isinstance(m.wer, Mapping):
        return head + (
            '<div class="box note">WER not measured: this run had no reference texts '
            "(pass --reference, or a scenario with scripted lines).</div></section>"
        )

    def line(name: str, s: Mapping[str, Any]) -> str:
        w = s.get("wer")
        pct = "-" if w is None else f"{number(w) * 100:.1f}%"
        n = {k: int(number(s.get(k))) for k in ("substitutions", "deletions", "insertions")}
        return (
            f"<div><strong>{e(name)} WER {pct}</strong> ({n['substitutions']} substituted, "
            f"{n['deletions']} deleted, {n['insertions']} inserted, "
            f"{int(number(s.get('reference_words')))} reference words)</div>"
        )

    parts = [head]
    if isinstance(m.wer.get("overall"), Mapping):
        parts.append(line("overall", m.wer["overall"]))
    parts.append(
        '<div class="meta">Legend: <span class="align" style="padding:0;border:0">'
        '<span class="sub"><del>reference</del> <ins>heard</ins></span> substituted, '
        '<del class="d">word</del> deleted, <ins class="i">word</ins> inserted</span> '
        f"(after {e(str(m.wer.get('normaliser') or 'normalisation'))})</div>"
    )
    for ch, s in (m.wer.get("per_channel") or {}).items():
        if not isinstance(s, Mapping):
            continue
        parts.append(f'<div style="margin-top:12px">{line(ch, s)}</div>')
        if s.get("alignment"):
            parts.append(
                f'<div class="align" data-channel="{e(ch)}">{_alignment(s["alignment"])}</div>'
            )
    return "".join([*parts, "</section>"])


_METRICS = {
    "speech_start_count": ("caller speech starts", None),
    "speech_stop_count": ("caller speech stops", None),
    "output_event_count": ("agent outputs (turns)", None),
    "speech_no_output_count": ("caller turns never answered", None),
    "speech_no_output_ratio": ("share never answered", "no_output_ratio"),
    "speech_start_during_output_count": ("caller started while the agent spoke", None),
    "median_first_audio_ms": ("median first-audio latency (ms)", None),
    "p90_first_audio_ms": ("p90 first-audio latency (ms)", "p90_first_audio_ms"),
    "max_output_gap_ms": ("longest silence inside an agent turn (ms)", "max_output_gap_ms"),
    "median_output_gap_ms": ("median silence inside agent turns (ms)", None),
    "evidence_status": ("evidence", None),
}


def _continuity(m: ReportModel) -> str:
    c = m.continuity
    head = '<section id="continuity"><h2>Live continuity</h2>'
    if not c:
        return head + '<div class="box note">No continuity report in this bundle.</div></section>'
    status = str(c.get("status") or "unknown")
    cls = {"passed": "passed", "failed": "failed", "warn": "warn-b"}.get(status, "degraded-b")
    th = c.get("thresholds") or {}
    rows = []
    for key, value in (c.get("metrics") or {}).items():
        label, tkey = _METRICS.get(key, (key, None))
        limit = ""
        if tkey and f"warn_{tkey}" in th:
            limit = f"warn > {_fmt(th[f'warn_{tkey}'])}, fail > {_fmt(th.get(f'fail_{tkey}'))}"
        rows.append(f"<tr><td>{e(label)}</td><td>{e(_fmt(value))}</td><td>{e(limit)}</td></tr>")
    caveats = _list(c["caveats"]) if c.get("caveats") else ""
    return (
        f'{head}<div>status <span class="badge {cls}" id="continuity-status">{e(status)}</span>'
        f'</div>{caveats}<table class="kv"><thead><tr><th>metric</th><th>value</th>'
        f"<th>thresholds</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )


def render_html(m: ReportModel, legend: Figure, rows: list[Figure]) -> str:
    """The whole page as one string (the timeline figures are shared with the PNG)."""
    title = f"turnscope · {m.bundle.name} · {(m.verdict or 'no verdict').upper()}"
    return (
        "<!doctype html><html lang=en><head><meta charset=utf-8>"
        # Nothing may be fetched: the report must open the same offline, from any folder.
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{e(title)}</title><style>{CSS}</style></head><body><main>"
        f"{_header(m)}{_alerts(m)}{_scores(m)}{_timeline(m, legend, rows)}{_turn_table(m)}{_wer(m)}"
        f"{_continuity(m)}</main></body></html>\n"
    )


def build_report(bundle: Path) -> list[Path]:
    """Write report.html and timeline.png into a bundle; return their paths.

    Raises InputError when ``bundle`` is not a bundle folder (no manifest, transcript or
    timeline); any optional piece that is missing is shown as missing instead.
    """
    bundle = Path(bundle)
    model = load_model(bundle, PLOT)
    legend, rows = legend_figure(model), row_figures(model)
    page = render_html(model, legend, rows)
    # Atomic writes: a reader never sees half a report.
    html_path = write_text(bundle / REPORT, page)
    figures = [header_figure(model), legend, *rows]
    png_path = write_bytes(bundle / TIMELINE_PNG, png_bytes(figures))
    seal(bundle)  # the manifest's checksums cover the report too
    return [html_path, png_path]
