"""The scorecard page (``*.scorecard.html``): the suite, every tag's means against their floors
and the baseline (what changed, red when worse), and every task with its verdict, dimensions and
a link to its report.html.

Floors, the WER ceiling and the tolerance are the gate's own (scoring/suites/gate.py), and the
colours follow the gate's judgement: a cell the gate fails is red, a move the wrong way within
the tolerance is red too (never green: a regression is never shown as fine).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from turnscope.scoring.exercise import NOT_EXERCISED
from turnscope.scoring.report.table_page import TABLE_CSS
from turnscope.scoring.suites.gate import (
    DEFAULT_FLOORS,
    DEFAULT_TOLERANCE,
    Cell,
    gate,
    is_number,
    task_checks,
    task_floors,
    worse_by,
)
from turnscope.scoring.suites.scorecard import LOWER_IS_BETTER, VERIFIER_DIMS
from turnscope.scoring.suites.turn_taking_view import NONE_EXERCISED, State, exercised_any, rows

BASELINE_BESIDE = "baseline.scorecard.json"  # a baseline pinned next to the scorecard
EPSILON = 1e-9
NOT_MEASURED = "not measured"


def scorecard_note(card: Mapping[str, Any], tag: str, dim: str) -> str:
    """What a scorecard cell says instead of a number: "not measured" (WER without ASR),
    "not exercised" (no task of the tag exercised the dimension), or nothing."""
    row = card["tags"][tag]
    if dim not in row:
        return NOT_MEASURED if dim == "wer" else ""
    ex = (card.get("exercise") or {}).get(tag, {}).get(dim)
    if ex and ex.get("tasks") and not ex.get("exercised"):
        return NOT_EXERCISED
    if ex and ex.get("missed"):
        return f"{row[dim]:.3f}, {NOT_EXERCISED} in {len(ex['missed'])}"
    return ""


def direction(dim: str, value: float, baseline: float | None) -> str:
    """``better``, ``worse`` or ``same`` against the baseline (WER: lower is better); ``""``
    without a baseline."""
    if baseline is None or not is_number(value) or not is_number(baseline):
        return ""
    worse = worse_by(dim, value, baseline)
    if worse > EPSILON:
        return "worse"
    return "better" if worse < -EPSILON else "same"


def _num(v: Any) -> str:
    return f"{v:.3f}" if is_number(v) else "-"


def _count(v: Any) -> str:
    return str(int(v)) if is_number(v) else "-"


def _cell(text: str, cls: str, delta: str = "", title: str = "") -> str:
    d = f"<span class='d'>{escape(delta)}</span>" if delta else ""
    t = f" title='{escape(title)}'" if title else ""
    return f"<td class='{cls}'{t}>{escape(text)}{d}</td>"


def _delta(dim: str, value: float, base: float | None) -> tuple[str, str]:
    """(class, "was 1.000, -0.167") of a value against its baseline."""
    move = direction(dim, value, base)
    if not move or base is None:
        return "", ""
    return move, f"was {base:.3f}" + ("" if move == "same" else f", {value - base:+.3f}")


def _tag_cell(card: Mapping[str, Any], cell: Cell | None, tag: str, dim: str) -> str:
    note = scorecard_note(card, tag, dim)
    if cell is None:
        return _cell(note or "-", "note" if note else "")
    move, delta = _delta(dim, cell.value, cell.baseline)
    cls = "fail" if cell.failures else move
    if note:
        cls = cls if cls in ("fail", "worse") else "note"
    return _cell(note or _num(cell.value), cls, delta, "; ".join(cell.failures))


def _tags(card: Mapping[str, Any], cells: dict[tuple[str, str], Cell], has_base: bool) -> str:
    dims = card.get("dimensions") or []
    lower = set(card.get("lower_is_better") or LOWER_IS_BETTER)
    head = "".join(f"<th>{escape(d)}{' (lower=better)' if d in lower else ''}</th>" for d in dims)
    rows = [f"<tr><th class='l'>tag</th><th>scored/void</th>{head}</tr>"]
    for tag in card.get("tags") or {}:
        c = (card.get("counts") or {}).get(tag) or {}
        tds = "".join(_tag_cell(card, cells.get((tag, d)), tag, d) for d in dims)
        rows.append(
            f"<tr><th class='l'>{escape(tag)}</th>"
            f"<td>{c.get('scored', 0)}/{c.get('void', 0)}</td>{tds}</tr>"
        )
    caption = "per tag: the mean over its scored tasks" + (
        "; under each value, the baseline's and the change" if has_base else ""
    )
    return f"<h2>Tags</h2><p class='meta'>{caption}</p><table>{''.join(rows)}</table>"


_TT_CLASS = {State.FAIL: "fail", State.WORSE: "worse", State.BETTER: "better",
             State.NOT_EXERCISED: "note", State.VALUE: ""}  # fmt: skip


def _turn_taking(card: Mapping[str, Any], judged: list[Cell], has_base: bool) -> str:
    """The turn-taking block (Full-Duplex-Bench's measures): a metric per row, a tag per
    column, "not exercised" where no scored task of the tag met the condition."""
    view = rows(card, judged)
    if not view:
        return ""  # a scorecard from before the turn-taking metrics
    head = "<h2 id='turn-taking'>Turn-taking</h2>"
    if not exercised_any(view):
        return f"{head}<p class='meta'>{escape(NONE_EXERCISED)}</p>"
    tags = list(card.get("tags") or {})
    ths = "".join(f"<th>{escape(t)}</th>" for t in tags)
    out = [f"<tr><th class='l'>metric</th><th class='l'>better</th>{ths}</tr>"]
    for r in view:
        tds = "".join(_cell(c.text, _TT_CLASS[c.state], c.under, c.why) for c in r.cells)
        out.append(
            f"<tr data-metric='{r.metric}'><td class='l'>{escape(r.label)}"
            f"<span class='d'>{escape(r.metric)}</span></td>"
            f"<td class='l'>{escape(r.better)}</td>{tds}</tr>"
        )
    caption = (
        "Full-Duplex-Bench's measures per tag: the mean over the scored tasks that exercised "
        "each (under it, how many"
        + (", and the baseline's value" if has_base else "")
        + "); TOR: the share of events where the agent took the turn (spoke >= 1 s or more "
        "than 3 words)."
    )
    return f"{head}<p class='meta'>{escape(caption)}</p><table class='tt'>{''.join(out)}</table>"


def _voices(card: Mapping[str, Any]) -> str:
    """How the project's ASR heard each caller voice, per tag (a scorecard's live calls)."""
    per_tag = card.get("voices")
    per_tag = per_tag if isinstance(per_tag, Mapping) else {}  # a card read from a file
    rows = [
        f"<tr><th class='l'>{escape(tag)}</th><td class='l'>{escape(str(v.get('voice')))}</td>"
        f"<td>{_num(v.get('wer'))}</td><td>{_count(v.get('words'))}</td>"
        f"<td>{_count(v.get('calls'))}</td></tr>"
        for tag, voices in per_tag.items()
        for v in (voices if isinstance(voices, list) else [])
        if isinstance(v, Mapping)
    ]
    if not rows:
        return ""  # no live call, or a scorecard from before the voices
    head = (
        "<tr><th class='l'>tag</th><th class='l'>caller voice</th><th>ASR WER</th>"
        "<th>words</th><th>tasks</th></tr>"
    )
    caption = (
        "how the project's ASR heard each caller voice, its words pooled over the tag's scored "
        "live calls: what the voice itself may explain of the agent's misunderstanding"
    )
    return (
        f"<h2 id='voices'>Caller voices</h2><p class='meta'>{escape(caption)}</p>"
        f"<table>{head}{''.join(rows)}</table>"
    )


def _report_href(runs: str | None, task_id: str, here: Path | None) -> str | None:
    """The task's report.html relative to the page, when its bundle is known (and, when the
    page's folder is given, when it is there)."""
    if not runs:
        return None
    href = f"{runs.rstrip('/')}/{task_id}/report.html"
    if here is not None and not (here / href).is_file():
        return None
    return href


