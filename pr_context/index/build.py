"""Build the index of one revision, from scratch or by updating another revision's index.

An index that holds another revision whole is updated from the diff of the two trees:
every path whose file changed, appeared or went is dropped and re-parsed (see
``index.parsing``). Files are parsed independently of each other, so the result is
row-for-row the full build. Vectors are content-addressed, so only text never embedded
before goes through the model.
"""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from itertools import combinations
from pathlib import Path

import numpy as np

from pr_context.defaults import COCHANGE_COMMITS
from pr_context.embed import Embedder, Embeddings
from pr_context.errors import GitError
from pr_context.git import (
    BlobReader,
    CommitHistory,
    Repository,
    TreeChanges,
    changed_files,
    commit_exists,
    list_files,
    read_file_at,
    resolve_revision,
)
from pr_context.index.parsing import ParsePool, Parsing, Rows
from pr_context.index.schema import SCHEMA_VERSION
from pr_context.index.shards import ShardSpec, shard_entries
from pr_context.index.store import EarlyConnection, IndexStore, Manifest
from pr_context.models import FileEntry, Sha
from pr_context.parse import PARSER_VERSION
from pr_context.policy import (
    CONFIG_PATH,
    PathPolicy,
    decode_text,
    policy_from_config,
)
from pr_context.progress import Progress
from pr_context.retrieve.lexical import LEXICAL_VERSION

__all__ = ["COCHANGE_COMMITS", "IndexBuild", "IndexOptions", "IndexResult", "build_index",
           "complete_index", "policy_at", "start_index", "vector_worker"]

PARSE_WORKERS = 2  # the runners this targets have 2 cores
COCHANGE_MAX_FILES = 30  # larger commits are bulk edits, not evidence of coupling
EMBED_GROUP = 256  # texts per model call and per committed transaction
# Model threads of a build whose vectors are computed while its caller works on
# (start_index): the caller's Python keeps one core busy, and on a 2-core runner a
# second model thread only slows it (a sphinx review: 9.3-9.8 s with one, 10.7-11.0 s
# with two).
EMBED_THREADS_ALONGSIDE = 1
# Texts per task of that worker: few, so that the caller, once it waits for the vectors,
# embeds the tasks not yet begun itself, on the other core, and neither core idles long
# while the other ends its last task (with 8, up to half a second on a sphinx review).
EMBED_TASK_ALONGSIDE = 2
NO_MODEL = "none"


@dataclass(frozen=True)
class IndexOptions:
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    config_text: str | None = None  # overrides the repository's own config file
    cochange_commits: int = COCHANGE_COMMITS
    parse_workers: int = PARSE_WORKERS  # processes parsing files; 1 parses in-process
    shard: ShardSpec | None = None  # index only this shard's share of the files


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


def build_index(
    repo: Repository,
    rev: str,
    db_path: Path,
    options: IndexOptions,
    embedder: Embedder | None,
    progress: Progress,
) -> IndexResult:
    """Make ``db_path`` reflect exactly revision ``rev`` of ``repo``.

    With ``options.shard``, only that shard's files (``index.shards``), and no co-changes.

    :raises UnknownRevisionError: ``rev`` names no commit.
    :raises ConfigError: the repository's config file is invalid.
    :raises ShardError: ``db_path`` holds a shard and this build is not of a shard.
    """
    result, _ = _build(repo, rev, db_path, options, embedder, progress, None)
    return result


def start_index(
    repo: Repository,
    rev: str,
    db_path: Path,
    options: IndexOptions,
    embedder: Embedder | None,
    progress: Progress,
    worker: ThreadPoolExecutor | None = None,
) -> IndexBuild:
    """``build_index``, but the vectors of the texts it must embed are computed in a
    worker thread while the caller goes on (ONNX Runtime runs without the GIL):
    ``worker`` when the caller made it earlier (``vector_worker``), else a new one.

    On return the index holds every row and its manifest names ``rev``; the vectors are
    stored by ``IndexBuild.finish``, in the calling thread (DuckDB's connection is not
    shared). Until then the file has no vector for those texts: it is for a scratch
    copy whose owner waits before reading vectors (``review``'s head index), never for
    the index a build keeps. Raises what ``build_index`` raises.
    """
    pool = worker if worker is not None else vector_worker(embedder)
    try:
        result, todo = _build(repo, rev, db_path, options, embedder, progress, pool)
    except BaseException:
        pool.shutdown(cancel_futures=True)
        raise
    return IndexBuild(db_path, embedder, progress, result, todo, pool)


