"""The dialogue in report.html: the timeline figures and the turn table, whose notes render the
verifier's facts (latency pairs, barge-ins and their yield, talk-overs) turn by turn.
"""

from __future__ import annotations

from turnscope.scoring.report.figure import Figure
from turnscope.scoring.report.markup import e, tag
from turnscope.scoring.report.model import ReportModel, seconds_per_row
from turnscope.scoring.report.svg import to_svg
from turnscope.scoring.report.timeline import clock, zoom_figure


def _row_link(m: ReportModel, ms: float) -> str:
    row = int(ms // seconds_per_row(m.duration_ms))
    return f'<a href="#row-{row}">{clock(ms)}</a>'


def timeline(m: ReportModel, legend: Figure, rows: list[Figure]) -> str:
    """The timeline figures as inline SVG, one anchor per row."""
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
    """Turn index -> its tags: latency, barge-in and talk-over, as the verifier paired them."""
    notes: dict[int, list[str]] = {t.index: [] for t in m.turns}
    for g in m.gaps:
        if g.gap_ms < 0:
            text, kind = f"started {-g.gap_ms:.0f} ms before caller #{g.caller} ended", "bad"
        else:
            kind = "ok" if g.ok else "bad"
            over = "" if g.ok else f" > budget {m.max_latency_ms} ms"
            text = f"reply latency {g.gap_ms:.0f} ms after caller #{g.caller}{over}"
        notes[g.agent].append(tag(text, kind))
    gapped = {g.agent for g in m.gaps}
    for t in m.turns:
        if t.speaker == "agent" and t.index not in gapped:
            notes[t.index].append(tag("no caller turn before it: latency not timed", "info"))
    for b in m.barge_ins:
        if b.agent is None:
            notes[b.caller].append(tag("barge-in, but the agent was not speaking", "info"))
            continue
        kind = "ok" if b.ok else "bad"
        verb = "yielded in" if b.ok else "kept talking for"
        notes[b.caller].append(tag(f"barge-in: agent #{b.agent} {verb} {b.yield_ms:.0f} ms", kind))
        notes[b.agent].append(
            tag(f"interrupted by caller #{b.caller}; stopped {b.yield_ms:.0f} ms later", kind)
        )
    for o in m.overlaps:
        if o.kind != "talk_over":
            continue
        harmful = o.agent in m.harmful
        what = "talked over" if harmful else "overlapped (excused by a barge-in)"
        notes[o.agent].append(tag(f"{what} caller #{o.caller}", "bad" if harmful else "info"))
        notes[o.caller].append(
            tag(f"talked over by agent #{o.agent}", "bad" if harmful else "info")
        )
    return notes


MAX_ZOOMS = 200  # a turn's close-up is ~10 kB of SVG: beyond this many, the rows suffice


def _zoom(m: ReportModel, t) -> str:  # type: ignore[no-untyped-def]
    """The turn close up, folded (no script: a details element)."""
    if len(m.turns) > MAX_ZOOMS or m.duration_ms <= 0:
        return ""
    fig = zoom_figure(m, t.start_ms, t.end_ms, t.index)
    return f'<details class="zoom"><summary>zoom</summary>{to_svg(fig, marks=False)}</details>'


def turn_table(m: ReportModel) -> str:
    """Turns and backchannels in time order, each with its notes."""
    if not m.turns and not m.backchannels:
        return '<section id="turns"><h2>Turns</h2><div class="box note">No turns.</div></section>'
    notes = _turn_notes(m)
    rows: list[tuple[float, str]] = []
    for t in m.turns:
        cls = t.speaker if t.speaker in ("caller", "agent") else ""
        rows.append(
            (
                t.start_ms,
                f'<tr class="{cls}" id="turn-{t.index}" data-t="{t.start_ms / 1000:.2f}">'
                f"<td>{t.index}</td>"
                f'<td class="t">{_row_link(m, t.start_ms)}&ndash;{clock(t.end_ms)}</td>'
                f'<td class="s">{e(t.speaker)}</td>'
                # no text: a line the caller sent that the ASR made out no word of
                f"<td>{e(t.text) or tag('no words recognised', 'info')}</td>"
                f"<td>{''.join(notes[t.index])}{_zoom(m, t)}</td></tr>",
            )
        )
    for b in m.backchannels:
        rows.append(
            (
                b.start_ms,
                f'<tr class="backchannel"><td></td>'
                f'<td class="t">{_row_link(m, b.start_ms)}&ndash;{clock(b.end_ms)}</td>'
                f'<td class="s">{e(b.speaker)}</td><td>{e(b.text)}</td>'
                f"<td>{tag('backchannel (not a turn, not scored)', 'info')}</td></tr>",
            )
        )
    rows.sort(key=lambda r: r[0])
    return (
        '<section id="turns"><h2>Turns</h2><table><thead><tr><th>#</th><th>time</th>'
        "<th>speaker</th><th>text</th><th>notes</th></tr></thead><tbody>"
        + "".join(r for _, r in rows)
        + "</tbody></table></section>"
    )
