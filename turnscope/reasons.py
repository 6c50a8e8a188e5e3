"""Warnings and degraded reasons as records: a code that counts and gates read, and the message
people read. Shared by every room: each room names its own codes (an enum per concern: the
source's, the audio checks', the scripted caller's, the run's) and each stage returns what it
found as ``Findings``; the runner assembles a run's findings from every stage, in the order
they were found. No count or decision reads a message: the words may change, the code may not.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum, StrEnum

# Every note of the process in the order it was found: assembling a run's findings from its
# stages keeps that order (a live call's source, its caller and the pipeline interleave).
_found_order = itertools.count()


class Severity(StrEnum):
    """How a note bears on the evidence."""

    WARNING = "warning"  # worth knowing before trusting the figures; the evidence stands
    DEGRADED = "degraded"  # the evidence is incomplete


@dataclass(frozen=True)
class Note:
    """One warning or degraded reason: its ``code`` (an enum member: counted, gated on, written
    beside the message in result.json) and its ``message`` (shown and written as it is)."""

    code: Enum
    message: str
    severity: Severity
    order: int = field(default_factory=lambda: next(_found_order), compare=False, repr=False)

    def __str__(self) -> str:
        return self.message

    @property
    def code_name(self) -> str:
        """The code as written in documents (the enum member's value)."""
        return str(self.code.value)


class Messages(list[str]):
    """Notes' messages, as read: a list that refuses to grow, so text appended where a note
    belongs fails at once rather than vanish (``Findings.warn`` and ``degrade`` add notes)."""

    def _refuse(self, *_: object) -> None:
        raise TypeError("messages are read-only: add a Note (warn or degrade, with a code)")

    append = extend = insert = __iadd__ = _refuse  # type: ignore[assignment]


@dataclass(kw_only=True)
class Findings:
    """What one stage found, as notes in the order found. ``warnings`` and ``degraded`` are
    the messages (what every reader shows); counts and decisions read the notes' codes."""

    notes: list[Note] = field(default_factory=list)

    def warn(self, code: Enum, message: str) -> Note:
        return self.add(Note(code, message, Severity.WARNING))

    def degrade(self, code: Enum, message: str) -> Note:
        return self.add(Note(code, message, Severity.DEGRADED))

    def add(self, note: Note) -> Note:
        self.notes.append(note)
        return note

    def of(self, severity: Severity) -> list[Note]:
        return [n for n in self.notes if n.severity is severity]

    @property
    def warnings(self) -> list[str]:
        return Messages(n.message for n in self.of(Severity.WARNING))

    @property
    def degraded(self) -> list[str]:
        """Why the evidence is incomplete."""
        return Messages(n.message for n in self.of(Severity.DEGRADED))

    def codes(self, severity: Severity) -> list[str]:
        """The codes of ``severity``'s notes, beside their messages (same order)."""
        return [n.code_name for n in self.of(severity)]

    def has(self, code: Enum) -> bool:
        return any(n.code is code for n in self.notes)


def assembled(parts: Iterable[Findings]) -> Findings:
    """Every stage's findings in one, in the order they were found (a stage may be given twice:
    its notes count once)."""
    seen: set[int] = set()
    notes = []
    for part in parts:
        for n in part.notes:
            if id(n) not in seen:
                seen.add(id(n))
                notes.append(n)
    return Findings(notes=sorted(notes, key=lambda n: n.order))
