"""Build the index of one revision, from scratch or by updating another revision's index.

The update is driven by blob SHAs: every path whose blob differs from the one the index
holds (or that the index lacks, or that is gone) is dropped and re-parsed. Files are
parsed independently of each other, so the result is row-for-row the full build. Vectors
are content-addressed, so only text never embedded before goes through the model.
"""

from __future__ import annotations

import functools
import gc
import hashlib
import json
import multiprocessing
import os
import time
import uuid
from collections import Counter, deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path

import pyarrow as pa

from pr_context.embed import Embedder
from pr_context.git import (
    SUBMODULE_MODE,
    SYMLINK_MODE,
    BlobReader,
    Repository,
    changed_files,
    changed_paths,
    commit_exists,
    commit_file_lists,
    list_files,
    read_blob,
    resolve_revision,
)
from pr_context.index.schema import SCHEMA_VERSION
from pr_context.index.store import IndexStore, Manifest, TableRows
from pr_context.languages import language_for_path
from pr_context.models import Chunk, FileEntry, ParsedFile, Sha
from pr_context.parse import PARSER_VERSION, parse_file
from pr_context.policy import (
    CONFIG_PATH,
    PathPolicy,
    decode_text,
    policy_from_config,
    skip_reason_for_content,
    skip_reason_for_path,
)
from pr_context.progress import Progress
from pr_context.roles import classify_path

__all__ = ["COCHANGE_COMMITS", "IndexOptions", "IndexResult", "build_index"]

COCHANGE_COMMITS = 500  # history window mined for files changed together
FREEZE_FILES = 256  # files parsed between conversions of their rows to Arrow
PARSE_WORKERS = 2  # the runners this targets have 2 cores
PARALLEL_MIN_FILES = 48  # below this, starting workers costs more than it saves
PARSE_CHUNK_FILES = 4  # files per task: small, so a few big files do not idle a worker
COCHANGE_MAX_FILES = 30  # larger commits are bulk edits, not evidence of coupling
EMBED_GROUP = 256  # texts per model call and per committed transaction
NO_MODEL = "none"

@dataclass(frozen=True)
class IndexOptions:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    config_text: str | None = None  # overrides the repository's own config file
    cochange_commits: int = COCHANGE_COMMITS
    parse_workers: int = PARSE_WORKERS  # processes parsing files; 1 parses in-process


@dataclass(frozen=True)
class IndexResult:
    """What ``index --json`` prints (see the CLI contract in docs/)."""

    revision: str
    files: int
    skipped: int
    chunks: int
    definitions: int
    references: int
    imports: int
    embedded: int
    reused: int
    incremental: bool
    previous_revision: str | None
    changes: dict[str, int]
    truncated: int
    seconds: float
    digest: str
    build_id: str
    warnings: tuple[str, ...] = field(default=())


@dataclass
class _Rows:
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
            self._frozen.setdefault(table, []).append(pa.table(columns))
        self._pending = {}

    def tables(self) -> dict[str, pa.Table]:
        self.freeze()
        return {table: pa.concat_tables(parts, promote_options="default")
                for table, parts in self._frozen.items()}


