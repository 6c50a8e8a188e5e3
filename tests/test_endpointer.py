"""The streaming endpointer on real speech: boundaries, chunk invariance, gaps, bounds."""

from __future__ import annotations

import numpy as np
import pytest

from tests.speech import clip, ms, place
from turnscope.asr.endpointer import Endpointer
from turnscope.asr.events import EndOfTurn, SpeechStart, SpeechStop, StreamGap
from turnscope.asr.settings import load_settings
from turnscope.capture.frames import PcmFrame, to_int16

SETTINGS = load_settings()


def run(signal: np.ndarray, chunk: int = 320, settings=SETTINGS, channel="agent"):
    """``signal`` (float audio, or int16 PCM as a line delivers it) through an endpointer."""
    ep = Endpointer(channel, settings.vad, settings.refine)
    pcm = signal if signal.dtype == np.int16 else to_int16(signal)
    events = []
    for i in range(0, len(pcm), chunk):
        events += ep.push(PcmFrame(channel, i, pcm[i : i + chunk]))
    return events + ep.flush()


@pytest.fixture(scope="module")
def two_sentences():
    a = clip("I want a refund please.")
    b = clip("Can you tell me more about the policy?")
    return place(8000, (500, a), (4000, b)), [(500, 500 + ms(a)), (4000, 4000 + ms(b))]


def test_clean_boundaries_are_close_to_truth(two_sentences):
    signal, truth = two_sentences
    utts = [e.utterance for e in run(signal) if isinstance(e, EndOfTurn)]
    assert len(utts) == 2
    for u, (start, end) in zip(utts, truth, strict=True):
        assert abs(u.start_ms - start) <= 10
        assert abs(u.end_ms - end) <= 15
        # The audio handed to ASR covers the utterance with padding, on the call clock.
        assert u.audio_start_ms <= u.start_ms
        assert u.audio_start_ms + ms(u.audio) >= u.end_ms


def test_events_order_and_decision_delay(two_sentences):
    signal, _ = two_sentences
    events = run(signal)
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["SpeechStart", "SpeechStop", "EndOfTurn"] * 2
    start, stop, eot = events[:3]
    # Boundaries carry the audio time; decisions come later (a few frames, then the hangover,
    # then the end-of-turn silence).
    assert start.decided_ms > start.at_ms
    assert stop.decided_ms >= stop.at_ms + SETTINGS.vad.hangover_ms
    assert eot.decided_ms >= eot.at_ms + SETTINGS.vad.end_of_turn_ms


@pytest.mark.parametrize("chunk", [160, 320, 1111, 4800])
def test_chunk_size_does_not_change_events(two_sentences, chunk):
    signal, _ = two_sentences
    reference = [(type(e).__name__, getattr(e, "at_ms", None)) for e in run(signal, 320)]
    assert [(type(e).__name__, getattr(e, "at_ms", None)) for e in run(signal, chunk)] == reference


def test_pause_inside_utterance_gives_spans():
    a, b = clip("Sure."), clip("Our refund policy is simple.")
    gap = 300  # shorter than end_of_turn_ms, longer than the hangover
    signal = place(6000, (500, a), (500 + ms(a) + gap, b))
    events = run(signal)
    utts = [e.utterance for e in events if isinstance(e, EndOfTurn)]
    assert len(utts) == 1 and len(utts[0].spans) == 2
    assert [e.first_in_utterance for e in events if isinstance(e, SpeechStart)] == [True, False]
    pause = utts[0].spans[1].start_ms - utts[0].spans[0].end_ms
    assert abs(pause - gap) <= 25


def test_lost_audio_becomes_a_gap_on_the_clock(two_sentences):
    signal, truth = two_sentences
    pcm = to_int16(signal)
    ep = Endpointer("agent", SETTINGS.vad, SETTINGS.refine)
    events = []
    for i in range(0, len(pcm), 320):
        if 2000 * 16 <= i < 2500 * 16:
            continue  # 500 ms of frames never arrive
        events += ep.push(PcmFrame("agent", i, pcm[i : i + 320]))
    events += ep.flush()
    gaps = [e for e in events if isinstance(e, StreamGap)]
    assert len(gaps) == 1 and gaps[0].start_ms == 2000 and gaps[0].end_ms == 2500
    assert ep.gap_ms == 500
    second = [e.utterance for e in events if isinstance(e, EndOfTurn)][1]
    assert abs(second.start_ms - truth[1][0]) <= 10  # later audio still on the right time


def test_silence_and_clicks_give_nothing():
    signal = np.zeros(16000 * 3, dtype=np.float32)
    signal[16000 : 16000 + 48] = 0.8  # a 3 ms click
    assert [e for e in run(signal) if isinstance(e, EndOfTurn)] == []


def test_long_speech_is_split_at_max_utterance():
    settings = SETTINGS.with_overrides({"vad": {"max_utterance_ms": 2000}})
    long = np.concatenate([clip("one two three four five six seven eight nine ten")] * 2)
    events = run(place(ms(long) + 2000, (200, long)), settings=settings)
    utts = [e.utterance for e in events if isinstance(e, EndOfTurn)]
    assert len(utts) >= 2 and utts[0].forced
    assert all(u.end_ms - u.start_ms <= 2000 + 50 for u in utts)  # refinement may widen a bit
    assert all(isinstance(e, (SpeechStart, SpeechStop, EndOfTurn)) for e in events)


