"""Reading JSON/YAML input files with one-line errors that name the file."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from turnscope import redact
from turnscope.errors import InputError, OutputError


def read_json(path: str | Path, *, what: str = "JSON file") -> Any:
    """Parse a JSON file, turning a missing file or bad JSON into an InputError."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"no such {what}", path=p, fix="check the path")
    if p.is_dir():
        raise InputError(f"is a directory, expected a {what}", path=p)
    try:
        return json.loads(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"not a text {what} (undecodable bytes)", path=p) from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}", path=p
        ) from None


def read_yaml(path: str | Path, *, what: str = "YAML file") -> Any:
    """Parse a YAML file, turning a missing file or bad YAML into an InputError."""
    import yaml  # here: most commands never read YAML

    p = Path(path)
    if not p.exists():
        raise InputError(f"no such {what}", path=p, fix="check the path")
    try:
        return yaml.safe_load(p.read_text(encoding="utf-8"))
    except UnicodeDecodeError:
        raise InputError(f"not a text {what} (undecodable bytes)", path=p) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML{where}: {problem}", path=p) from None


def write_json(path: str | Path, obj: Any) -> Path:
    """Write JSON (indented, UTF-8, secrets scrubbed) atomically, creating parent folders."""
    return write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def write_text(path: str | Path, text: str) -> Path:
    """Write a text output atomically (a temporary name, then a rename: a crash or a full disk
    never leaves half a file), with every registered secret scrubbed. OSError becomes an
    OutputError naming the path and the fix."""
    return write_bytes(path, redact.scrub(text).encode("utf-8"))


def write_bytes(path: str | Path, data: bytes) -> Path:
    """``write_text`` for bytes (not scrubbed: binary outputs carry no text)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(exc, p) from None
    return p


def one_line(exc: ValidationError, *, prefix: str = "") -> str:
    """The first pydantic error as `where: what` on one line (plus a count of the others)."""
    errors = exc.errors()
    first = errors[0]
    loc = ".".join(str(x) if not isinstance(x, int) else f"[{x}]" for x in first["loc"])
    loc = (prefix + "." + loc if prefix and loc else prefix or loc).replace(".[", "[")
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return f"{loc}: {first['msg']}" + (more if len(errors) > 1 else "")
