"""The fixture tags and the gate's defaults the command line shows in ``--help``: a module with
no imports, so the CLI reads them without loading the scoring stack."""

from __future__ import annotations

__all__ = ["DEFAULT_TOLERANCE", "TAGS"]

DEFAULT_TOLERANCE = 0.05  # a dimension may drop this much against its baseline
# seed 002's fixture tags (fixtures.Tag spells the same as a type; fixtures checks they agree)
TAGS = ("acoustic", "speaker", "language", "complexity", "conversational", "adversarial")
