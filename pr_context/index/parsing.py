"""Reading files at a revision and parsing them into index rows, in worker processes.

``Parsing`` reads each file's blob, judges it by the path policy and its content, and
parses what is indexed; ``ParsePool`` spreads the parsing over forked workers and gives
the results back in order; ``Rows`` gathers them column-wise, as Arrow tables, for one
DuckDB insert. Each file also gets a digest of its rows, computed where it was parsed.
"""

from __future__ import annotations

import bisect
import functools
import gc
import hashlib
import json
import multiprocessing
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import pyarrow as pa

from pr_context.git import SUBMODULE_MODE, SYMLINK_MODE
from pr_context.index.store import TableRows, arrow_table
from pr_context.languages import language_for_path
from pr_context.models import Chunk, FileEntry, ParsedFile, Reference
from pr_context.parse import parse_file
from pr_context.policy import (
    PathPolicy,
    decode_text,
    skip_reason_for_content,
    skip_reason_for_path,
)
from pr_context.progress import Progress
from pr_context.retrieve.lexical import chunk_terms
from pr_context.roles import classify_path

__all__ = ["BlobSource", "ParsePool", "Parsing", "Rows", "skip_reason_by_entry"]

FREEZE_FILES = 256  # files parsed between conversions of their rows to Arrow
PARALLEL_MIN_FILES = 48  # below this, starting workers costs more than it saves
PARSE_CHUNK_FILES = 4  # files per task: small, so a few big files do not idle a worker


class BlobSource(Protocol):
    """Where file contents come from: git's ``BlobReader``, or a work tree's files."""

    def read(self, blob_sha: str) -> bytes: ...


@dataclass
class Rows:
    """Rows of the files being (re)indexed, column-wise per table.

    Rows are gathered in Python lists and turned into Arrow tables every FREEZE_FILES
    files: columnar Arrow takes a fraction of the memory of Python objects, which keeps a
    large build's peak memory down.
    """

    keep_texts: bool  # only an embedding build needs the texts
    texts: dict[str, str] = field(default_factory=dict)  # text_hash -> embed text
    _pending: dict[str, TableRows] = field(default_factory=dict)
    _frozen: dict[str, list[pa.Table]] = field(default_factory=dict)

    def add(self, table: str, **values: object) -> None:
        columns = self._pending.setdefault(table, {})
        for name, value in values.items():
            columns.setdefault(name, []).append(value)

    def extend(self, columns: Mapping[str, Mapping[str, list[object]]]) -> None:
        """Append whole columns, as ``_file_rows`` builds them."""
        for table, values in columns.items():
            pending = self._pending.setdefault(table, {})
            for name, column in values.items():
                pending.setdefault(name, []).extend(column)

    def freeze(self) -> None:
        for table, columns in self._pending.items():
            self._frozen.setdefault(table, []).append(arrow_table(columns))
        self._pending = {}

    def tables(self) -> dict[str, pa.Table]:
        self.freeze()
        return {table: pa.concat_tables(parts, promote_options="default")
                for table, parts in self._frozen.items()}


class Parsing:
    """Reading and parsing files into rows: begun when made, collected by ``rows``.

    With worker processes, every file is read and queued at once, so the workers parse
    while the parent goes on; without, reading and parsing happen in ``rows``.
    """

    def __init__(self, entries: Sequence[FileEntry], blobs: BlobSource, policy: PathPolicy,
                 progress: Progress, parsers: ParsePool, keep_texts: bool,
                 terms_of: TermsOf = chunk_terms) -> None:
        """``terms_of``: a chunk text's BM25 terms (``chunk_terms``, or what a caller
        already holds for texts it has counted)."""
        self._rows = Rows(keep_texts)
        self._progress = progress
        self._pending: deque[_ParseJob] = deque()  # queued; result not taken yet
        progress.start("parsing files", len(entries))
        if parsers.start(entries):
            # Largest first: the last tasks are small, so both workers finish together.
            entries = sorted(entries, key=lambda e: -e.size)
        self._results = parsers.map(self._read(entries, blobs, policy), keep_texts, terms_of)

    def _read(self, entries: Sequence[FileEntry], blobs: BlobSource,
              policy: PathPolicy) -> Iterator[_ParseJob]:
        for entry in entries:
            job = _read_entry(entry, blobs, policy, self._rows)
            if job is None:
                self._progress.advance()
                continue
            self._pending.append(job)
            yield job

    def rows(self, each: Callable[[Mapping[str, str]], None] | None = None) -> Rows:
        """Every file's rows; ``each`` is given each parsed file's texts (hash -> embed
        text) as soon as it is parsed, in order."""
        rows = self._rows
        for number, parsed in enumerate(self._results, 1):
            entry, _text, language, decode_errors = self._pending.popleft()
            _add_file_row(rows, entry, language, parsed.role, "indexed", None,
                          parsed.syntax_errors, decode_errors, parsed.digest)
            rows.extend(parsed.columns)
            rows.texts.update(parsed.texts)
            if each is not None:
                each(parsed.texts)
            self._progress.advance()
            if number % FREEZE_FILES == 0:
                rows.freeze()
        self._progress.finish()
        return rows