def vector_worker(embedder: Embedder | None) -> ThreadPoolExecutor:
    """The thread that computes a build's vectors (``start_index``), loading the model
    from now on, on its own core, while the caller reads and parses files (a third of a
    second of ONNX Runtime's start on sphinx otherwise spent once the texts are in)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="index-vectors")
    if embedder is not None:
        pool.submit(embedder.load)
    return pool


@dataclass
class IndexBuild:
    """An index whose vectors are still being computed (see ``start_index``).

    ``finish`` waits for them (embedding the texts the worker has not begun itself),
    stores them and gives the complete build's result, the one ``build_index`` gives;
    later calls give it again. Leaving the ``with`` block without ``finish`` waits for
    the worker and stores nothing.
    """

    db_path: Path
    embedder: Embedder | None
    progress: Progress
    result: IndexResult  # without the vectors
    todo: list[_VectorGroup]
    pool: ThreadPoolExecutor
    _finished: IndexResult | None = field(default=None, init=False)

    def __enter__(self) -> IndexBuild:
        return self

    def __exit__(self, *exc: object) -> None:
        self.pool.shutdown(cancel_futures=True)

    def finish(self) -> IndexResult:
        """The build's result once its vectors are stored.

        :raises EmbeddingError: the model failed on a text.
        :raises IndexFileError: the index cannot be written.
        """
        if self._finished is None:
            started = time.perf_counter()
            truncated, digest = self._store_vectors()
            self.pool.shutdown()
            waited = time.perf_counter() - started
            self._finished = replace(self.result, truncated=truncated, digest=digest,
                                     seconds=round(self.result.seconds + waited, 3))
        return self._finished

    def _store_vectors(self) -> tuple[int, str]:
        """Wait for each group's vectors and store them; the index's truncated count and
        digest with them."""
        if not self.todo or self.embedder is None:
            return self.result.truncated, self.result.digest
        self.progress.start("embedding chunks", sum(len(g.hashes) for g in self.todo))
        done = self._embed_unbegun(self.embedder)
        found = [done[i] if i in done else self._worker_vectors(group)
                 for i, group in enumerate(self.todo)]
        self.progress.finish()
        with IndexStore.open_existing(self.db_path, writable=True) as store:
            store.add_embeddings([h for group in self.todo for h in group.hashes],
                                 np.concatenate([f.vectors for f in found]),
                                 [n for f in found for n in f.token_counts],
                                 self.embedder.max_tokens)
            _record_dimension(store)
            return _truncated_count(store), store.digest()

    def _worker_vectors(self, group: _VectorGroup) -> Embeddings:
        found = group.vectors.result()
        self.progress.advance(len(group.hashes))
        return found

    def _embed_unbegun(self, embedder: Embedder) -> dict[int, Embeddings]:
        """The vectors of the tasks the worker has not begun, computed here from the last
        one back while the worker goes on from the first (both cores busy)."""
        done: dict[int, Embeddings] = {}
        for i in reversed(range(len(self.todo))):
            group = self.todo[i]
            if group.vectors.cancel():
                done[i] = embedder.embed(group.texts, EMBED_THREADS_ALONGSIDE)
                self.progress.advance(len(group.hashes))
        return done


@dataclass(frozen=True)
class _VectorGroup:
    """Texts (and their hashes) whose vectors a worker computes."""

    hashes: list[str]
    texts: list[str]
    vectors: Future[Embeddings]


def _build(
    repo: Repository,
    rev: str,
    db_path: Path,
    options: IndexOptions,
    embedder: Embedder | None,
    progress: Progress,
    pool: ThreadPoolExecutor | None,
) -> tuple[IndexResult, list[_VectorGroup]]:
    """``build_index``; with ``pool``, the texts to embed are handed to it instead, and
    returned with their vectors to come."""
    started = time.perf_counter()
    warnings: list[str] = []

    def warn(message: str) -> None:
        warnings.append(message)
        progress.warn(message)

    keep_texts = embedder is not None
    with ExitStack() as stack:
        # An existing file is opened while git answers (DuckDB mostly runs without the
        # GIL); a new one is created once the revision resolved, so a bad one leaves none.
        connecting = (stack.enter_context(EarlyConnection(db_path)) if db_path.exists()
                      else None)
        sha = resolve_revision(repo, rev)
        # git reads the history for co-changes while the index is brought up to date. Co-
        # changes span shards: a shard leaves them to the merge.
        history = (stack.enter_context(CommitHistory(repo, sha, options.cochange_commits))
                   if options.shard is None else None)
        entries, policy = _listing(repo, sha, options, connecting is None)
        wanted = _wanted_manifest(policy, options, embedder)
        blobs = stack.enter_context(BlobReader(repo))
        parsers = stack.enter_context(ParsePool(options.parse_workers))
        # Parsing every file of a new index starts before DuckDB creates the file.
        early = (Parsing(entries, blobs, policy, progress, parsers, keep_texts)
                 if entries is not None and connecting is None else None)
        store = stack.enter_context(IndexStore.open(db_path, wanted, warn, connecting))
        previous, changes = _changes(repo, store, sha, entries, warn)
        # A new file holds no rows: what it must parse is every listed file.
        parse = (early if early is not None
                 else Parsing(changes.files, blobs, policy, progress, parsers, keep_texts))
        feed = (_TextFeed(pool, embedder, store.embedded_hashes())
                if pool is not None and embedder is not None else None)
        rows = parse.rows(feed.add if feed is not None else None)
        parsers.stop()
        todo: list[_VectorGroup] = []
        if feed is not None:
            embedded, reused = feed.finish(store, rows)
            todo = feed.todo
        else:
            embedded, reused = _embed_missing(store, rows, embedder, progress)
        store.replace_paths(changes.removed, rows.tables())
        manifest = complete_index(store, replace(wanted, revision=sha), history)
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
            changes=_change_counts(changes),
            truncated=_truncated_count(store),
            seconds=round(time.perf_counter() - started, 3),
            digest=store.digest(),
            build_id=manifest.build_id,
            warnings=tuple(warnings),
        ), todo


def complete_index(store: IndexStore, manifest: Manifest,
                   history: CommitHistory | None) -> Manifest:
    """Recompute what spans the index's files, then name the revision it now holds.

    Called once every path's rows are in, by a build and by a merge of shards alike, so
    a merged index gets the same derived rows (``DERIVED_TABLES``) as a single build.
    Without ``history`` (a shard) no co-changes are recorded. Returns the manifest written.
    """
    store.prune_embeddings()
    store.replace_cochange(_cochange(history, store) if history is not None else {})
    written = replace(
        manifest,
        build_id=uuid.uuid4().hex,
        built_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        embedding_dimension=store.embedding_dimension(),
    )
    store.write_manifest(written)
    return written


def _wanted_manifest(policy: PathPolicy, options: IndexOptions,
                     embedder: Embedder | None) -> Manifest:
    """The settings this build's index must have been made with, to be updated."""
    return Manifest(
        schema_version=SCHEMA_VERSION,
        parser_version=PARSER_VERSION,
        embedding_model=embedder.name if embedder else NO_MODEL,
        embedding_backend=embedder.backend if embedder else NO_MODEL,
        path_policy=json.dumps(policy.describe(), sort_keys=True),
        policy_fingerprint=policy.fingerprint(),
        cochange_commits=options.cochange_commits,
        lexical_version=LEXICAL_VERSION,
        shard=str(options.shard) if options.shard is not None else "",
    )


