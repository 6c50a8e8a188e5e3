"""The top of report.html: what was run, alerts (degraded evidence, warnings, what could not be
shown), the verdict and the four sub-score cards, each with the verifier's facts behind it.
"""

from __future__ import annotations

from turnscope.scoring.report.markup import bullets, e
from turnscope.scoring.report.model import ReportModel
from turnscope.scoring.report.reading import number
from turnscope.scoring.report.timeline import clock
from turnscope.scoring.verifier import BARGE_IN_YIELD_MS, COMPONENTS, PASS_FLOOR


def header(m: ReportModel) -> str:
    """The title and one line of what was run (source, evidence, task, ASR, counts)."""
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


def alerts(m: ReportModel) -> str:
    """Degraded evidence, warnings, and what could not be shown."""
    out = []
    if m.degraded:
        out.append(
            '<div class="box degraded" id="degraded"><strong>DEGRADED EVIDENCE</strong>: this '
            "run's audio or timing cannot be fully trusted, so read its verdict with care."
            f"{bullets(m.degraded)}</div>"
        )
    if m.warnings:
        out.append(f'<div class="box warn"><strong>Warnings</strong>{bullets(m.warnings)}</div>')
    if m.notes:
        out.append(
            '<div class="box note"><strong>Not shown (missing or unreadable)</strong>'
            f"{bullets(m.notes)}</div>"
        )
    return "".join(out)


def _why(m: ReportModel, name: str) -> str:
    """One line saying where a sub-score comes from, in the verifier's own terms (its facts)."""
    f = m.facts
    if name == "latency":
        if not f.gaps:
            return "no agent turn followed a caller turn"
        ok = sum(g.ok for g in f.gaps)
        return f"{ok} of {len(f.gaps)} agent replies within {f.max_latency_ms} ms"
    if name == "turn_taking":
        return f"{len(f.harmful)} of {f.agent_turns} agent turns talked over the caller"
    if name == "barge_in":
        if not f.barge_ins:
            return "no barge-in overlapped agent speech"
        ok = sum(bool(b.handled) for b in f.barge_ins)
        return f"{ok} of {len(f.barge_ins)} barge-ins: agent stopped within {BARGE_IN_YIELD_MS} ms"
    if not m.required_content:
        return "no required content"
    found = [f"{k} {'found' if k in f.keywords_found else 'MISSING'}" for k in m.required_content]
    return "required: " + ", ".join(found)


_VERDICT = {"pass": ("PASS", "pass"), "fail": ("FAIL", "fail"), "error": ("ERROR", "fail")}


def scores(m: ReportModel) -> str:
    """The verdict badge, why it failed, and one card per sub-score against its floor."""
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