def build_index(
    repo: Repository,
    rev: str,
    db_path: Path,
    options: IndexOptions,
    embedder: Embedder | None,
    progress: Progress,
) -> IndexResult:
    """Make ``db_path`` reflect exactly revision ``rev`` of ``repo``.

    :raises UnknownRevisionError: ``rev`` names no commit.
    :raises ConfigError: the repository's config file is invalid.
    """
    started = time.perf_counter()
    sha = resolve_revision(repo, rev)
    # A new index file will hold every file; an existing one may need only what changed.
    entries = list_files(repo, sha) if not db_path.exists() else None
    policy = _policy_at(repo, sha, entries, options)
    wanted = Manifest(
        schema_version=SCHEMA_VERSION,
        parser_version=PARSER_VERSION,
        embedding_model=embedder.name if embedder else NO_MODEL,
        path_policy=json.dumps(policy.describe(), sort_keys=True),
        policy_fingerprint=policy.fingerprint(),
        cochange_commits=options.cochange_commits,
    )
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        progress.warn(message)

    keep_texts = embedder is not None
    with BlobReader(repo) as blobs, _ParsePool(options.parse_workers) as parsers:
        # Parsing every file of a new index starts before DuckDB creates the file.
        early = (_Parse(entries, blobs, policy, progress, parsers, keep_texts)
                 if entries is not None else None)
        with IndexStore.open(db_path, wanted, warn) as store:
            previous = _usable_previous(repo, store, warn)
            removed, to_parse = _changes(repo, store, previous, sha, entries)
            parse = (early if early is not None and len(to_parse) == len(entries or ())
                     else _Parse(to_parse, blobs, policy, progress, parsers, keep_texts))
            rows = parse.rows()
            parsers.stop()
            embedded, reused = _embed_missing(store, rows, embedder, progress)
            store.replace_paths(removed, rows.tables())
            store.prune_embeddings()
            store.replace_cochange(_cochange(repo, sha, options, _indexed_paths(store)))
            manifest = replace(
                wanted,
                revision=sha,
                build_id=uuid.uuid4().hex,
                built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                embedding_dimension=store.embedding_dimension(),
            )
            store.write_manifest(manifest)
            counts = store.counts()
            return IndexResult(
                revision=sha,
                files=counts["files"],
                skipped=counts["skipped"],
                chunks=counts["chunks"],
                definitions=counts["definitions"],
                references=counts["references"],
                imports=counts["imports"],
                embedded=embedded,
                reused=reused,
                incremental=previous is not None,
                previous_revision=previous,
                changes=_change_counts(repo, previous, sha, len(to_parse), len(removed)),
                truncated=_truncated_count(store),
                seconds=round(time.perf_counter() - started, 3),
                digest=store.digest(),
                build_id=manifest.build_id,
                warnings=tuple(warnings),
            )


def _policy_at(repo: Repository, sha: Sha, entries: Sequence[FileEntry] | None,
               options: IndexOptions) -> PathPolicy:
    """The path policy: the config file at the indexed revision, plus CLI globs."""
    text = options.config_text
    if text is None:
        listed = entries if entries is not None else list_files(repo, sha, [CONFIG_PATH])
        config = next((e for e in listed if e.path == CONFIG_PATH), None)
        if config is not None:
            text = decode_text(read_blob(repo, config.blob_sha))[0]
    return policy_from_config(text, options.include, options.exclude)


def _changes(repo: Repository, store: IndexStore, previous: str | None, sha: Sha,
             entries: list[FileEntry] | None) -> tuple[list[str], list[FileEntry]]:
    """The paths whose rows go, and the files to parse.

    An index that holds ``previous`` whole is updated from the diff of the two trees, so
    the cost follows the diff; otherwise (a new file, an interrupted build) the index's
    rows are compared with a listing of every file.
    """
    if previous is not None and entries is None:
        return changed_files(repo, Sha(previous), sha)
    entries = entries if entries is not None else list_files(repo, sha)
    known = store.file_blobs()
    current = {e.path: e.blob_sha for e in entries}
    removed = [p for p, blob in known.items() if current.get(p) != blob]
    return removed, [e for e in entries if known.get(e.path) != e.blob_sha]


def _usable_previous(repo: Repository, store: IndexStore,
                     warn: Callable[[str], None]) -> str | None:
    """The revision the store holds, if it can be updated; else clear the store.

    A first build that was interrupted left a manifest without a revision (see
    ``IndexStore.open``): its rows and vectors are kept, and it is completed path by path.
    """
    manifest = store.manifest
    if manifest is None or not manifest.revision:
        return None
    if not commit_exists(repo, manifest.revision):
        warn(f"rebuilding index {store.path}: it holds revision {manifest.revision[:12]}, "
             "which is not in this repository (an index of another repository?)")
        store.clear()
        return None
    return manifest.revision


