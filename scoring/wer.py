"""Word error rate per channel and overall, with jiwer over Whisper's English normalisation.

Both sides go through whisper-normalizer's EnglishTextNormalizer (lowercase, punctuation out,
spelled numbers and British spellings unified), then jiwer aligns words. Corpus WER pools the
errors: (S + D + I) / reference words, over a channel or over both.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from turnscope.asr.normalise import normalise
from turnscope.capture.channels import CHANNELS


@dataclass(frozen=True)
class AlignmentOp:
    """One jiwer alignment chunk: equal / substitute / delete / insert, with the words."""

    op: str
    ref: tuple[str, ...]
    hyp: tuple[str, ...]


@dataclass(frozen=True)
class WerScore:
    """Errors of one comparison (one channel, or everything pooled)."""

    wer: float | None  # None when there are no reference words
    hits: int
    substitutions: int
    deletions: int
    insertions: int
    reference_words: int
    hypothesis_words: int
    alignment: tuple[AlignmentOp, ...] = field(default=(), repr=False)

    def to_dict(self, *, with_alignment: bool = False) -> dict[str, Any]:
        out = asdict(self)
        out["wer"] = None if self.wer is None else round(self.wer, 4)
        if with_alignment:
            out["alignment"] = [
                {"op": a.op, "ref": list(a.ref), "hyp": list(a.hyp)} for a in self.alignment
            ]
        else:
            out.pop("alignment")
        return out


def score_words(reference: str, hypothesis: str) -> WerScore:
    """Align one normalised reference with one hypothesis."""
    ref, hyp = normalise(reference), normalise(hypothesis)
    if not ref:
        n = len(hyp.split())
        ops = (AlignmentOp("insert", (), tuple(hyp.split())),) if n else ()
        return WerScore(None, 0, 0, 0, n, 0, n, ops)
    if not hyp:
        words = tuple(ref.split())
        return WerScore(
            1.0, 0, 0, len(words), 0, len(words), 0, (AlignmentOp("delete", words, ()),)
        )
    import jiwer  # here: a command that scores no WER (``score``) does not pay its import

    out = jiwer.process_words(ref, hyp)
    rw, hw = out.references[0], out.hypotheses[0]
    ops = tuple(
        AlignmentOp(
            {"equal": "equal", "substitute": "substitute", "delete": "delete", "insert": "insert"}[
                c.type
            ],
            tuple(rw[c.ref_start_idx : c.ref_end_idx]),
            tuple(hw[c.hyp_start_idx : c.hyp_end_idx]),
        )
        for c in out.alignments[0]
    )
    return WerScore(
        out.wer, out.hits, out.substitutions, out.deletions, out.insertions, len(rw), len(hw), ops
    )


def pooled(scores: Sequence[WerScore]) -> WerScore:
    """Corpus WER over several comparisons: total errors / total reference words."""
    ref = sum(s.reference_words for s in scores)
    errors = sum(s.substitutions + s.deletions + s.insertions for s in scores)
    return WerScore(
        errors / ref if ref else None,
        sum(s.hits for s in scores),
        sum(s.substitutions for s in scores),
        sum(s.deletions for s in scores),
        sum(s.insertions for s in scores),
        ref,
        sum(s.hypothesis_words for s in scores),
    )


@dataclass(frozen=True)
class WerReport:
    per_channel: dict[str, WerScore]
    overall: WerScore

    def to_dict(self, *, with_alignment: bool = False) -> dict[str, Any]:
        return {
            "normaliser": "whisper_normalizer.english.EnglishTextNormalizer",
            "overall": self.overall.to_dict(),
            "per_channel": {
                ch: s.to_dict(with_alignment=with_alignment) for ch, s in self.per_channel.items()
            },
        }


def measure_wer(reference: Mapping[str, str], hypothesis: Mapping[str, str]) -> WerReport:
    """WER of each channel's hypothesis text against its reference text, and pooled."""
    per = {
        ch: score_words(reference.get(ch, ""), hypothesis.get(ch, ""))
        for ch in CHANNELS
        if ch in reference
    }
    return WerReport(per, pooled(list(per.values())))


def channel_texts(turns: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """Per-speaker text of a list of turns, joined in time order."""
    ordered = sorted(turns, key=lambda t: float(t.get("start_ms", 0) or 0))
    return {
        ch: " ".join(str(t.get("text") or "") for t in ordered if t.get("speaker") == ch).strip()
        for ch in CHANNELS
    }
