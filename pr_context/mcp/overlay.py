"""The working tree's changes, overlaid in memory on the index of a commit.

Each call lists the files that differ from the indexed commit (``git diff`` plus
untracked files that are not ignored), re-parses the modified and added ones with the
index's own parsing code and path policy, embeds chunk texts the index has no vector
for, and hides every changed or deleted path's indexed rows. Parsed files and vectors
are kept between calls by content, so an unchanged dirty file is parsed once.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from pr_context.embed import Embedder
from pr_context.errors import PrContextError
from pr_context.git import SYMLINK_MODE, Repository, WorktreeChange
from pr_context.index.parsing import ParsePool, Parsing, TermsOf
from pr_context.index.store import IndexStore, Manifest
from pr_context.mcp import DEFAULT_MAX_DIRTY_FILES
from pr_context.mcp.bounds import Deadline
from pr_context.mcp.paths import PathRefusedError, confine
from pr_context.models import FileEntry
from pr_context.policy import PathPolicy, skip_reason_for_path
from pr_context.progress import SilentProgress
from pr_context.retrieve.lexical import chunk_terms

__all__ = ["DEFAULT_MAX_DIRTY_FILES", "Overlay", "OverlayBuilder"]

KnownTerms = Callable[[str], tuple[list[str], list[int]] | None]
EMBED_GROUP = 64  # texts per model call, so the deadline is checked between groups
_REGULAR_MODE, _EXECUTABLE_MODE = "100644", "100755"


@dataclass(frozen=True)
class Overlay:
    """The working tree's differences from ``base``, ready to lay over its index."""

    base: str  # the indexed commit the changes are relative to
    changes: tuple[WorktreeChange, ...]  # every dirty file, overlaid or not
    rows: Mapping[str, pa.Table]  # per table: rows of the re-parsed files
    vectors: pa.Table | None  # embeddings rows for overlay texts the index lacks
    overlaid: frozenset[str]  # paths whose working-tree content the rows reflect
    stale: bool  # some dirty files are not reflected: answers may be out of date
    notes: tuple[str, ...] = ()
    fingerprint: str = ""  # equal fingerprints, equal overlays

    @property
    def hidden(self) -> frozenset[str]:
        """Paths whose indexed rows no longer hold: every dirty path."""
        return frozenset(c.path for c in self.changes)

    @property
    def empty(self) -> bool:
        return not self.changes

    def store(self, db: Path, manifest: Manifest) -> IndexStore:
        """The index at ``db`` (whose manifest is ``manifest``) as the working tree has
        it: read-only, the overlay in memory."""
        if self.empty:
            return IndexStore.open_existing(db)
        return IndexStore.overlaid(db, self.hidden, self.rows, self.vectors, manifest)

    def part(self, db: Path, manifest: Manifest) -> IndexStore:
        """The re-parsed files' rows alone, read as an index (with the vectors the index
        at ``db`` or the overlay holds for their texts): what is spliced into the loaded
        corpus of the commit."""
        return IndexStore.of_rows(db, self.rows, self.vectors, manifest)


@dataclass
class _ParsedFile:
    blob_sha: str
    tables: dict[str, pa.Table]
    texts: dict[str, str]