def _listing(repo: Repository, sha: Sha, options: IndexOptions,
             new_file: bool) -> tuple[list[FileEntry] | None, PathPolicy]:
    """The files to index, when they must be listed, and the path policy.

    A new index file will hold every file; an existing one may need only what changed
    (None: not listed). A shard's share depends on every file's size, so a shard lists
    them all and keeps its share.
    """
    entries = list_files(repo, sha) if new_file or options.shard else None
    policy = policy_at(repo, sha, options)
    if options.shard is not None and entries is not None:
        entries = shard_entries(entries, policy, options.shard)
    return entries, policy


def policy_at(repo: Repository, sha: Sha, options: IndexOptions) -> PathPolicy:
    """The path policy: the config file at the indexed revision, plus CLI globs."""
    text = options.config_text
    if text is None:
        data = read_file_at(repo, sha, CONFIG_PATH)
        text = decode_text(data)[0] if data is not None else None
    return policy_from_config(text, options.include, options.exclude)


def _changes(repo: Repository, store: IndexStore, sha: Sha, entries: list[FileEntry] | None,
             warn: Callable[[str], None]) -> tuple[str | None, TreeChanges]:
    """The revision the index is updated from (None when rebuilt), and what changed.

    An index that holds a revision whole is updated from the diff of the two trees, so
    the cost follows the diff; otherwise the index's rows are compared with a listing of
    every file, and no path changes are reported. A first build that was interrupted
    left a manifest without a revision (see ``IndexStore.open``): its rows and vectors
    are kept, and it is completed path by path. A shard is always compared with its
    listing (``entries``): files move between shards as sizes change.
    """
    held = store.manifest.revision if store.manifest is not None else ""
    if held and store.manifest is not None and store.manifest.shard:
        return held, _listed_changes(repo, store, sha, entries)
    diff = _diff_from(repo, store, Sha(held), sha, warn) if held else None
    if diff is not None:
        return held, diff
    return None, _listed_changes(repo, store, sha, entries)