_ParseJob = tuple[FileEntry, str, str, bool]  # entry, decoded text, language, decode errors
TermsOf = Callable[[str], tuple[list[str], list[int]]]


@dataclass(frozen=True)
class _FileRows:
    """One parsed file as columns of plain values: cheap to send back from a worker."""

    role: str
    syntax_errors: int
    columns: dict[str, dict[str, list[object]]]
    texts: dict[str, str]  # text_hash -> embed text, when an embedding build needs them
    digest: str  # of the columns, computed here so that workers share the hashing


def _read_entry(entry: FileEntry, blobs: BlobSource, policy: PathPolicy,
                rows: Rows) -> _ParseJob | None:
    """The file's parse job, or None after recording why it is skipped."""
    language = language_for_path(entry.path)
    reason = skip_reason_by_entry(entry, policy)
    data = b""
    if reason is None:
        data = blobs.read(entry.blob_sha)
        reason = skip_reason_for_content(policy, entry.path, data)
    if reason is not None or language is None:
        _add_file_row(rows, entry, language, classify_path(entry.path, ""), "skipped",
                      reason or "unsupported file type")
        return None
    text, decode_errors = decode_text(data)
    return entry, text, language, decode_errors


def _parse_job(job: _ParseJob, keep_texts: bool, terms_of: TermsOf = chunk_terms
               ) -> _FileRows:
    entry, text, language, _decode_errors = job
    parsed = parse_file(entry.path, text, language, classify_path(entry.path, text))
    return _file_rows(parsed, keep_texts, terms_of)


class ParsePool:
    """Worker processes that parse files in order, or the parent alone for few files.

    fork: the workers inherit the parent's modules and need no imports; each loads the
    grammars and compiles the tag queries it meets, while the parent goes on reading
    files and opening the index. They touch neither DuckDB nor the model, which are the
    parent's alone.
    """

    def __init__(self, workers: int) -> None:
        self._workers = min(workers, os.cpu_count() or 1)
        self._pool: ProcessPoolExecutor | None = None

    def start(self, entries: Sequence[FileEntry]) -> bool:
        """Start the workers unless ``entries`` are too few; True when workers run."""
        if self._pool is not None:
            return True
        if self._workers < 2 or len(entries) < PARALLEL_MIN_FILES:
            return False
        # A worker lives for one build and makes few reference cycles: the cyclic
        # collector would only rescan the parse's short-lived records again and again.
        self._pool = ProcessPoolExecutor(
            self._workers, mp_context=multiprocessing.get_context("fork"),
            initializer=gc.disable)
        return True

    def map(self, jobs: Iterator[_ParseJob], keep_texts: bool,
            terms_of: TermsOf = chunk_terms) -> Iterator[_FileRows]:
        """Parse results in the order of ``jobs``. Workers are handed every job at once;
        the parent alone takes each job as it comes to it.

        Results come back in order, so the parent turns them into Arrow batches as they
        arrive (peak memory).
        """
        parse = functools.partial(_parse_job, keep_texts=keep_texts, terms_of=terms_of)
        if self._pool is None:
            return map(parse, jobs)
        return self._pool.map(parse, jobs, chunksize=PARSE_CHUNK_FILES)

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> ParsePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def skip_reason_by_entry(entry: FileEntry, policy: PathPolicy) -> str | None:
    """Why the entry is not read, judged by its mode, path and size; None to read it."""
    if entry.mode == SYMLINK_MODE:
        return "symlink (not followed)"
    if entry.mode == SUBMODULE_MODE:
        return "submodule (not indexed)"
    return skip_reason_for_path(policy, entry.path, entry.size)


def _add_file_row(rows: Rows, entry: FileEntry, language: str | None, role: str,
                  status: str, reason: str | None, syntax_errors: int = 0,
                  decode_errors: bool = False, content_digest: str = "") -> None:
    """The file's row, and its digest over that row and the rows parsed from it."""
    values = {"path": entry.path, "blob_sha": entry.blob_sha, "language": language,
              "role": role, "size": entry.size, "status": status, "skip_reason": reason,
              "syntax_errors": syntax_errors, "decode_errors": decode_errors}
    rows.add("files", **values)
    digest = hashlib.sha256(json.dumps([values, content_digest]).encode()).hexdigest()
    rows.add("file_digests", path=entry.path, digest=digest)