@dataclass
class OverlayBuilder:
    """Builds overlays for one repository, keeping parses and vectors between calls."""

    repo: Repository
    max_dirty_files: int = DEFAULT_MAX_DIRTY_FILES
    _parsed: dict[str, _ParsedFile] = field(default_factory=dict)
    _vectors: dict[str, tuple[np.ndarray, int]] = field(default_factory=dict)
    _indexed_hashes: tuple[str, frozenset[str]] = ("", frozenset())

    def build(self, base: str, changes: list[WorktreeChange], db: Path, policy: PathPolicy,
              embedder: Embedder | None, deadline: Deadline,
              known_terms: KnownTerms | None = None) -> Overlay:
        """The overlay of ``changes`` on the index of ``base`` at ``db``; ``known_terms``,
        the BM25 terms the loaded index holds for a chunk text (not counted again)."""
        if not changes:
            return Overlay(base, (), {}, None, frozenset(), False, fingerprint=base)
        if len(changes) > self.max_dirty_files:
            note = (f"{len(changes)} files differ from the indexed commit {base[:12]}, more "
                    f"than the overlay limit of {self.max_dirty_files}: answers are of the "
                    "commit and may be out of date (commit, or raise --max-dirty-files)")
            return Overlay(base, tuple(changes), {}, None, frozenset(), True, (note,),
                           fingerprint=f"{base}:stale:{len(changes)}")
        parsed: dict[str, _ParsedFile] = {}
        done: set[str] = set()  # reflected: re-parsed, or hidden for good reason
        for change in changes:
            if deadline.expired():
                break
            if change.status != "deleted":
                found = self._parse(change.path, policy, embedder is not None,
                                    _terms(known_terms))
                if found is not None:
                    parsed[change.path] = found
            done.add(change.path)
        notes = [] if len(done) == len(changes) else [
            f"{len(changes) - len(done)} changed files were not re-parsed within the "
            "deadline: their indexed content is hidden until a later call"]
        vectors = self._embed(parsed.values(), db, embedder, deadline, notes)
        fingerprint = hashlib.sha256(repr(
            (base, sorted((c.path, c.status) for c in changes),
             sorted((p, f.blob_sha) for p, f in parsed.items()),
             vectors.num_rows if vectors is not None else 0)).encode()).hexdigest()
        return Overlay(base, tuple(changes), _concat(f.tables for f in parsed.values()),
                       vectors, frozenset(parsed), bool(notes), tuple(notes), fingerprint)

    def _parse(self, path: str, policy: PathPolicy, keep_texts: bool,
               terms_of: TermsOf = chunk_terms) -> _ParsedFile | None:
        """The rows of the working tree's file at ``path``; None when it cannot be read,
        lies outside the repository, or the path policy skips it by name or size (it is
        not even read: an untracked data dump costs nothing). Its indexed rows are
        hidden all the same."""
        try:
            relative = confine(self.repo.path, path, follow=False)
            size = os.lstat(self.repo.path / relative).st_size
            if skip_reason_for_path(policy, relative, size) is not None:
                return None
            entry, data = _read_worktree_file(self.repo.path, relative)
        except (PathRefusedError, OSError):
            return None
        cached = self._parsed.get(path)
        if cached is not None and cached.blob_sha == entry.blob_sha:
            return cached
        source = _MemoryBlobs({entry.blob_sha: data})
        rows = Parsing([entry], source, policy, SilentProgress(), ParsePool(1),
                       keep_texts, terms_of).rows()
        self._parsed[path] = _ParsedFile(entry.blob_sha, rows.tables(), dict(rows.texts))
        return self._parsed[path]

    def _embed(self, files: Iterable[_ParsedFile], db: Path, embedder: Embedder | None,
               deadline: Deadline, notes: list[str]) -> pa.Table | None:
        """Vectors for overlay texts the index has none for, embedding the new ones."""
        if embedder is None:
            return None
        texts = {h: t for f in files for h, t in f.texts.items()}
        indexed = self._indexed(db)
        wanted = sorted(h for h in texts if h not in indexed)
        todo = [h for h in wanted if h not in self._vectors]
        for start in range(0, len(todo), EMBED_GROUP):
            if deadline.expired():
                notes.append(f"{len(todo) - start} new chunk texts were not embedded within "
                             "the deadline: search ranks them by words and structure only")
                break
            group = todo[start:start + EMBED_GROUP]
            result = embedder.embed([texts[h] for h in group])
            for h, vector, count in zip(group, result.vectors, result.token_counts,
                                        strict=True):
                self._vectors[h] = (vector, count)
        ready = [h for h in wanted if h in self._vectors]
        if not ready:
            return None
        matrix = np.stack([self._vectors[h][0] for h in ready]).astype(np.float32)
        tokens = [self._vectors[h][1] for h in ready]
        return pa.table({
            "text_hash": ready, "tokens": pa.array(tokens, pa.int32()),
            "truncated": [t > embedder.max_tokens for t in tokens],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(matrix.ravel()),
                                                        matrix.shape[1])})

    def _indexed(self, db: Path) -> frozenset[str]:
        """Text hashes the index has vectors for, read once per index build."""
        with IndexStore.open_existing(db) as store:
            assert store.manifest is not None
            build = store.manifest.build_id
            if self._indexed_hashes[0] != build:
                self._indexed_hashes = (build, frozenset(store.embedded_hashes()))
        return self._indexed_hashes[1]


def _terms(known: KnownTerms | None) -> TermsOf:
    """A chunk text's terms: those ``known`` holds, else counted."""
    if known is None:
        return chunk_terms
    return lambda text: known(text) or chunk_terms(text)


class _MemoryBlobs:
    """File contents already read, served by blob SHA to the index's parsing."""

    def __init__(self, blobs: dict[str, bytes]) -> None:
        self._blobs = blobs

    def read(self, blob_sha: str) -> bytes:
        try:
            return self._blobs[blob_sha]
        except KeyError:
            raise PrContextError(f"blob {blob_sha} was not read") from None


def _read_worktree_file(root: Path, path: str) -> tuple[FileEntry, bytes]:
    """The file's entry (git's blob SHA of its content) and bytes; a symlink is not
    followed: its entry says symlink and the index's policy skips it.

    :raises OSError: it cannot be read (gone since listed, a directory, no permission).
    """
    full = root / path
    info = os.lstat(full)
    if stat.S_ISLNK(info.st_mode):
        data = os.readlink(full).encode("utf-8", "surrogateescape")
        mode = SYMLINK_MODE
    elif stat.S_ISREG(info.st_mode):
        data = full.read_bytes()
        mode = _EXECUTABLE_MODE if info.st_mode & stat.S_IXUSR else _REGULAR_MODE
    else:
        raise IsADirectoryError(f"{path} is not a regular file")
    blob_sha = hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
    return FileEntry(path=path, blob_sha=blob_sha, mode=mode, size=len(data)), data


def _concat(tables: Iterable[Mapping[str, pa.Table]]) -> dict[str, pa.Table]:
    parts: dict[str, list[pa.Table]] = {}
    for per_file in tables:
        for name, table in per_file.items():
            parts.setdefault(name, []).append(table)
    return {name: pa.concat_tables(t, promote_options="default") for name, t in parts.items()}