def _diff_from(repo: Repository, store: IndexStore, held: Sha, sha: Sha,
               warn: Callable[[str], None]) -> TreeChanges | None:
    """The diff from the revision the store holds; None once a store whose revision
    this repository lacks is cleared."""
    try:
        return changed_files(repo, held, sha)
    except GitError:
        # Asked only when the diff failed, which saves a git call on every update.
        if commit_exists(repo, held):
            raise
    warn(f"rebuilding index {store.path}: it holds revision {held[:12]}, "
         "which is not in this repository (an index of another repository?)")
    store.clear()
    return None


def _listed_changes(repo: Repository, store: IndexStore, sha: Sha,
                    entries: list[FileEntry] | None) -> TreeChanges:
    entries = entries if entries is not None else list_files(repo, sha)
    known = store.file_blobs()
    current = {e.path: e.blob_sha for e in entries}
    removed = [p for p, blob in known.items() if current.get(p) != blob]
    return TreeChanges(removed, [e for e in entries if known.get(e.path) != e.blob_sha], [])


def _embed_missing(
    store: IndexStore, rows: Rows, embedder: Embedder | None, progress: Progress
) -> tuple[int, int]:
    """Embed every text the index will hold but has no vector for. Returns (embedded, reused)."""
    if embedder is None:
        return 0, 0
    new_texts, reused = _missing_texts(store, rows)
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


def _missing_texts(store: IndexStore, rows: Rows) -> tuple[dict[str, str], int]:
    """text_hash -> text of every text the index will hold but has no vector for, and
    how many of ``rows``' texts already have one."""
    have = store.embedded_hashes()
    return _with_kept_texts(store, rows, have,
                            {h: t for h, t in rows.texts.items() if h not in have})


