"""Reading untrusted JSON and YAML within limits (files with one-line errors that name the
file; an agent's messages refused with a typed error its receive loop counts), and atomic,
scrubbed writes.

Every input that crosses a trust boundary is parsed here: nesting deeper than the limit is
refused before the standard parsers recurse (a scan of the brackets outside strings, or of
YAML's events), and so are a size or an item count past the limit and a number that is not
finite or does not fit a float (NaN, Infinity, a 400-digit integer).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from turnscope import redact
from turnscope.errors import InputError, NotAFile, OutputError, ParseError, ParseProblem
from turnscope.spelling import Keys, extra_fix


@dataclass(frozen=True)
class Limits:
    """What one untrusted document may hold."""

    depth: int = 100  # nesting of arrays/objects (mappings/sequences)
    size: int = 64 * 1024 * 1024  # bytes of the file (characters of a message)
    items: int = 5_000_000  # values and containers (YAML: as aliases expand)
    # NaN read as a value (not Infinity): turnscope's own scorecards write a cell that no task
    # has as NaN, and the gate fails that cell as "no value"
    nan: bool = False


FILE_LIMITS = Limits()
SCORECARD_LIMITS = Limits(nan=True)
# One message from an agent (a phone-line event, an RTVI message, an offer's answer).
MESSAGE_LIMITS = Limits(depth=64, size=4 * 1024 * 1024, items=200_000)

_MAX_INT_DIGITS = 320  # past float's range (about 1.8e308) whatever the digits
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")


def _size(n: int) -> str:
    return f"{n / 1048576:.0f} MiB" if n >= 1048576 else f"{n / 1024:.0f} KiB"


def _check_json_shape(text: str, limits: Limits) -> None:
    """Refuse nesting and item counts past ``limits`` before json recurses into them."""
    opens = text.count("[") + text.count("{")
    if opens <= limits.depth and opens + text.count(",") <= limits.items:
        return  # the common case, in C: too few brackets to nest that deep at all
    bare = _STRING.sub('""', text)  # brackets and commas inside strings are no structure
    items = bare.count(",") + bare.count("[") + bare.count("{")
    if items > limits.items:
        raise ParseError(ParseProblem.TOO_MANY, f"more than {limits.items} items")
    depth = 0
    for c in _NOT_BRACKET.sub("", bare):
        if c in "[{":
            depth += 1
            if depth > limits.depth:
                raise ParseError(
                    ParseProblem.TOO_DEEP, f"nested more than {limits.depth} levels deep"
                )
        else:
            depth -= 1


def _bad_number(text: str) -> ParseError:
    shown = text if len(text) <= 24 else f"{text[:12]}...({len(text)} characters)"
    return ParseError(
        ParseProblem.BAD_NUMBER, f"a number that is not finite or does not fit: {shown}"
    )


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e400 reads as inf
        raise _bad_number(text)
    return value


def _int(text: str) -> int:
    if len(text) > _MAX_INT_DIGITS:
        raise _bad_number(text)
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise _bad_number(text) from None
    return value


def _constant(text: str) -> Any:
    raise _bad_number(text)  # NaN, Infinity, -Infinity: not JSON, and not finite


def _nan_only(text: str) -> Any:
    if text == "NaN":
        return math.nan
    raise _bad_number(text)


def loads(
    data: str | bytes,
    *,
    limits: Limits = MESSAGE_LIMITS,
    object_pairs_hook: Callable[[list[tuple[str, Any]]], Any] | None = None,
) -> Any:
    """Parse untrusted JSON within ``limits``; anything else raises ParseError (a ValueError
    whose ``problem`` says which limit, without a path: the caller names the source)."""
    if len(data) > limits.size:
        raise ParseError(ParseProblem.TOO_LARGE, f"larger than {_size(limits.size)}")
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8")
        except UnicodeDecodeError:
            raise ParseError(ParseProblem.INVALID, "not UTF-8 text") from None
    _check_json_shape(data, limits)
    try:
        return json.loads(
            data,
            parse_float=_float,
            parse_int=_int,
            parse_constant=_nan_only if limits.nan else _constant,
            object_pairs_hook=object_pairs_hook,
        )
    except ParseError:
        raise
    except json.JSONDecodeError as exc:
        raise ParseError(
            ParseProblem.INVALID,
            f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    except RecursionError:  # the scan above makes this unreachable; kept as a floor
        raise ParseError(ParseProblem.TOO_DEEP, "nested too deep") from None
    except ValueError as exc:
        raise ParseError(ParseProblem.INVALID, f"invalid JSON: {exc}") from None


def _check_yaml_shape(text: str, limits: Limits) -> None:
    """Refuse YAML nested deeper than ``limits`` or holding more items once its aliases are
    expanded (a billion laughs), from its events: YAML's parser keeps a stack, its composer
    recurses. A document YAML cannot parse is left to the loader, which says where."""
    import yaml

    c_loader = getattr(yaml, "CSafeLoader", None)
    for loader in (c_loader, yaml.SafeLoader) if c_loader else (yaml.SafeLoader,):
        try:
            _scan_yaml(text, limits, loader)
            return
        except yaml.YAMLError:
            # libyaml stops at its own nesting limit before a single event: the pure-Python
            # parser (a state machine, no recursion) goes on to ours. An error it finds too is
            # left to the loader, which says where.
            continue


def _scan_yaml(text: str, limits: Limits, loader: Any) -> None:
    import yaml

    stack: list[list[Any]] = []  # per open collection: its anchor, its expanded size so far
    sizes: dict[str, int] = {}

    def add(n: int) -> None:
        if stack:
            stack[-1][1] += n
            if stack[-1][1] > limits.items:
                raise ParseError(
                    ParseProblem.TOO_MANY,
                    f"more than {limits.items} items (with its aliases expanded)",
                )

    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, yaml.CollectionStartEvent):
            stack.append([event.anchor, 0])
            if len(stack) > limits.depth:
                raise ParseError(
                    ParseProblem.TOO_DEEP, f"nested more than {limits.depth} levels deep"
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, n = stack.pop()
            if anchor:
                sizes[anchor] = n + 1
            add(n + 1)
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor:
                sizes[event.anchor] = 1
            add(1)
        elif isinstance(event, yaml.AliasEvent):
            if any(anchor == event.anchor for anchor, _ in stack):
                raise ParseError(  # a cycle: whatever walks it recurses forever
                    ParseProblem.TOO_DEEP, f"the alias *{event.anchor} is inside its own anchor"
                )
            add(sizes.get(event.anchor, 1))


def _read_text(p: Path, what: str, limits: Limits) -> str:
    if not p.exists():
        raise InputError(f"no such {what}", path=p, fix="check the path")
    if p.is_dir():
        raise InputError(f"is a directory, expected a {what}", path=p)
    try:
        size = p.stat().st_size
        if size > limits.size:
            raise ParseError(
                ParseProblem.TOO_LARGE, f"{what} refused: larger than {_size(limits.size)}", path=p
            )
        return p.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InputError(f"not a text {what} (undecodable bytes)", path=p) from None
    except OSError as exc:
        raise OutputError(exc, p) from None


def read_json(path: str | Path, *, what: str = "JSON file", limits: Limits = FILE_LIMITS) -> Any:
    """Parse a JSON file within ``limits``, turning a missing file, bad JSON or a limit passed
    into an InputError (ParseError) naming the file."""
    p = Path(path)
    text = _read_text(p, what, limits)
    try:
        return loads(text, limits=limits)
    except ParseError as exc:
        raise _named(exc, p, what) from None


def _named(exc: ParseError, path: Path, what: str) -> ParseError:
    """``exc`` naming the file it came from (a limit passed says it refused the file)."""
    detail = str(exc) if exc.problem is ParseProblem.INVALID else f"{what} refused: {exc}"
    return ParseError(exc.problem, detail, path=path)


def read_yaml(path: str | Path, *, what: str = "YAML file", limits: Limits = FILE_LIMITS) -> Any:
    """Parse a YAML file within ``limits``, turning a missing file, bad YAML or a limit passed
    into an InputError naming the file."""
    import yaml  # here: most commands never read YAML

    p = Path(path)
    text = _read_text(p, what, limits)
    try:
        _check_yaml_shape(text, limits)
    except ParseError as exc:
        raise _named(exc, p, what) from None
    try:
        return _finite(yaml.safe_load(text), p, what)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1} column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise InputError(f"invalid YAML{where}: {problem}", path=p) from None


def _finite(data: Any, path: Path, what: str) -> Any:
    """YAML reads .nan and .inf as floats: refused, as in JSON, naming the key (iterative, each
    collection once: an alias may point back at its own ancestor)."""
    todo: list[tuple[Any, tuple[Any, ...], bool]] = [(data, (), False)]  # item, loc, a key?
    seen = set()
    while todo:
        item, loc, is_key = todo.pop()
        if isinstance(item, float) and not math.isfinite(item):
            where = key_path(loc)
            if is_key:
                where = f"{where} (a key)" if where else "a key"
            at = f"{where} is {item}" if where else f"{item}"
            raise ParseError(
                ParseProblem.BAD_NUMBER,
                f"{what} refused: a number that is not finite: {at}: give a finite number",
                path=path,
            )
        if isinstance(item, (dict, list)):
            if id(item) in seen:
                continue
            seen.add(id(item))
        if isinstance(item, dict):
            for key, value in item.items():
                todo += [(key, loc, True), (value, (*loc, key), False)]
        elif isinstance(item, list):
            todo.extend((value, (*loc, k), False) for k, value in enumerate(item))
    return data


def native_path(path: str | Path) -> bytes:
    """``path`` as the bytes the file system knows it by. soundfile encodes a str path strictly
    in the locale's encoding: under a non-UTF-8 locale (LC_ALL=C, PYTHONUTF8=0) a non-ASCII
    name, decoded by Python with surrogate escapes, would not encode back."""
    return os.fsencode(path)


def write_json(path: str | Path, obj: Any) -> Path:
    """Write JSON (indented, UTF-8, secrets scrubbed) atomically, creating parent folders."""
    return write_text(path, json.dumps(obj, indent=2, ensure_ascii=False) + "\n")


def write_text(path: str | Path, text: str) -> Path:
    """Write a text output atomically (a temporary name, then a rename: a crash or a full disk
    never leaves half a file), with every registered secret scrubbed. OSError becomes an
    OutputError naming the path and the fix."""
    return write_bytes(path, utf8(redact.scrub(text)))


def utf8(text: str) -> bytes:
    """``text`` as UTF-8. A file name Python read under a non-UTF-8 locale carries its bytes
    as surrogate escapes: they are written back as those bytes when that makes UTF-8 (a UTF-8
    name), else shown escaped (``\\udcff``), never an error."""
    data = text.encode("utf-8", "surrogateescape")
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        return text.encode("utf-8", "backslashreplace")
    return data


_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a folder"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)


def not_a_file(path: str | Path) -> str | None:
    """What ``path`` is when something other than a regular file is there (None: nothing, or a
    regular file). Never follows a symbolic link."""
    try:
        mode = os.lstat(path).st_mode
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise OutputError(exc, path) from None
    return next((kind for test, kind in _KINDS if test(mode)), None)


def check_output(path: str | Path) -> None:
    """NotAFile when writing ``path`` would replace anything but a regular file."""
    kind = not_a_file(path)
    if kind is not None:
        raise NotAFile(path, kind)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """``write_text`` for bytes (not scrubbed: binary outputs carry no text). Only a regular
    file is replaced: a FIFO, a device node (``/dev/full``), a folder or a link at ``path`` is
    NotAFile (a rename would have put a file in its place)."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        check_output(p)
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # a stale one of a crashed run with this pid: never written through
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        with open(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, p)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise OutputError(exc, p) from None
    return p