def _task_dim(
    dim: str, value: Any, base: Any, floor: float | None, exercise: Mapping[str, Any]
) -> str:
    if not is_number(value):
        return _cell(NOT_MEASURED if dim == "wer" else "-", "note" if dim == "wer" else "")
    if exercise.get("exercised") is False:  # the verifier's vacuous 1.0 is no evidence
        return _cell(NOT_EXERCISED, "note", title=f"{dim} {_num(value)}")
    past = floor is not None and (value > floor if dim in LOWER_IS_BETTER else value < floor)
    move, delta = _delta(dim, value, base if is_number(base) else None)
    return _cell(_num(value), "fail" if past else move, delta)


def _tasks(
    card: Mapping[str, Any],
    base_card: Mapping[str, Any] | None,
    floors: Mapping[str, float],
    here: Path | None,
    tolerance: float,
) -> str:
    tasks = card.get("tasks") or []
    if not tasks:
        return ""
    dims = [d for d in card.get("dimensions") or [] if d in (*VERIFIER_DIMS, "wer")]
    dims += sorted({d for t in tasks for d in t.get("dims") or {} if d not in dims})
    base_tasks = {str(t.get("task_id")): t for t in (base_card or {}).get("tasks") or []}
    checks = {c.task_id: c for c in task_checks(card, floors, base_tasks, tolerance)}
    head = "".join(f"<th>{escape(d)}</th>" for d in dims)
    rows = [
        "<tr class='head'><th class='l'>task</th><th class='l'>tags</th><th class='l'>verdict"
        f"</th>{head}<th class='l'>report</th><th class='l'>why</th></tr>"
    ]
    for t in tasks:
        tid = str(t.get("task_id"))
        verdict = str(t.get("verdict"))
        got = t.get("dims") or {}
        was = base_tasks.get(tid, {}).get("dims") or {}
        if verdict == "void":
            tds = "".join(_cell("-", "") for _ in dims)
        else:
            seen, own = t.get("exercise") or {}, task_floors(floors, t)
            tds = "".join(
                _task_dim(d, got.get(d), was.get(d), own.get(d), seen.get(d) or {}) for d in dims
            )
        href = _report_href(card.get("runs"), tid, here)
        link = f"<a href='{escape(href)}'>report.html</a>" if href else "-"
        check = checks.get(tid)
        why = check.detail() if check and check.failures else str(t.get("note") or "")
        vcls = {"pass": "pass", "void": "void"}.get(verdict, "v-fail")
        rows.append(
            f"<tr class='task' data-task='{escape(tid)}'><td class='l'>{escape(tid)}</td>"
            f"<td class='l'>{escape(', '.join(map(str, t.get('tags') or [])))}</td>"
            f"<td class='l {vcls}'>{escape(verdict)}</td>{tds}"
            f"<td class='l'>{link}</td><td class='l'>{escape(why)}</td></tr>"
        )
    return f"<h2>Tasks</h2><table class='tasks'>{''.join(rows)}</table>"