def _file_rows(parsed: ParsedFile, keep_texts: bool, terms_of: TermsOf = chunk_terms
               ) -> _FileRows:
    """The file's chunk, definition, reference, import, message and syntax-use rows,
    column-wise.

    Each column is built whole from the parsed records: a file has thousands of rows.
    """
    path = parsed.path
    chunks, defs, refs, imports = (parsed.chunks, parsed.definitions, parsed.references,
                                   parsed.imports)
    texts: dict[str, str] = {}
    text_hashes: list[object] = []
    terms: list[object] = []
    term_counts: list[object] = []
    for c in chunks:
        embed_text = c.embed_text
        text_hash = hashlib.sha256(embed_text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        text_hashes.append(text_hash)
        # Lexical search reads the same text; counted here, in the parsing workers.
        chunk_words, chunk_counts = terms_of(embed_text)
        terms.append(chunk_words)
        term_counts.append(chunk_counts)
        if keep_texts:
            texts[text_hash] = embed_text
    columns: dict[str, dict[str, list[object]]] = {}
    if chunks:
        columns["chunks"] = {
            "chunk_id": [_chunk_id(path, i, c) for i, c in enumerate(chunks)],
            "path": [path] * len(chunks), "ordinal": list(range(len(chunks))),
            "kind": [c.kind for c in chunks], "symbol": [c.symbol for c in chunks],
            "role": [c.role for c in chunks],
            "start_line": [c.start_line for c in chunks],
            "end_line": [c.end_line for c in chunks], "text": [c.text for c in chunks],
            "context": [c.context for c in chunks], "text_hash": text_hashes,
            "terms": terms, "term_counts": term_counts, "uses": _chunk_uses(chunks, refs)}
    if defs:
        columns["definitions"] = {
            "path": [path] * len(defs), "ordinal": list(range(len(defs))),
            "name": [d.name for d in defs], "qualified_name": [d.qualified_name for d in defs],
            "kind": [d.kind for d in defs], "signature": [d.signature for d in defs],
            "parameters": [list(d.parameters) for d in defs],
            "docstring": [d.docstring for d in defs],
            "start_line": [d.start_line for d in defs], "end_line": [d.end_line for d in defs],
            "parent": [d.parent for d in defs]}
    if refs:
        columns["refs"] = {
            "path": [path] * len(refs), "ordinal": list(range(len(refs))),
            "name": [r.name for r in refs], "kind": [r.kind for r in refs],
            "receiver": [r.receiver for r in refs], "line": [r.line for r in refs],
            "col": [r.column for r in refs], "enclosing": [r.enclosing for r in refs]}
    if imports:
        columns["imports"] = {
            "path": [path] * len(imports), "ordinal": list(range(len(imports))),
            "module": [m.module for m in imports], "name": [m.name for m in imports],
            "alias": [m.alias for m in imports], "level": [m.level for m in imports],
            "line": [m.line for m in imports]}
    messages = parsed.messages
    if messages:
        columns["messages"] = {
            "path": [path] * len(messages), "ordinal": list(range(len(messages))),
            "line": [m.line for m in messages], "template": [m.template for m in messages],
            "name": [m.name for m in messages]}
    uses = parsed.syntax_uses
    if uses:
        columns["syntax_uses"] = {
            "path": [path] * len(uses), "ordinal": list(range(len(uses))),
            "line": [u.line for u in uses], "col": [u.column for u in uses],
            "operand": [u.operand for u in uses], "names": [list(u.names) for u in uses],
            "syntax": [u.syntax for u in uses], "callee": [u.callee for u in uses]}
    # json escapes lone surrogates, so any decoded text hashes.
    digest = hashlib.sha256(json.dumps(columns, separators=(",", ":")).encode()).hexdigest()
    return _FileRows(parsed.role, parsed.syntax_errors, columns, texts, digest)


def _chunk_uses(chunks: Sequence[Chunk], refs: Sequence[Reference]) -> list[object]:
    """Per chunk, the distinct names referenced on its lines, sorted (chunks may nest)."""
    by_line = sorted(refs, key=lambda r: r.line)
    lines = [r.line for r in by_line]
    return [sorted({r.name for r in by_line[bisect.bisect_left(lines, c.start_line):
                                            bisect.bisect_right(lines, c.end_line)]})
            for c in chunks]


def _chunk_id(path: str, ordinal: int, c: Chunk) -> str:
    key = f"{path}\0{ordinal}\0{c.kind}\0{c.start_line}\0{c.end_line}\0{c.symbol}"
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]
