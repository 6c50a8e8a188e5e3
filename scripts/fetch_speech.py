"""Fetch the recordings of real people the accuracy benchmark and the tests use.

    .venv/bin/python scripts/fetch_speech.py [--dest .turnscope/speech]

Three PyPI packages carry recorded speech with human annotation (see benchmarks/realspeech.py):
the pyannote.audio wheel (a recorded telephone call, RTTM + STM), the pocketsphinx sdist
(LibriVox read speech with speech labels) and the praatio sdist (two read sentences with
TextGrids). They are downloaded by pip, pinned by hash (scripts/speech-packages.txt), and only
the audio and annotation files are kept. Run by ``scripts/setup.sh --dev``; idempotent.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REQUIREMENTS = ROOT / "scripts" / "speech-packages.txt"
# package file name prefix -> (member prefix inside the archive, folder under dest)
WANTED = {
    "pyannote_audio-": ("pyannote/audio/sample/sample.", "pyannote"),
    "pocketsphinx-": ("pocketsphinx-5.1.1/test/data/librivox/sense_and_sensibility", "librivox"),
    "praatio-": ("praatio-6.2.2/examples/files/", "praatio"),
}
PRAATIO_FILES = ("bobby.wav", "bobby_words.TextGrid", "mary.wav", "mary.TextGrid")
STAMP = "fetched.txt"


def keep(name: str, prefix: str) -> bool:
    if not name.startswith(prefix):
        return False
    if prefix.endswith("examples/files/"):
        return name[len(prefix) :] in PRAATIO_FILES
    return name.endswith((".wav", ".rttm", ".stm", ".lab", ".txt"))


def extract(archive: Path, prefix: str, out: Path) -> int:
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    if archive.suffix == ".whl":
        with zipfile.ZipFile(archive) as z:
            for name in z.namelist():
                if keep(name, prefix):
                    (out / Path(name).name).write_bytes(z.read(name))
                    n += 1
    else:
        with tarfile.open(archive) as t:
            for member in t.getmembers():
                if member.isfile() and keep(member.name, prefix):
                    data = t.extractfile(member)
                    if data is not None:
                        (out / Path(member.name).name).write_bytes(data.read())
                        n += 1
    return n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dest", type=Path, default=ROOT / ".turnscope" / "speech")
    args = parser.parse_args()
    stamp = args.dest / STAMP
    if stamp.exists() and stamp.read_text() == REQUIREMENTS.read_text():
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        for line in REQUIREMENTS.read_text().splitlines():
            if not line.strip() or line.startswith("#"):
                continue
            # The wheel is the archive that holds pyannote's sample; the others ship their
            # recordings in the sdist only.
            kind = "--only-binary" if line.startswith("pyannote") else "--no-binary"
            req = Path(tmp) / "req.txt"
            req.write_text(line + "\n")
            cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--require-hashes",
                   kind, ":all:", "-r", str(req), "-d", tmp, "-q"]  # fmt: skip
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stderr[-2000:], file=sys.stderr)
                print(f"turnscope setup: could not download {line.split()[0]}", file=sys.stderr)
                return 1
        for archive in Path(tmp).iterdir():
            for start, (prefix, folder) in WANTED.items():
                if archive.name.startswith(start) and not extract(
                    archive, prefix, args.dest / folder
                ):
                    print(f"turnscope setup: nothing found in {archive.name}", file=sys.stderr)
                    return 1
    stamp.write_text(REQUIREMENTS.read_text())
    print(f"turnscope setup: speech recordings in {args.dest}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