class _Parse:
    """Reading and parsing files into rows: begun when made, collected by ``rows``.

    With worker processes, every file is read and queued at once, so the workers parse
    while the parent goes on; without, reading and parsing happen in ``rows``.
    """

    def __init__(self, entries: Sequence[FileEntry], blobs: BlobReader, policy: PathPolicy,
                 progress: Progress, parsers: _ParsePool, keep_texts: bool) -> None:
        self._rows = _Rows(keep_texts)
        self._progress = progress
        self._pending: deque[_ParseJob] = deque()  # queued; result not taken yet
        progress.start("parsing files", len(entries))
        if parsers.start(entries):
            # Largest first: the last tasks are small, so both workers finish together.
            entries = sorted(entries, key=lambda e: -e.size)
        self._results = parsers.map(self._read(entries, blobs, policy), keep_texts)

    def _read(self, entries: Sequence[FileEntry], blobs: BlobReader,
              policy: PathPolicy) -> Iterator[_ParseJob]:
        for entry in entries:
            job = _read_entry(entry, blobs, policy, self._rows)
            if job is None:
                self._progress.advance()
                continue
            self._pending.append(job)
            yield job

    def rows(self) -> _Rows:
        rows = self._rows
        for number, parsed in enumerate(self._results, 1):
            entry, _text, language, decode_errors = self._pending.popleft()
            _add_file_row(rows, entry, language, parsed.role, "indexed", None,
                          parsed.syntax_errors, decode_errors, parsed.digest)
            rows.extend(parsed.columns)
            rows.texts.update(parsed.texts)
            self._progress.advance()
            if number % FREEZE_FILES == 0:
                rows.freeze()
        self._progress.finish()
        return rows


_ParseJob = tuple[FileEntry, str, str, bool]  # entry, decoded text, language, decode errors


@dataclass(frozen=True)
class _FileRows:
    """One parsed file as columns of plain values: cheap to send back from a worker."""

    role: str
    syntax_errors: int
    columns: dict[str, dict[str, list[object]]]
    texts: dict[str, str]  # text_hash -> embed text, when an embedding build needs them
    digest: str  # of the columns, computed here so that workers share the hashing


def _read_entry(entry: FileEntry, blobs: BlobReader, policy: PathPolicy,
                rows: _Rows) -> _ParseJob | None:
    """The file's parse job, or None after recording why it is skipped."""
    language = language_for_path(entry.path)
    reason = _skip_reason_by_entry(entry, policy)
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


def _parse_job(job: _ParseJob, keep_texts: bool) -> _FileRows:
    entry, text, language, _decode_errors = job
    parsed = parse_file(entry.path, text, language, classify_path(entry.path, text))
    return _file_rows(parsed, keep_texts)


