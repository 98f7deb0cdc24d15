"""What an inference read of the bindings still being inferred, so that a later round of
:func:`~pr_context.graph.types.bind_types` re-infers only values whose inputs changed.

In a round, the tables' ``variables``, ``attributes`` and ``globals`` are
:class:`RecordedMap` s and ``returned`` (the memo of what functions return) a
:class:`RecordedMemo`, all sharing one :class:`ReadLog`. Each inference in progress has a
frame of the keys it read; a memoised return value keeps its own reads and adds them to
whoever uses it. A value that met a recursive call still being inferred depends on the
order of evaluation: it reads :data:`EVERYTHING` and is inferred again every round.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

__all__ = ["EVERYTHING", "Read", "ReadLog", "RecordedMap", "RecordedMemo"]

Read = tuple[str, Hashable]  # (which mapping, key)
EVERYTHING: Read = ("*", None)


class ReadLog:
    """The reads of the inferences in progress, innermost last."""

    def __init__(self) -> None:
        self.frames: list[set[Read]] = []

    def note(self, read: Read) -> None:
        if self.frames:
            self.frames[-1].add(read)

    def note_all(self, reads: Iterable[Read]) -> None:
        if self.frames:
            self.frames[-1].update(reads)

    def start(self) -> None:
        self.frames.append(set())

    def finish(self) -> set[Read]:
        """The innermost frame's reads, which the frame around it read too."""
        reads = self.frames.pop()
        self.note_all(reads)
        return reads


class RecordedMap(dict[Any, Any]):
    """A mapping whose lookups are noted in ``log`` as ``(tag, key)``."""

    def __init__(self, data: Iterable[tuple[Any, Any]], log: ReadLog, tag: str) -> None:
        super().__init__(data)
        self.log = log
        self.tag = tag

    def get(self, key: Any, default: Any = None) -> Any:
        self.log.note((self.tag, key))
        return dict.get(self, key, default)

    def __contains__(self, key: object) -> bool:
        self.log.note((self.tag, key))
        return dict.__contains__(self, key)

    def __getitem__(self, key: Any) -> Any:
        self.log.note((self.tag, key))
        return dict.__getitem__(self, key)


class RecordedMemo(dict[Any, Any]):
    """A memo filled as ``memo[key] = None`` (computing), then ``memo[key] = value``."""

    def __init__(self, log: ReadLog) -> None:
        super().__init__()
        self.log = log
        self.open: set[Any] = set()
        self.reads: dict[Any, set[Read]] = {}

    def __contains__(self, key: object) -> bool:
        if not dict.__contains__(self, key):
            return False
        if key in self.open:
            self.log.note(EVERYTHING)  # a recursive call: answered by evaluation order
        else:
            self.log.note_all(self.reads.get(key, (EVERYTHING,)))
        return True

    def __setitem__(self, key: Any, value: Any) -> None:
        if key in self.open:
            self.open.discard(key)
            self.reads[key] = self.log.finish()
        elif not dict.__contains__(self, key):
            self.open.add(key)
            self.log.start()
        dict.__setitem__(self, key, value)