def key_path(loc: Sequence[Any], prefix: str = "") -> str:
    """A location in a document as its author writes it: ``caller.acoustics.snr_db``,
    ``script[0].text`` (a pydantic error's ``loc``, or keys and list indices walked)."""
    path = ".".join(str(x) if not isinstance(x, int) else f"[{x}]" for x in loc)
    return (prefix + "." + path if prefix and path else prefix or path).replace(".[", "[")


def one_line(exc: ValidationError, *, prefix: str = "") -> str:
    """The first pydantic error as `where: what` on one line (plus a count of the others)."""
    errors = exc.errors()
    first = errors[0]
    loc = key_path(first["loc"], prefix)
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return f"{loc}: {first['msg']}" + (more if len(errors) > 1 else "")


# What to do about a problem of these pydantic error types (the others' messages say it).
_FIXES = {"missing": "add it", "extra_forbidden": "remove it, or fix its spelling"}


def every_problem(exc: ValidationError, *, prefix: str = "", known: Keys | None = None) -> str:
    """Every pydantic error, each as `where: what (the value given)`, on one line: a file is
    fixed in one go, not one error per run (``known``: where a misplaced or misspelt key goes)."""
    return joined_problems(problem_list(exc, prefix=prefix, known=known))


def joined_problems(parts: list[str]) -> str:
    """Problems on one line: the one, or ``N problems: a; b; ...``."""
    if len(parts) == 1:
        return parts[0]
    return f"{len(parts)} problems: " + "; ".join(parts)


def problem_list(exc: ValidationError, *, prefix: str = "", known: Keys | None = None) -> list[str]:
    """Each pydantic error as `where: what (the value given)`."""
    parts = []
    for error in exc.errors():
        loc = key_path(error["loc"], prefix)
        what, given = error["msg"], error.get("input")
        if error["type"] in _FIXES:
            fix = extra_fix(error["loc"], known) if error["type"] == "extra_forbidden" else None
            what += f" ({fix or _FIXES[error['type']]})"
        elif isinstance(given, (str, int, float, bool)):
            what += f" (got {str(given)[:40]!r})" if isinstance(given, str) else f" (got {given})"
        parts.append(f"{loc}: {what}" if loc else what)
    return parts