def _thresholds(
    dims: list[str], floors: Mapping[str, float], tolerance: float, tasks: Sequence[Any] = ()
) -> str:
    def said(fl: Mapping[str, Any]) -> list[str]:
        return [
            f"{d} {'ceiling' if d in LOWER_IS_BETTER else 'floor'} {fl[d]:g}"
            for d in dims
            if d in fl
        ]

    own = [f"{t.get('task_id')} {', '.join(said(t['floors']))}" for t in tasks if t.get("floors")]
    return (
        "<p class='meta' id='thresholds'>The gate's thresholds: "
        + escape(", ".join(said(floors)))
        + (escape(f"; a task's own (its fixture's): {'; '.join(own)}") if own else "")
        + f"; a drop from the baseline of more than {tolerance:g} fails. WER: lower is better. "
        "Red: fails the gate, or worse than the baseline; green: better than the baseline.</p>"
    )


def page(
    card: Mapping[str, Any],
    *,
    baseline: Mapping[str, Any] | None = None,
    baseline_name: str = "",
    here: Path | None = None,
    floors: Mapping[str, float] | None = None,
    tolerance: float = DEFAULT_TOLERANCE,
) -> str:
    """The page of ``card`` (against ``baseline``, a pinned scorecard, when given). ``here``:
    the page's folder, to link only the reports that are there."""
    fl = {**DEFAULT_FLOORS, **(floors or {})}
    judged = gate(card, baseline, tolerance=tolerance, floors=fl)
    cells = {(c.tag, c.dim): c for c in judged.cells}
    suite = card.get("suite") or {}
    name = str(suite.get("name") or "unnamed suite")
    version = f"v{suite['version']}" if suite.get("version") else "(no version)"
    counts = (card.get("counts") or {}).get("all") or {}
    verdict = "gate passes" if judged.passed else "gate fails"
    base_line = (
        f"Baseline: {escape(baseline_name or 'given')} (suite "
        f"{escape(str((baseline.get('suite') or {}).get('name') or '?'))})."
        if baseline is not None
        else "No baseline: pin one with <code>turnscope gate SCORECARD --baseline FILE "
        "--update-baseline</code> (or keep one beside this page as "
        f"<code>{BASELINE_BESIDE}</code>) to see what changed."
    )
    problems = "".join(f"<li>{escape(p)}</li>" for p in judged.problems) + "".join(
        f"<li>{escape(tag)}: its means not compared with the baseline: {escape(why)}</li>"
        for tag, why in sorted(judged.not_compared.items())
    )
    return (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f"<title>turnscope scorecard: {escape(name)} {escape(version)}</title>"
        f"<style>{TABLE_CSS}</style></head><body>"
        f"<h1>Scorecard: {escape(name)} <span class='version'>{escape(version)}</span></h1>"
        f"<p class='{'pass' if judged.passed else 'v-fail'}' id='gate'>{verdict}: "
        f"{counts.get('passed', 0)} of {counts.get('scored', 0)} scored tasks passed, "
        f"{counts.get('void', 0)} void</p>"
        f"<p class='meta' id='baseline'>{base_line}</p>"
        + (f"<ul>{problems}</ul>" if problems else "")
        + _tags(card, cells, baseline is not None)
        + _turn_taking(card, judged.cells, baseline is not None)
        + _voices(card)
        + _tasks(card, baseline, fl, here, tolerance)
        + _thresholds(list(card.get("dimensions") or fl), fl, tolerance, card.get("tasks") or [])
        + "</body></html>\n"
    )


def pinned_beside(card_path: Path) -> Path | None:
    """A baseline pinned next to the scorecard, if there is one."""
    path = card_path.parent / BASELINE_BESIDE
    return path if path.is_file() and path != card_path else None


def runs_from(card_path: Path, runs_dir: Path) -> str:
    """The bundles' folder as the page beside ``card_path`` links it (relative, '/')."""
    rel = os.path.relpath(runs_dir.resolve(), card_path.resolve().parent)
    return Path(rel).as_posix()
