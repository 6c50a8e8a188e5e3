"""The report you can listen to: both channels embedded as one stereo Ogg Opus (caller left,
agent right), a player, and a small script that plays from a turn, a latency bar or a barge-in
when it is clicked (anything with ``data-t``: seconds on the call clock)."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import soundfile as sf

from turnscope.jsonio import native_path
from turnscope.scoring.report.markup import e

MAX_EMBED_S = 20 * 60  # longer calls: at ~3 kB/s of Opus the report would pass 4 MB
RATE = 16000
BLOCK = RATE * 10  # samples per channel handed to the encoder at a time

# It marks the page when it runs (data-seek on <html>): the tests see the policy let it run.
SEEK = """
document.documentElement.dataset.seek='on';
document.addEventListener('click',function(ev){
 var el=ev.target.closest('[data-t]');var a=document.getElementById('call-audio');
 if(!el||!a)return;ev.preventDefault();a.currentTime=Math.max(0,parseFloat(el.dataset.t));a.play();
});
"""


# Encoded ahead (``prepare``), by bundle, with the sizes and times of the files they came from.
_prepared: dict[Path, tuple[tuple[tuple[int, int], ...], bytes | None]] = {}


def _channels(bundle: Path) -> list[Path]:
    return [bundle / "caller.wav", bundle / "agent.wav"]


def _stamp(paths: list[Path]) -> tuple[tuple[int, int], ...] | None:
    try:
        stats = [p.stat() for p in paths]
    except OSError:
        return None
    return tuple((st.st_size, st.st_mtime_ns) for st in stats)


def prepare(bundle: Path) -> None:
    """Encode the bundle's audio now (its recording is complete), for the report to embed later
    unless the files have changed by then."""
    paths = _channels(bundle)
    stamp = _stamp(paths)
    if stamp is not None:
        _prepared[bundle.resolve()] = (stamp, _encode(paths))


def opus_of(bundle: Path) -> bytes | None:
    """caller.wav and agent.wav as stereo Ogg Opus, or None (missing, or too long)."""
    paths = _channels(bundle)
    ahead = _prepared.pop(bundle.resolve(), None)
    if ahead is not None and ahead[0] == _stamp(paths):
        return ahead[1]
    return _encode(paths)


def _encode(paths: list[Path]) -> bytes | None:
    if not all(p.is_file() for p in paths):
        return None
    try:
        with (
            sf.SoundFile(native_path(paths[0])) as caller,
            sf.SoundFile(native_path(paths[1])) as agent,
        ):
            # The length from the headers first: a call too long to embed is never read (a
            # 3-hour call read whole was 1.4 GB of samples).
            n = max(caller.frames, agent.frames)
            if n == 0 or n > MAX_EMBED_S * RATE:
                return None
            return _ogg_opus(_stereo_blocks(caller, agent, n))
    except (OSError, RuntimeError, sf.LibsndfileError):
        return None


def _stereo_blocks(caller: sf.SoundFile, agent: sf.SoundFile, n: int) -> Iterator[np.ndarray]:
    """Both channels as interleaved int16 blocks of BLOCK frames (the shorter one padded with
    silence to ``n``): the call is never in memory whole."""
    for start in range(0, n, BLOCK):
        both = np.zeros((min(BLOCK, n - start), 2), np.int16)
        for i, f in enumerate((caller, agent)):
            c = f.read(len(both), dtype="float32", always_2d=True)[:, 0]
            both[: len(c), i] = np.clip(c * 32767.0, -32768, 32767).astype(np.int16)
        yield both


def _ogg_opus(blocks: Iterable[np.ndarray]) -> bytes:
    """Stereo 16 kHz int16 blocks as Ogg Opus, through FFmpeg's libopus (PyAV).

    24 kbit/s in VoIP mode keeps speech clear enough to review (a 10-minute call is 1.8 MB);
    encoder complexity 5 costs a fifth of libsndfile's Opus writer for the same call
    (benchmarks/replay_speed.py shows the whole replay)."""
    import av

    out = io.BytesIO()
    with av.open(out, "w", format="ogg") as container:
        stream = container.add_stream("libopus", rate=RATE, layout="stereo")
        stream.bit_rate = 24000
        stream.codec_context.options = {"compression_level": "5", "application": "voip"}
        for block in blocks:
            frame = av.AudioFrame.from_ndarray(
                np.ascontiguousarray(block.reshape(1, -1)),
                format="s16",
                layout="stereo",
            )
            frame.sample_rate = RATE
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


def player(bundle: Path) -> str:
    """The audio section: the player, or why there is none."""
    data = opus_of(bundle)
    if data is None:
        return (
            '<section id="listen"><h2>Listen</h2><div class="box note">The call audio is not '
            f"embedded (missing, or longer than {MAX_EMBED_S // 60} minutes): open "
            f"{e('caller.wav')} / {e('agent.wav')} beside this report.</div></section>"
        )
    src = "data:audio/ogg;base64," + base64.b64encode(data).decode("ascii")
    return (
        '<section id="listen"><h2>Listen</h2><div class="meta">Caller left, agent right. Click '
        "a turn, a latency bar or a barge-in to play from there.</div>"
        f'<audio id="call-audio" controls preload="auto" src="{src}" style="width:100%">'
        "</audio></section>"
    )