def _with_kept_texts(store: IndexStore, rows: Rows, have: set[str],
                     new_texts: Mapping[str, str]) -> tuple[dict[str, str], int]:
    """``new_texts`` (``rows``' texts without a vector in ``have``) with the texts of the
    chunks kept from the previous revision that lack one too (an interrupted build), and
    how many of ``rows``' texts already have one."""
    kept = store.text_hashes() - have - set(new_texts)
    found = {**new_texts, **store.chunk_texts(kept)}
    return found, len(rows.texts) - len(set(rows.texts) & set(found))


class _TextFeed:
    """The new texts of a build handed to the worker file by file, as each is parsed
    (``start_index``): the model embeds the first file's while the others are parsed.
    What it hands out in all is what ``_missing_texts`` finds once every file is parsed."""

    def __init__(self, pool: ThreadPoolExecutor, embedder: Embedder, have: set[str]) -> None:
        self._pool, self._embedder, self._have = pool, embedder, have
        self._sent: dict[str, str] = {}
        self.todo: list[_VectorGroup] = []

    def add(self, texts: Mapping[str, str]) -> None:
        """One file's texts: those without a vector, not handed out yet, go now."""
        new = {h: t for h, t in texts.items() if h not in self._have and h not in self._sent}
        self._sent.update(new)
        self.todo += _submit_texts(self._pool, self._embedder, new)

    def finish(self, store: IndexStore, rows: Rows) -> tuple[int, int]:
        """Hand out the kept chunks' texts that lack a vector (an interrupted build);
        (texts embedded, texts of ``rows`` that had a vector)."""
        found, reused = _with_kept_texts(store, rows, self._have, self._sent)
        self.add(found)  # only the kept chunks' texts are new to the worker
        return len(self._sent), reused


def _submit_texts(pool: ThreadPoolExecutor, embedder: Embedder,
                  texts: Mapping[str, str]) -> list[_VectorGroup]:
    """The texts handed to ``pool``, a task per ``EMBED_TASK_ALONGSIDE`` of them (the
    ONNX backends' vectors do not depend on a text's batch-mates; torch's may, in the
    last bits, as between any two builds)."""
    todo = sorted(texts)
    groups = [todo[i : i + EMBED_TASK_ALONGSIDE]
              for i in range(0, len(todo), EMBED_TASK_ALONGSIDE)]
    return [_VectorGroup(group, batch, pool.submit(embedder.embed, batch,
                                                   EMBED_THREADS_ALONGSIDE))
            for group in groups for batch in [[texts[h] for h in group]]]


def _record_dimension(store: IndexStore) -> None:
    """The manifest's vector width, once the first vectors of an index are stored."""
    assert store.manifest is not None
    dimension = store.embedding_dimension()
    if store.manifest.embedding_dimension != dimension:
        store.write_manifest(replace(store.manifest, embedding_dimension=dimension))


def _indexed_paths(store: IndexStore) -> set[str]:
    return {p for (p,) in store.query("SELECT path FROM files WHERE status = 'indexed'")}


def _cochange(history: CommitHistory, store: IndexStore) -> dict[tuple[str, str], int]:
    """How often each pair of indexed files changed in the same commit, recently."""
    commits = history.file_lists(COCHANGE_MAX_FILES)
    if not commits:  # a shallow clone's single commit, say: no need to ask the index
        return {}
    paths = _indexed_paths(store)
    pairs: Counter[tuple[str, str]] = Counter()
    for files in commits:
        present = [f for f in files if f in paths]
        pairs.update(combinations(present, 2))
    return dict(pairs)


def _change_counts(changes: TreeChanges) -> dict[str, int]:
    counts: dict[str, int] = {"parsed": len(changes.files), "removed": len(changes.removed)}
    for change in changes.paths:
        counts[change.status] = counts.get(change.status, 0) + 1
    return counts


def _truncated_count(store: IndexStore) -> int:
    if store.embedding_dimension() == 0:
        return 0
    rows = store.query("SELECT count(*) FROM chunks c JOIN embeddings e USING (text_hash) "
                       "WHERE e.truncated")
    return int(rows[0][0])
