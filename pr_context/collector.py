"""Python's cyclic garbage collector, paused while a process builds what it keeps.

Loading an index (the corpus, the graph) and splicing files into it make millions of
small objects that live as long as the process or the view holding them. Each full
collection those allocations set off walks every one of them again: most of a splice's
time and a quarter of a graph load's CPU time, measured on sphinx. Whatever the paused
code leaves as garbage is collected afterwards, when the collector runs again.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off for the block, and on again after it if it was on (nested
    pauses leave it to the outermost)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
