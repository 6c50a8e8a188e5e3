"""A process settled before its first live call: what the call would import on first use
imported now, and the heap left by start-up moved out of the garbage collector's way."""

from __future__ import annotations

import contextlib
import gc
import importlib

__all__ = ["BUNDLE_MODULES", "ENDPOINTER_MODULES", "WARM_MODULES", "import_now", "settle_heap"]

_heap_settled = False

# What a call imports on first use on its event loop, mid-call: numpy.ma on a turn's first close
# (its first np.median; 20-70 ms with no bytecode cache, every caller frame of a load worker's
# calls 40-67 ms late at once), the report's audio module as a call ends (other calls of the
# process may still be live). What the bundle's thread imports after a call (WER, the report's
# pictures: 0.6-0.8 s with no bytecode cache) is left to it: imported here, it took that much
# CPU from every load worker as its calls connected (in CI on 2 cores, once, the first calls'
# agent was then slow to yield to their barge-ins).
ENDPOINTER_MODULES = ("numpy.ma",)  # what the endpointer alone imports (the reference agent's)
WARM_MODULES = (
    *ENDPOINTER_MODULES,
    "turnscope.scoring.report.listen",
    "av.subtitles.stream",
    "importlib.readers",  # a package's files read by the bundle (importlib.resources)
    # The caller's in-step check as its script ends (other calls may be live): 80 ms to import.
    "whisper_normalizer.english",
)


# What the bundle's thread imports after a call (WER, the report and its pictures; PIL loads its
# image plugins on its first save): 93 modules. In a load worker its other calls are live then,
# and a module compiled from source (PYTHONDONTWRITEBYTECODE, as these machines run Python)
# holds the GIL from their loop: caught at the first call's end, the loop 25-30 ms stale with
# the bundle thread compiling. A load worker imports them while it prepares, before any call
# (turnscope/load/calls.py): nothing is live yet, and a single call has nothing live beside it.
BUNDLE_MODULES = (
    "turnscope.scoring.report.html",
    "turnscope.scoring.redrive",
    "jiwer",
    "PIL.PngImagePlugin",
    "PIL.BmpImagePlugin",
    "PIL.GifImagePlugin",
    "PIL.JpegImagePlugin",
    "PIL.PpmImagePlugin",
    "PIL.ImageChops",
    "PIL.ImageSequence",
)


def import_now(names: tuple[str, ...]) -> None:
    """Import ``names`` (a module a later version moved is left to be imported lazily)."""
    for name in names:
        with contextlib.suppress(ImportError):
            importlib.import_module(name)


def settle_heap(names: tuple[str, ...] = WARM_MODULES) -> None:
    """Once per process, before its first call connects: import what a call would import on
    first use (``names``, about 35 ms), then move what the imports and the set-up left on the
    heap out of the garbage collector's way (gc.freeze). A full collection scans every tracked
    object with the event loop stopped; over that heap it held 32 live calls' audio up 40 ms."""
    global _heap_settled
    if not _heap_settled:
        _heap_settled = True
        import_now(names)
        gc.collect()
        gc.freeze()