def test_stream_start_mid_speech_or_in_noise():
    """The first 500 ms have no noise floor yet: speech already under way is found at 0, and
    steady noise before the first words is not taken for speech."""
    speech = clip("I want a refund please, the parcel never came.")
    mid = run(speech[ms_samples(300) :].copy())  # the stream opens 300 ms into the words
    first = next(e.utterance for e in mid if isinstance(e, EndOfTurn))
    assert first.start_ms <= 20
    start = next(e for e in mid if isinstance(e, SpeechStart))
    assert start.decided_ms >= 500  # held until the first block had a floor

    rng = np.random.default_rng(3)
    signal = place(4000 + ms(speech), (600, speech))
    noise = rng.normal(0, 1, len(signal)).astype(np.float32)
    noise *= np.sqrt(np.mean(speech**2) / 10) / np.std(noise)  # 10 dB SNR
    utts = [e.utterance for e in run(signal + noise) if isinstance(e, EndOfTurn)]
    assert utts and abs(utts[0].start_ms - 600) <= 60


def ms_samples(n_ms: float) -> int:
    return int(16000 * n_ms / 1000)


def test_int16_envelope_is_the_float_envelope_bit_for_bit():
    """The endpointer's integer envelope (pcm_envelope_db) against the float reference."""
    from turnscope.asr.refine import envelope_db, pcm_envelope_db
    from turnscope.capture.frames import to_float32

    rng = np.random.default_rng(7)
    pcm = (rng.normal(0, 3000, 16000) * np.hanning(16000)).astype(np.int16)
    for lo, hi in [(0, 16000), (0, 37), (5, 900), (15990, 17000), (-20, 40)]:
        for window_ms in (1, 5, 20):
            expected = envelope_db(to_float32(pcm), window_ms, lo, hi)
            assert np.array_equal(pcm_envelope_db(pcm, window_ms, lo, hi), expected)


def test_a_lone_burst_after_the_last_word_does_not_extend_the_utterance():
    speech = clip("Okay, it shipped yesterday.")
    burst = speech[np.argmax(np.abs(speech)) - 480 :][:1040]  # 65 ms from the loudest vowel
    signal = place(ms(speech) + 3000, (300, speech), (300 + ms(speech) + 480, burst))
    events = run(signal)
    # The burst was heard as speech while it happened ...
    assert any(isinstance(e, SpeechStart) and e.at_ms > 300 + ms(speech) + 300 for e in events)
    # ... but the utterance ends with the words.
    (utt,) = [e.utterance for e in events if isinstance(e, EndOfTurn)]
    assert abs(utt.end_ms - (300 + ms(speech))) <= 15


