"""The measures beside the verdict in report.html: WER with its word alignment, and the live
continuity metrics against their thresholds.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from turnscope.scoring.report.markup import bullets, e, fmt
from turnscope.scoring.report.model import ReportModel
from turnscope.scoring.report.reading import number
from turnscope.scoring.voice_wer import counted, heard_at, voice_label


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


def _voice(v: Mapping[str, Any]) -> str:
    """One caller voice and how the project's own ASR heard its lines in this call."""
    asr = v["asr"]
    name = voice_label(v)
    return (
        f'<div class="meta">caller voice {e(name)}: the project\'s ASR '
        f"({e(str(asr.get('model')))}) heard it at "
        f"{heard_at(number(asr.get('wer')), int(number(asr.get('reference_words'))))} in "
        f"{counted(int(number(asr.get('lines'))), 'line')}: what the voice itself may explain "
        "of the agent's misunderstanding</div>"
    )


def wer(m: ReportModel) -> str:
    """Overall and per-channel WER, each channel with its word alignment."""
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
        if ch == "caller":
            parts += [_voice(v) for v in m.voices]
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


def continuity(m: ReportModel) -> str:
    """The continuity status and its metrics with their thresholds."""
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
            limit = f"warn > {fmt(th[f'warn_{tkey}'])}, fail > {fmt(th.get(f'fail_{tkey}'))}"
        rows.append(f"<tr><td>{e(label)}</td><td>{e(fmt(value))}</td><td>{e(limit)}</td></tr>")
    caveats = bullets(c["caveats"]) if c.get("caveats") else ""
    return (
        f'{head}<div>status <span class="badge {cls}" id="continuity-status">{e(status)}</span>'
        f'</div>{caveats}<table class="kv"><thead><tr><th>metric</th><th>value</th>'
        f"<th>thresholds</th></tr></thead><tbody>{''.join(rows)}</tbody></table></section>"
    )
