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


def _ms(v: float | None) -> str:
    return "" if v is None else f"{v:.0f} ms"


def _timed_table(title: str, head: tuple[str, ...], rows: list[tuple[float, list[str]]]) -> str:
    """A table whose rows play from their time (the first column); nothing without rows.
    ``rows``: (call ms, the other cells, already escaped)."""
    if not rows:
        return ""
    body = "".join(
        f'<tr data-t="{at / 1000:.2f}"><td class="t">{clock(at)}</td>'
        + "".join(f"<td>{c}</td>" for c in cells)
        + "</tr>"
        for at, cells in rows
    )
    th = "".join(f"<th>{e(h)}</th>" for h in head)
    return f"<h3>{e(title)}</h3><table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _cues(v: ConversationView) -> str:
    """The lines that cut in on the agent's words, with how late after the cue they went out."""
    rows = [
        (
            c.sent_ms,
            [e(c.text), e(c.spoken_as.replace("_", "-")), e(c.cue), e(c.heard), _ms(c.lag_ms)],
        )
        for c in v.cues
    ]
    head = ("sent", "the caller", "as", "cue", "heard (partial transcript)", "cue to audio out")
    return _timed_table("Cut in on the agent's words", head, rows)


def _llm(v: ConversationView) -> str:
    """Every action of the caller's LLM."""
    rows = [
        (
            t.heard_ms,
            [
                e(t.heard) + (" ..." if t.mid_turn else ""),
                e(t.action),
                e(t.text),
                e(t.source),
                _ms(t.latency_ms),
            ],
        )
        for t in v.llm_turns
    ]
    head = ("heard until", "the agent said", "action", "the caller", "source", "LLM time")
    return _timed_table("The caller's LLM", head, rows)


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