def test_a_codecs_near_silence_after_the_first_zeros_is_not_a_noise_coming_on():
    """A live agent channel opens with a few frames of exact zeros, then Opus decoding a silent
    stream: about -110 dBFS (a few samples of +-1), its first frame near -96. That is no noise
    coming on after digital silence: taken for one (a CI run), the silence was forgotten, the
    background learnt from speech alone (-33 dBFS) and the quiet ends of words gated out."""
    rng = np.random.default_rng(5)
    words = clip("Your refund starts as soon as the parcel is scanned.")
    speech = to_int16(place(5000, (600, words)))
    pcm = np.zeros(len(speech) + 1440, dtype=np.int16)
    for k in range(9, len(pcm) // 160):  # as recorded: 90 ms of zeros, one frame of 62 samples
        at = rng.choice(160, 62 if k == 9 else 1 + k % 2, replace=False)  # then 1-2 per 10 ms
        pcm[k * 160 + at] = rng.choice([-1, 1], len(at)) * (2 if k == 9 else 1)
    pcm[1440:] += speech
    ep = Endpointer("agent", SETTINGS.vad, SETTINGS.refine)
    events = []
    for i in range(0, len(pcm), 320):
        events += ep.push(PcmFrame("agent", i, pcm[i : i + 320]))
    events += ep.flush()
    assert ep._gate.rose is None and (ep.background_db or 0) < -90, ep.background_db
    utts = [e.utterance for e in events if isinstance(e, EndOfTurn)]
    assert len(utts) == 1 and len(utts[0].spans) <= 3, [u.spans for u in utts]


def test_a_noisy_line_opening_with_a_codecs_ramp_and_lost_packets_is_noise_not_speech():
    """A caller on street noise as a live agent hears it over Opus: 80 ms of zeros, one frame
    of the codec's ramp (-93 dBFS), a lost packet, then the noise; later 3% of the 20 ms
    packets lost (zeros); the noise's first frame may be partly zeros (it came on inside it).
    Neither the ramp, that frame nor a lost packet's zeros is the noise's floor: were any, the
    noise would pass the gate as speech (as recorded: a caller "turn" from 107-120 ms, and the
    reference agent skipped its greeting, in 1 of 8 load calls for the partial frame)."""
    for into_frame in (0, 96, 144, 152):  # the noise's first frame partly zeros (9-13 dB under)
        events = run(_noisy_line(into_frame), channel="caller")
        utts = [
            (u.start_ms, u.end_ms)
            for u in (e.utterance for e in events if isinstance(e, EndOfTurn))
        ]
        assert [round(start, -3) for start, _ in utts] == [7000, 14000], (into_frame, utts)


def _noisy_line(into_frame: int) -> np.ndarray:
    """Two caller lines on 12 dB noise as heard over Opus: zeros, the codec's ramp, a lost
    packet, the noise from ``into_frame`` samples into its first 10 ms frame, 3% of its packets
    lost."""
    a = clip("Hi, I bought a pair of headphones last week and I would like a refund please.")
    b = clip("Do I have to send the headphones back before I get my refund?")
    signal = place(20000, (7000, a), (14000, b))
    rng = np.random.default_rng(4)
    bed = rng.normal(0, 1, len(signal)) * np.sqrt(np.mean(a**2) / 10 ** (12 / 10))
    pcm = to_int16(signal + bed)
    pcm[: 80 * 16] = 0
    pcm[80 * 16 : 90 * 16] = rng.normal(0, 0.7, 160).astype(np.int16)  # the ramp: -93 dBFS
    pcm[90 * 16 : 100 * 16 + into_frame] = 0
    lost = rng.random(len(pcm) // 320) < 0.03
    for k in np.flatnonzero(lost):
        pcm[k * 320 : (k + 1) * 320] = 0
    assert lost.sum() >= 20
    return pcm


def test_a_quiet_first_consonant_after_digital_silence_starts_the_turn_wherever_it_falls():
    """A prompt over a phone line (mu-law, 8 kHz) into digital silence: espeak-ng's "th" of
    "Thank you" is 40 dB under the vowel. Where it fell against the VAD's 10 ms frames decided
    whether it was counted: one offset in ten started the turn at the vowel, 76 ms late (a third
    of the phone-line test calls). Sound continuous from digital silence into the speech, shorter
    than a breath, is the speech's start."""
    import soxr

    from turnscope.capture.frames import to_float32
    from turnscope.capture.telephony.codec import codec
    from turnscope.capture.telephony.line import to_line

    words = clip("Thank you for calling Northwind customer care.", "en-gb")
    heard = soxr.resample(to_float32(to_line(words, codec("mulaw"))), 8000, 16000)
    errors = []
    for offset in range(10):
        pcm = to_int16(place(5000, (800 + offset, heard)))
        (utt,) = [e.utterance for e in run(to_float32(pcm)) if isinstance(e, EndOfTurn)]
        errors.append(utt.start_ms - np.flatnonzero(pcm)[0] / 16)
    assert all(abs(e) <= 5 for e in errors), errors


def test_events_do_not_depend_on_chunking_where_a_noise_comes_on_before_the_speech():
    """Digital silence, a steady noise coming on, a sentence in the same 500 ms gate block: the
    block's end makes the noise the floor. A batch that held that end was gated whole, so the
    floor changed under its earlier frames too: a 250 ms chunking told a live start 1-6 ms off
    a 10 ms one (a replay runs 200 ms chunks, a live call 20 ms)."""
    words = clip("Unless to be rather cold hearted and rather selfish.")
    rng = np.random.default_rng(3)
    for tone_at in (520, 560, 600):
        for speech_at in (760, 820, 880, 920, 950):
            signal = place(3000, (speech_at, words))
            tone = rng.normal(0, 1, len(signal)) * 10 ** (-55 / 20)
            tone[: tone_at * 16] = 0
            pcm = to_int16(signal + tone)
            told = {
                chunk: [(type(e).__name__, getattr(e, "at_ms", None)) for e in run(pcm, chunk)]
                for chunk in (160, 320, 4000, 4100)
            }
            assert told[320] == told[160] == told[4000] == told[4100], (tone_at, speech_at)


def test_a_syllable_cut_off_after_digital_silence_is_no_noise_coming_on():
    """A block of the stock pipecat bot's agent channel (10 ms frames, dBFS): zeros, its next
    reply's first syllable cut off by a barge-in, zeros. It was taken for a steady noise coming
    on at -89 dBFS (the median of what followed the first sound was the syllable's last frame),
    the zeros forgotten, and the channel's background learnt from speech: "a loud constant
    background (-30 dBFS)". A noise that comes on fills at least half the block."""
    from turnscope.asr.noise import _noise_onset

    silent = -240.0
    syllable = [-42, -30, -27, -26, -25, -24, -22, -19, -15, -16, -17, -19, -23, -27, -70, -89]
    block_db = [silent] * 19 + syllable + [silent] * 15
    energy = [10 ** (d / 10) if d > silent else 0.0 for d in block_db]
    assert _noise_onset(energy, ramp=3) is None
    hum = [silent] * 19 + [-50.0 + (k % 3) for k in range(31)]  # a steady hum from frame 19
    assert _noise_onset([10 ** (d / 10) if d > silent else 0.0 for d in hum], ramp=3) == 19
