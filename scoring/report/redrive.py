"""report.html's re-drive section: a call placed with a scenario made from a recorded call
(``turnscope scenario from-recording``) set beside that call: latencies, the caller's reply
gaps, barge-ins, what the agent said (scoring/redrive.py pairs them). result.json's
``script.recorded`` names the recorded call's bundle; a bundle that is gone is said, not
failed on."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from turnscope.scoring.evidence.documents import Transcript
from turnscope.scoring.evidence.results import ResultDocument
from turnscope.scoring.redrive import Comparison, Pair, compare, median_abs
from turnscope.scoring.report.markup import e, tag
from turnscope.scoring.report.model import ReportModel
from turnscope.scoring.report.reading import read_document

# A difference within this is "the same" (the live path's own jitter: benchmarks/redrive.py).
SAME_MS = 30.0


def recorded_turns(bundle: Path) -> list[dict[str, Any]] | None:
    """The recorded call's turns (the verifier's shape), or None when its bundle is not there."""
    path = bundle / "transcript.json"
    if not path.is_file():
        return None
    doc = read_document(Transcript, path, [])
    return [
        {"speaker": t.speaker, "start_ms": t.start_ms, "end_ms": t.end_ms, "text": t.text,
         "interrupt": t.interrupt}
        for t in doc.turns
    ]  # fmt: skip


def _ms(x: float | None, sign: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.0f} ms" if sign else f"{x:.0f} ms"


def _rows(name: str, pairs: Sequence[Pair]) -> str:
    if not pairs:
        return ""
    rows = "".join(
        f'<tr><td class="t">{p.index + 1}</td><td class="t">{_ms(p.recorded)}</td>'
        f'<td class="t">{_ms(p.new)}</td><td class="t">{_ms(p.diff, sign=True)}</td></tr>'
        for p in pairs
    )
    med = median_abs(pairs)
    summary = "" if med is None else f" (median |difference| {med:.0f} ms)"
    return (
        f"<h3>{e(name)}{e(summary)}</h3><table><thead><tr><th>#</th><th>recorded</th>"
        f"<th>this call</th><th>difference</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _said(c: Comparison) -> str:
    rows = "".join(
        f'<tr><td class="t">{s.index + 1}</td><td>{e(s.recorded)}</td><td>{e(s.new)}</td>'
        f"<td>{tag('same', 'ok') if s.same else tag('differs', 'info')}</td></tr>"
        for s in c.said
    )
    return (
        "<h3>What the agent said</h3><table><thead><tr><th>#</th><th>recorded</th>"
        f"<th>this call</th><th></th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _headline(c: Comparison) -> str:
    med, shift = c.latency_median_abs_diff_ms, c.latency_median_diff_ms
    if med is None or shift is None:
        return tag("no reply timed on both calls", "info")
    kind = "ok" if med <= SAME_MS else "bad"
    word = "as recorded" if med <= SAME_MS else ("later" if shift > 0 else "sooner")
    return tag(f"latency {word}: median |difference| {med:.0f} ms, shift {shift:+.0f} ms", kind)


def redrive(m: ReportModel) -> str:
    """The section, or nothing when the call re-drove no recorded call."""
    found = read_document(ResultDocument, m.bundle / "result.json", []).script
    script = found.model_dump(mode="json", exclude_unset=True) if found is not None else {}
    rec = script.get("recorded")
    if not isinstance(rec, dict):
        return ""
    where = f"the recording {rec.get('recording') or '?'}"
    bundle = Path(str(rec["bundle"])) if rec.get("bundle") else None
    old = recorded_turns(bundle) if bundle is not None else None
    head = (
        '<section id="redrive"><h2>Beside the recorded call</h2><div class="meta">The caller '
        f"of {e(where)} re-driven: its own clips, spoken when it spoke them; what differs is "
        "the agent. Paired in order (the k-th reply of each).</div>"
    )
    if old is None:
        return (
            f'{head}<div class="box warn">The recorded call\'s bundle '
            f"({e(str(bundle) if bundle else 'not named')}) is not there: nothing to compare "
            "with.</div></section>"
        )
    new = [
        {"speaker": t.speaker, "start_ms": t.start_ms, "end_ms": t.end_ms, "text": t.text,
         "interrupt": t.interrupt}
        for t in m.turns
    ]  # fmt: skip
    c = compare(old, new)
    counts = "".join(
        f"<tr><td>{e(k)}</td><td>{a}</td><td>{b}</td></tr>" for k, (a, b) in c.counts.items()
    )
    return (
        f'{head}<div class="meta">{e(str(bundle))}</div><p>{_headline(c)}</p>'
        f'<table class="kv"><thead><tr><th></th><th>recorded</th><th>this call</th></tr>'
        f"</thead><tbody>{counts}</tbody></table>"
        f"{_rows('Reply latency (the caller stops, the agent starts)', c.latencies)}"
        f"{_rows('The caller reply gap (the agent stops, the caller starts)', c.caller_gaps)}"
        f"{_rows('Barge-ins: how long the agent went on', c.barge_in_yields)}"
        f"{_said(c)}</section>"
    )
