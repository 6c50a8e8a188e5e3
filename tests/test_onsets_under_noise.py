"""A turn's quiet onset under loud noise, where a listener hears it (asr/head.py): the "s" of a
caller's "stop" at 10 dB SNR stands out of pink noise in its own bands while the full-band
envelope sinks into it; found at the vowel, the barge-in started 105 ms late and no longer
overlapped the agent it cut (issue 32's three missed interruptions)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from common import VOICE_PAIRS, build_corpus

from tests.test_real_speech import _in_turn, _utterances
from turnscope.asr.settings import load_settings


def test_a_barge_ins_onset_under_noise_is_found_by_its_bands(tmp_path):
    calls = build_corpus(tmp_path, scenarios=("barge-ins",), conditions=("10dB",))
    assert len(calls) == len(VOICE_PAIRS)
    settings = {"on": load_settings(), "off": load_settings(refine={"head_band_db": 0})}
    errors: dict[str, list[float]] = {"on": [], "off": []}
    stop: dict[str, list[float]] = {"on": [], "off": []}
    for call in calls:
        for key, s in settings.items():
            utts = _utterances(call.wav, s)
            for t in call.truth["turns"]:
                err = _in_turn(utts, t)[0][0] - t["start_ms"]
                if t["interrupt"]:
                    errors[key].append(err)
                if t["text"] == "stop":
                    stop[key].append(err)
    assert all(e > 80 for e in stop["off"]), stop  # at its vowel without the bands
    assert all(abs(e) <= 20 for e in stop["on"]), stop
    assert all(abs(e) <= 30 for e in errors["on"]), sorted(errors["on"])
