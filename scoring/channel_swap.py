"""A recording whose channels are swapped (the caller channel holds the agent): told by the
reference texts. When each channel's words match the OTHER channel's reference far better than
their own, the parties are the wrong way round and every score (latency, barge-ins) would be
measured from the wrong side. Without a reference there is nothing to tell the two voices
apart by: turn-taking alone looks the same either way round (docs/guide/replay.md says so)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from turnscope.capture.channels import AGENT, CALLER, CHANNELS
from turnscope.scoring.wer import pooled, score_words

# Swapped when the words fit the swapped reference this well (WER at most) ...
SWAPPED_FITS = 0.5
# ... and the reference as given this badly (WER at least): a noisy but right-way-round
# recording (WER 0.5-0.7 on a phone line) never fits the other party's words better.
AS_GIVEN_MISFITS = 0.8
OTHER = {CALLER: AGENT, AGENT: CALLER}


@dataclass(frozen=True)
class ChannelsSwapped:
    """The words heard fit the reference with the channels swapped, not as given."""

    wer_as_given: float
    wer_swapped: float

    def message(self) -> str:
        return (
            "the channels look swapped: the caller channel holds the agent's words and the agent "
            f"channel the caller's (WER {self.wer_swapped:.2f} swapped vs {self.wer_as_given:.2f} "
            "as given), so latency and barge-ins would be measured from the wrong side: replay "
            "with the other channel as the caller (the other --caller-channel, or --caller and "
            "--agent swapped)"
        )


def channels_swapped(
    reference: Mapping[str, str], heard: Mapping[str, str]
) -> ChannelsSwapped | None:
    """Each channel's heard text against its own reference and the other party's (only the
    channels the reference has words for); a finding when the swap fits and as given does not."""
    known = [ch for ch in CHANNELS if (reference.get(ch) or "").strip()]
    if not known or not any((heard.get(ch) or "").strip() for ch in CHANNELS):
        return None
    as_given = pooled([score_words(reference[ch], heard.get(ch, "")) for ch in known]).wer
    swapped = pooled([score_words(reference[ch], heard.get(OTHER[ch], "")) for ch in known]).wer
    if as_given is None or swapped is None:
        return None
    if swapped <= SWAPPED_FITS and as_given >= AS_GIVEN_MISFITS:
        return ChannelsSwapped(round(as_given, 4), round(swapped, 4))
    return None
