"""The caller's decisions in report.html: the goal, the facts given, the outcome as the caller saw
it, and a table of every decision (when, clickable to play from the agent turn it heard; what the
agent said; the condition and the words it matched on; what the caller did). A caller that did not
react shows no section."""

from __future__ import annotations

from turnscope.scoring.conversation import DecisionKind, OutcomeSource
from turnscope.scoring.report.conversation import ConversationView
from turnscope.scoring.report.markup import e, fmt, tag
from turnscope.scoring.report.model import ReportModel, seconds_per_row
from turnscope.scoring.report.timeline import clock

KIND = {
    DecisionKind.WHEN: "waited for the agent",
    DecisionKind.CHOOSE: "branch",
    DecisionKind.FACT: "fact asked for",
    DecisionKind.GOAL: "goal",
    DecisionKind.UNTIL: "ended the call",
}
FROM = {
    OutcomeSource.AGENT: "the agent's own outcome",
    OutcomeSource.CALLER: "the caller's side (the agent reported no outcome)",
}


def _summary(v: ConversationView) -> str:
    rows = []
    if v.goal is not None:
        reached = tag("reached", "ok") if v.goal_reached else tag("not reached", "bad")
        o = v.outcome
        after = f" after {o.goal_turns} agent turn(s)" if o and o.goal_turns is not None else ""
        rows.append(("goal", f"{e(v.goal or '(no description)')} {reached}{e(after)}"))
    given = ", ".join(f"{name} ({n}x)" for name, n in v.facts_given.items())
    rows.append(("facts given when asked", e(given or "none")))
    o = v.outcome
    if o is not None:
        rows.append(("facts never asked for", e(", ".join(o.missing) or "none")))
        rows.append(("the agent asked for something", e("yes" if o.clarified else "no")))
    if v.ended_early:
        rows.append(("the caller ended the call", e(v.ended_early)))
    if o is not None and o.dimensions:
        dims = " ".join(
            tag(f"{d} {fmt(x)}", "ok" if x >= 1 else "bad") for d, x in o.dimensions.items()
        )
        source = FROM[o.dimensions_from] if o.dimensions_from else ""
        rows.append(("outcome dimensions", f"{dims} {e('from ' + source if source else '')}"))
    body = "".join(f"<tr><td>{e(k)}</td><td>{v_}</td></tr>" for k, v_ in rows)
    return f'<table class="kv">{body}</table>'


def _cues(v: ConversationView) -> str:
    """The lines that cut in on the agent's words, with how late after the cue they went out."""
    if not v.cues:
        return ""
    rows = "".join(
        f'<tr data-t="{c.sent_ms / 1000:.2f}"><td class="t">{clock(c.sent_ms)}</td>'
        f"<td>{e(c.text)}</td><td>{e(c.spoken_as.replace('_', '-'))}</td><td>{e(c.cue)}</td>"
        f"<td>{e(c.heard)}</td><td>{'' if c.lag_ms is None else f'{c.lag_ms:.0f} ms'}</td>"
        "</tr>"
        for c in v.cues
    )
    return (
        "<h3>Cut in on the agent's words</h3><table><thead><tr><th>sent</th><th>the caller"
        "</th><th>as</th><th>cue</th><th>heard (partial transcript)</th><th>cue to audio out"
        f"</th></tr></thead><tbody>{rows}</tbody></table>"
    )


def _llm(v: ConversationView) -> str:
    """Every action of the caller's LLM."""
    if not v.llm_turns:
        return ""
    rows = "".join(
        f'<tr data-t="{t.heard_ms / 1000:.2f}"><td class="t">{clock(t.heard_ms)}</td>'
        f"<td>{e(t.heard)}{' ...' if t.mid_turn else ''}</td><td>{e(t.action)}</td>"
        f"<td>{e(t.text)}</td><td>{e(t.source)}</td>"
        f"<td>{'' if t.latency_ms is None else f'{t.latency_ms:.0f} ms'}</td></tr>"
        for t in v.llm_turns
    )
    return (
        "<h3>The caller's LLM</h3><table><thead><tr><th>heard until</th><th>the agent said"
        "</th><th>action</th><th>the caller</th><th>source</th><th>LLM time</th></tr></thead>"
        f"<tbody>{rows}</tbody></table>"
    )


def conversation(m: ReportModel) -> str:
    """The section, or nothing for a call whose caller did not react."""
    v = m.conversation
    if v is None:
        return ""
    row_ms = seconds_per_row(m.duration_ms)
    rows = []
    for i, d in enumerate(v.decisions):
        dd = d.decision
        matched = f" on {tag(dd.matched, 'info')}" if dd.matched else ""
        rows.append(
            f'<tr class="decision" id="decision-{i}" data-t="{d.play_ms / 1000:.2f}">'
            f'<td class="t"><a href="#row-{int(d.at_ms // row_ms)}">{clock(d.at_ms)}</a></td>'
            f"<td>{e(KIND[d.kind])}</td><td>{e(dd.heard)}</td>"
            f"<td>{e(d.condition)}{matched}</td><td>{e(dd.outcome)}</td></tr>"
        )
    table = (
        "<table><thead><tr><th>time</th><th>decision</th><th>the agent said</th>"
        "<th>condition, matched on</th><th>the caller</th></tr></thead>"
        f"<tbody>{''.join(rows)}</tbody></table>"
        if rows
        else '<div class="box note">The caller took no decision on the agent\'s words.</div>'
    )
    return (
        '<section id="conversation"><h2>The caller\'s decisions</h2><div class="meta">What the '
        "scripted caller made of the agent's words, as transcribed live. Click a decision to "
        f"play from the agent turn it heard.</div>{_summary(v)}{table}{_cues(v)}{_llm(v)}"
        "</section>"
    )