class _ParsePool:
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

    def map(self, jobs: Iterator[_ParseJob], keep_texts: bool) -> Iterator[_FileRows]:
        """Parse results in the order of ``jobs``. Workers are handed every job at once;
        the parent alone takes each job as it comes to it.

        Results come back in order, so the parent turns them into Arrow batches as they
        arrive (peak memory).
        """
        parse = functools.partial(_parse_job, keep_texts=keep_texts)
        if self._pool is None:
            return map(parse, jobs)
        return self._pool.map(parse, jobs, chunksize=PARSE_CHUNK_FILES)

    def stop(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None

    def __enter__(self) -> _ParsePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _skip_reason_by_entry(entry: FileEntry, policy: PathPolicy) -> str | None:
    if entry.mode == SYMLINK_MODE:
        return "symlink (not followed)"
    if entry.mode == SUBMODULE_MODE:
        return "submodule (not indexed)"
    return skip_reason_for_path(policy, entry.path, entry.size)


def _add_file_row(rows: _Rows, entry: FileEntry, language: str | None, role: str,
                  status: str, reason: str | None, syntax_errors: int = 0,
                  decode_errors: bool = False, content_digest: str = "") -> None:
    """The file's row, and its digest over that row and the rows parsed from it."""
    values = {"path": entry.path, "blob_sha": entry.blob_sha, "language": language,
              "role": role, "size": entry.size, "status": status, "skip_reason": reason,
              "syntax_errors": syntax_errors, "decode_errors": decode_errors}
    rows.add("files", **values)
    digest = hashlib.sha256(json.dumps([values, content_digest]).encode()).hexdigest()
    rows.add("file_digests", path=entry.path, digest=digest)


def _file_rows(parsed: ParsedFile, keep_texts: bool) -> _FileRows:
    """The file's chunk, definition, reference and import rows, column-wise.

    Each column is built whole from the parsed records: a file has thousands of rows.
    """
    path = parsed.path
    chunks, defs, refs, imports = (parsed.chunks, parsed.definitions, parsed.references,
                                   parsed.imports)
    texts: dict[str, str] = {}
    text_hashes: list[object] = []
    for c in chunks:
        embed_text = c.embed_text
        text_hash = hashlib.sha256(embed_text.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        text_hashes.append(text_hash)
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
            "context": [c.context for c in chunks], "text_hash": text_hashes}
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
    # json escapes lone surrogates, so any decoded text hashes.
    digest = hashlib.sha256(json.dumps(columns, separators=(",", ":")).encode()).hexdigest()
    return _FileRows(parsed.role, parsed.syntax_errors, columns, texts, digest)


def _chunk_id(path: str, ordinal: int, c: Chunk) -> str:
    key = f"{path}\0{ordinal}\0{c.kind}\0{c.start_line}\0{c.end_line}\0{c.symbol}"
    return hashlib.sha1(key.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _embed_missing(
    store: IndexStore, rows: _Rows, embedder: Embedder | None, progress: Progress
) -> tuple[int, int]:
    """Embed every text the index will hold but has no vector for. Returns (embedded, reused)."""
    if embedder is None:
        return 0, 0
    have = store.embedded_hashes()
    new_texts = {h: t for h, t in rows.texts.items() if h not in have}
    # Chunks kept from the previous revision that lack a vector (an interrupted build).
    kept = store.text_hashes() - have - set(new_texts)
    new_texts.update(store.chunk_texts(kept))
    reused = len(rows.texts) - len(set(rows.texts) & set(new_texts))
    todo = sorted(new_texts)
    if not todo:
        return 0, reused
    progress.start("embedding chunks", len(todo))
    for i in range(0, len(todo), EMBED_GROUP):
        group = todo[i : i + EMBED_GROUP]
        result = embedder.embed([new_texts[h] for h in group])
        store.add_embeddings(group, result.vectors, result.token_counts, embedder.max_tokens)
        progress.advance(len(group))
    progress.finish()
    return len(todo), reused


def _indexed_paths(store: IndexStore) -> set[str]:
    return {p for (p,) in store.query("SELECT path FROM files WHERE status = 'indexed'")}


def _cochange(repo: Repository, sha: Sha, options: IndexOptions,
              paths: set[str]) -> dict[tuple[str, str], int]:
    """How often each pair of indexed files changed in the same commit, recently."""
    pairs: Counter[tuple[str, str]] = Counter()
    if options.cochange_commits <= 0:
        return {}
    for files in commit_file_lists(repo, sha, options.cochange_commits, COCHANGE_MAX_FILES):
        present = [f for f in files if f in paths]
        pairs.update(combinations(present, 2))
    return dict(pairs)


def _change_counts(repo: Repository, previous: str | None, sha: Sha,
                   parsed: int, removed: int) -> dict[str, int]:
    counts: dict[str, int] = {"parsed": parsed, "removed": removed}
    if previous is not None and previous != sha:
        for change in changed_paths(repo, Sha(previous), sha):
            counts[change.status] = counts.get(change.status, 0) + 1
    return counts


def _truncated_count(store: IndexStore) -> int:
    if store.embedding_dimension() == 0:
        return 0
    rows = store.query("SELECT count(*) FROM chunks c JOIN embeddings e USING (text_hash) "
                       "WHERE e.truncated")
    return int(rows[0][0])
