"""The caller's line in report.html: the noise, room, telephone line, losses and dysfluencies the
caller's speech went through, and the seeds that make the same caller again, as result.json's
``script.acoustics`` records them (`model.py` reads them; this section only says them)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from turnscope.scoring.report.markup import e
from turnscope.scoring.report.model import ReportModel
from turnscope.scoring.report.reading import number


def _name(value: Any) -> str:
    """A generated kind's name, or a user's file by its name (the path is in result.json)."""
    return PurePath(str(value)).name


def _keys(k: Mapping[str, Any], missing: set[str], sent: Any = None) -> list[str]:
    """One set of acoustics keys (the call's or a line's) as phrases."""
    out = []
    if k.get("noise") is not None:
        said = f"noise {_name(k['noise'])}"
        if k.get("snr_db") is not None:
            said += f" at {number(k['snr_db']):g} dB SNR at the microphone"
        if sent is not None and k.get("telephone") is not None:
            said += f", {number(sent):g} dB on the line"
        out.append(said)
    if k.get("reverb") is not None:
        out.append(f"room {_name(k['reverb'])}")
    if k.get("telephone") is not None:
        band = " (the band alone: this FFmpeg lacks the codec)" if k["telephone"] in missing else ""
        out.append(f"telephone {k['telephone']}{band}")
    if number(k.get("loss")) > 0:
        out.append(f"{number(k['loss']) * 100:g}% of packets lost by chance")
    if number(k.get("jitter_ms")) > 0:
        buffer = number(k.get("jitter_buffer_ms"), 60.0)
        out.append(f"jitter {number(k['jitter_ms']):g} ms (buffer {buffer:g} ms)")
    if k.get("level_db") is not None:
        out.append(f"level {number(k['level_db']):+g} dB")
    if k.get("clip_at") is not None:
        out.append(f"clipped at {number(k['clip_at']):g} of full scale")
    return out


def _stumbles(d: Mapping[str, Any]) -> str:
    names = (("fillers", "fillers"), ("restarts", "restarts"), ("self_correction", "corrections"))
    parts = [f"{label} {number(d.get(key)):g}" for key, label in names]
    return ", ".join([*parts, f"seed {d.get('seed', 0)}"])


def _part(c: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``c[key]`` when it is a mapping (a document written by an older turnscope may lack it)."""
    found = c.get(key)
    return found if isinstance(found, Mapping) else {}


def _rows(c: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(what, how) rows: the whole call, each line's own keys, losses, dysfluencies, texts."""
    missing = {str(x) for x in c.get("codec_missing") or []}
    call = _part(c, "call")
    rows = []
    whole = _keys(call, missing, c.get("snr_db_sent"))
    if whole:
        rows.append(("whole call", "; ".join(whole)))
    for i, keys in _part(c, "lines").items():
        if isinstance(keys, Mapping) and (own := _keys(keys, missing)):
            rows.append((f"script[{i}]", "; ".join(own)))
    seed = c.get("seed", call.get("seed"))  # a bundle from before ``seed`` was recorded apart
    if seed is not None:
        rows.append(("acoustics seed", str(seed)))
    packets = _part(c, "packets")
    if number(packets.get("sent")) > 0:
        lost, sent = int(number(packets.get("lost"))), int(number(packets["sent"]))
        rows.append(("packets lost", f"{lost} of {sent} ({lost / sent * 100:.1f}%)"))
    stumbles = _part(c, "dysfluency")
    if stumbles_call := _part(stumbles, "call"):
        rows.append(("dysfluency", _stumbles(stumbles_call)))
    for i, d in _part(stumbles, "lines").items():
        if isinstance(d, Mapping):
            rows.append((f"script[{i}] dysfluency", _stumbles(d)))
    rows += [(f"script[{i}] said as", f"“{text}”") for i, text in _part(c, "spoken_texts").items()]
    return rows


def caller_line(m: ReportModel) -> str:
    """The caller's conditions (nothing for a plain caller)."""
    if not m.conditions:
        return ""
    rows = "".join(f"<tr><td>{e(a)}</td><td>{e(b)}</td></tr>" for a, b in _rows(m.conditions))
    return (
        '<section id="caller-line"><h2>The caller\'s line</h2><div class="meta">What the '
        "caller's speech went through before the agent heard it (result.json "
        "<code>script.acoustics</code>): the same keys and seeds make the same caller again."
        f'</div><table class="kv"><tbody>{rows}</tbody></table></section>'
    )
