"""Read a coverage.py data file: the only module that opens one.

The file is SQLite (coverage.py 5 to 7, schema version 7): tables ``meta``, ``file``
(measured paths), ``context`` (per-test labels), ``line_bits`` (executed lines per file
and context as *numbits*: bit ``j`` of byte ``i`` says line ``8 * i + j`` ran) or, with
branch coverage, ``arc`` (executed transitions; a positive end is a line that ran). It
is opened read-only through the standard library's ``sqlite3`` and never written; the
code it measured is never run.

Every way the file can be unusable (missing, not SQLite, truncated, another schema, a
coverage.py 4 JSON file, rows that do not decode) is a :class:`CoverageFileError` that
names the file.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

from pr_context.errors import CoverageFileError

__all__ = ["SCHEMA_VERSION", "CoverageReader", "lines_to_numbits", "numbits_to_lines"]

SCHEMA_VERSION = 7  # coverage.py 5.0 through 7.x
_TABLES = frozenset({"coverage_schema", "meta", "file", "context", "line_bits", "arc"})
_JSON_MARKER = b"!coverage.py: This is a private format"  # coverage.py 4 and older


def numbits_to_lines(numbits: bytes) -> frozenset[int]:
    """The line numbers a numbits blob holds."""
    return _set_bits(int.from_bytes(numbits, "little"))


def _set_bits(value: int) -> frozenset[int]:
    found = []
    while value:
        low = value & -value
        found.append(low.bit_length() - 1)
        value ^= low
    return frozenset(found)


def lines_to_numbits(lines: Collection[int]) -> bytes:
    """The numbits blob of ``lines`` (positive line numbers)."""
    value = 0
    for line in lines:
        value |= 1 << line
    return value.to_bytes((value.bit_length() + 7) // 8, "little")


@dataclass(frozen=True)
class _Shape:
    has_arcs: bool
    files: dict[str, int]  # measured path -> file id
    contexts: dict[int, str]  # context id -> label ("" for none)


class CoverageReader:
    """One coverage.py data file, open read-only. Use it as a context manager.

    :raises CoverageFileError: the file is missing or is not coverage.py 5-7 data.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._db = _connect(path)
        try:
            self._shape = self._read_shape()
        except CoverageFileError:
            self._db.close()
            raise

    def __enter__(self) -> CoverageReader:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        self._db.close()

    @property
    def measured_paths(self) -> tuple[str, ...]:
        """Every path the file holds, as coverage.py recorded it (often absolute)."""
        return tuple(sorted(self._shape.files))

    @property
    def contexts(self) -> dict[int, str]:
        """context id -> label, for every context with data."""
        return dict(self._shape.contexts)

    @property
    def has_arcs(self) -> bool:
        return self._shape.has_arcs

    def executed_lines(self, measured_path: str) -> frozenset[int]:
        """Every line of ``measured_path`` that ran, in any context."""
        file_id = self._shape.files[measured_path]
        with self._errors():
            if self._shape.has_arcs:
                rows = self._db.execute(
                    "SELECT fromno FROM arc WHERE file_id = ? AND fromno > 0 UNION "
                    "SELECT tono FROM arc WHERE file_id = ? AND tono > 0",
                    (file_id, file_id)).fetchall()
                return frozenset(int(n) for (n,) in rows)
            union = 0
            for (blob,) in self._db.execute(
                    "SELECT numbits FROM line_bits WHERE file_id = ?", (file_id,)):
                union |= int.from_bytes(_blob(blob), "little")
        return _set_bits(union)

    def contexts_executing(self, measured_path: str, lines: Collection[int]) -> set[int]:
        """Ids of the contexts that ran any of ``lines`` of ``measured_path``."""
        file_id = self._shape.files.get(measured_path)
        if file_id is None or not lines:
            return set()
        with self._errors():
            if self._shape.has_arcs:
                wanted = set(lines)
                return {int(c) for c, a, b in self._db.execute(
                    "SELECT context_id, fromno, tono FROM arc WHERE file_id = ?", (file_id,))
                        if a in wanted or b in wanted}
            mask = int.from_bytes(lines_to_numbits(lines), "little")
            return {int(c) for c, blob in self._db.execute(
                "SELECT context_id, numbits FROM line_bits WHERE file_id = ?", (file_id,))
                    if int.from_bytes(_blob(blob), "little") & mask}

    def _read_shape(self) -> _Shape:
        with self._errors():
            tables = {r[0] for r in self._db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")}
            missing = sorted(_TABLES - tables)
            if missing:
                raise CoverageFileError(
                    f"{self.path} is not coverage.py data: no table {missing[0]!r} "
                    "(expected a .coverage file written by coverage.py 5 or later)")
            version = self._db.execute("SELECT version FROM coverage_schema").fetchone()
            if version is None or int(version[0]) != SCHEMA_VERSION:
                raise CoverageFileError(
                    f"{self.path} has coverage data schema {version and version[0]}; "
                    f"pr-context reads schema {SCHEMA_VERSION} (coverage.py 5 to 7)")
            meta = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
            files = {str(p): int(i) for i, p in self._db.execute("SELECT id, path FROM file")}
            contexts = {int(i): str(c or "") for i, c in self._db.execute(
                "SELECT id, context FROM context")}
        return _Shape(meta.get("has_arcs") in ("1", "True", "true", 1), files, contexts)

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except (sqlite3.Error, ValueError, TypeError, OverflowError) as exc:
            raise CoverageFileError(f"cannot read coverage data {self.path}: {exc} "
                                    "(is the file truncated or corrupted? regenerate it)"
                                    ) from exc


def _blob(value: object) -> bytes:
    if not isinstance(value, bytes | bytearray | memoryview):
        raise ValueError(f"a numbits value is {type(value).__name__}, not bytes")
    return bytes(value)


def _connect(path: Path) -> sqlite3.Connection:
    """A read-only connection; nothing (not even a journal) is written beside the file."""
    try:
        with path.open("rb") as f:
            head = f.read(64)
    except OSError as exc:
        raise CoverageFileError(f"cannot read coverage data {path}: {exc.strerror}") from exc
    if head.startswith(_JSON_MARKER):
        raise CoverageFileError(f"{path} is coverage.py 4 data (JSON); regenerate it with "
                                "coverage.py 5 or later")
    if not head.startswith(b"SQLite format 3\0"):
        raise CoverageFileError(f"{path} is not a coverage.py data file (not SQLite): "
                                "pass the .coverage file that pytest --cov wrote")
    try:
        return sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro&immutable=1", uri=True)
    except sqlite3.Error as exc:
        raise CoverageFileError(f"cannot open coverage data {path}: {exc}") from exc
