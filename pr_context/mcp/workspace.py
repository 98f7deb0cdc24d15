"""The repository and its index as the server sees them on each call.

``Workspace.view`` brings the index to HEAD when HEAD has moved (an incremental
update, as ``pr-context index`` does), lists the working tree's changes and overlays
them; a ``View`` then loads what a tool needs (the search corpus, the analysis side)
once, and is reused while neither the index nor the working tree changes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from pr_context.collector import collector_paused
from pr_context.embed import Embedder, backend_variant, make_embedder
from pr_context.errors import GitError, IndexFileError
from pr_context.git import (
    BlobReader,
    IndexCopy,
    Repository,
    resolve_revision,
    worktree_changes,
)
from pr_context.index.build import NO_MODEL, IndexOptions, build_index, policy_at
from pr_context.index.store import IndexStore, Manifest
from pr_context.mcp.bounds import DEFAULT_BUDGET_CHARS, DEFAULT_DEADLINE_S, Deadline
from pr_context.mcp.overlay import DEFAULT_MAX_DIRTY_FILES, KnownTerms, Overlay, OverlayBuilder
from pr_context.mcp.paths import require_work_tree
from pr_context.mcp.schemas import WORKTREE
from pr_context.models import Sha
from pr_context.policy import PathPolicy, decode_text
from pr_context.progress import SilentProgress
from pr_context.secrets import redact_secrets

if TYPE_CHECKING:
    from pr_context.report import Report
    from pr_context.retrieve.corpus import SearchCorpus
    from pr_context.review import IndexSide

__all__ = ["ServerSettings", "View", "Workspace"]

_SHA_CHARS = 40  # a full commit SHA needs no resolving
KEPT_OVERLAYS = 2  # overlaid views kept: an edit undone finds its view loaded


@dataclass(frozen=True)
class ServerSettings:
    budget_chars: int = DEFAULT_BUDGET_CHARS
    deadline_s: float = DEFAULT_DEADLINE_S
    max_dirty_files: int = DEFAULT_MAX_DIRTY_FILES
    index_options: IndexOptions = field(default_factory=IndexOptions)
    onnx_cache: Path = Path.home() / ".cache" / "pr-context" / "onnx"  # ONNX graphs


class View:
    """The index of one commit with the working tree's changes laid over it."""

    def __init__(self, repo: Repository, db: Path, manifest: Manifest, overlay: Overlay,
                 head: str, notes: tuple[str, ...],
                 base: Callable[[], SearchCorpus] | None = None) -> None:
        """``base``, when given, gives the loaded corpus of the indexed commit alone,
        which the overlay's corpus is spliced from."""
        self.repo, self.db, self.manifest, self.overlay = repo, db, manifest, overlay
        self.head = head
        self._base = base
        self.notes = notes + overlay.notes
        self._texts: dict[tuple[str, str], list[str] | None] = {}
        self._blobs: BlobReader | None = None  # one git process for the call's reads
        self._store: IndexStore | None = None

    @property
    def revision(self) -> str:
        return self.manifest.revision

    @property
    def stale(self) -> bool:
        return self.overlay.stale

    def revision_of(self, path: str) -> str:
        """WORKTREE for a file the overlay re-parsed, else the indexed commit."""
        return WORKTREE if path in self.overlay.overlaid else self.revision

    def store(self) -> AbstractContextManager[IndexStore]:
        """The overlaid index, opened once per call and shared by its reads; the file is
        closed again by ``release`` so that other processes may update it between calls."""
        if self._store is None:
            self._store = self.overlay.store(self.db, self.manifest)
        return nullcontext(self._store)

    def release(self) -> None:
        """Close what the call opened: the index file and the git reader."""
        if self._store is not None:
            self._store.close()
            self._store = None
        if self._blobs is not None:
            self._blobs.close()
            self._blobs = None

    @cached_property
    def corpus(self) -> SearchCorpus:
        from pr_context.retrieve.corpus import load_corpus  # the first search pays it

        if self.overlay.empty or self._base is None:
            with collector_paused(), self.store() as store:
                return load_corpus(store)
        from pr_context.retrieve.splice import overlaid_corpus

        # The changed files' corpus alone, spliced into the commit's: what a load of the
        # overlaid index gives, at a cost that grows with the changed files only.
        base = self._base()
        with collector_paused(), self.overlay.part(self.db, self.manifest) as part:
            return overlaid_corpus(base, self.overlay.hidden, load_corpus(part))

    @cached_property
    def side(self) -> IndexSide:
        from pr_context.review import load_side  # graph, links, rendering: on first use

        corpus = self.corpus
        with collector_paused(), self.store() as store:
            return load_side(store, corpus)

    def lines(self, path: str, revision: str) -> list[str] | None:
        """The secret-redacted lines of ``path`` at ``revision`` (WORKTREE: on disk)."""
        key = (path, revision)
        if key not in self._texts:
            data = self._read(path, revision)
            text = redact_secrets(decode_text(data)[0]) if data is not None else None
            self._texts[key] = text.splitlines() if text is not None else None
        return self._texts[key]

    def _read(self, path: str, revision: str) -> bytes | None:
        if revision == WORKTREE:
            try:
                return (self.repo.path / path).read_bytes()
            except OSError:
                return None
        if self._blobs is None:
            self._blobs = BlobReader(self.repo)
        try:
            return self._blobs.read(f"{resolve_revision(self.repo, revision)}:{path}"
                                    if len(revision) != _SHA_CHARS else f"{revision}:{path}")
        except GitError:
            return None


def _files_inside(root: Path, files: tuple[Path, ...]) -> frozenset[str]:
    """The repository paths of ``files`` that lie inside ``root`` (the index itself, when
    it is kept in an unignored folder of the work tree, is no change to overlay)."""
    base = root.resolve()
    return frozenset(p.resolve().relative_to(base).as_posix() for p in files
                     if p.resolve().is_relative_to(base))


@dataclass
class _Cached:
    key: tuple[object, ...]
    view: View


class Workspace:
    """One repository and its index file, shared by every call; ``lock`` serialises them."""

    def __init__(self, repo: Repository, db: Path, settings: ServerSettings,
                 embedder: Embedder | None = None) -> None:
        """:raises BadInputError: ``repo`` is bare: there is no working tree to serve."""
        require_work_tree(repo)
        self.repo, self.db, self.settings = repo, db, settings
        self.lock = threading.Lock()
        self._embedder = embedder
        self._builder = OverlayBuilder(repo, settings.max_dirty_files)
        self._manifest: tuple[object, Manifest] | None = None
        self._policies: dict[str, PathPolicy] = {}
        # The view of the index alone and the latest overlaid ones: reverting the working
        # tree's edits, or undoing the last, returns to a view loaded already.
        self._clean: _Cached | None = None
        self._overlaid: OrderedDict[tuple[object, ...], View] = OrderedDict()
        self._current: View | None = None
        self._scratch: Path | None = None
        self._own_files = _files_inside(repo.path, (db, Path(f"{db}.wal")))
        # change_impact's latest review that analysed every symbol, by what it was made of
        self.last_review: tuple[tuple[object, ...], Report] | None = None
        self._index_copy: IndexCopy | None = None  # of git's index, made on first use

    def view(self, deadline: Deadline) -> View:
        """The index as the working tree has it now, updated to HEAD first if needed.

        :raises IndexFileError: there is no usable index file.
        """
        head = resolve_revision(self.repo, "HEAD")
        manifest, notes = self._current_manifest(head)
        embedder = self.embedder(manifest)
        changes = [c for c in worktree_changes(self.repo, Sha(manifest.revision),
                                               self._git_index())
                   if c.path not in self._own_files]
        with collector_paused():
            overlay = self._builder.build(manifest.revision, changes, self.db,
                                          self.policy(manifest.revision), embedder, deadline,
                                          self._loaded_terms(manifest))
        key = (manifest.build_id, overlay.fingerprint, notes)
        if overlay.empty:
            cached = self._clean
            if cached is None or cached.key != key:
                cached = self._clean = _Cached(key, View(self.repo, self.db, manifest,
                                                         overlay, head, notes))
            self._current = cached.view
        else:
            self._current = self._overlaid_view(key, manifest, overlay, head, notes)
        return self._current

    def _overlaid_view(self, key: tuple[object, ...], manifest: Manifest, overlay: Overlay,
                       head: str, notes: tuple[str, ...]) -> View:
        """The view of ``overlay``, one of the last ``KEPT_OVERLAYS`` states of the
        working tree (each keyed by its files' contents)."""
        view = self._overlaid.pop(key, None)
        if view is None:
            view = View(self.repo, self.db, manifest, overlay, head, notes,
                        lambda: self._base_corpus(manifest, head))
        self._overlaid[key] = view
        while len(self._overlaid) > KEPT_OVERLAYS:
            self._overlaid.popitem(last=False)
        return view

    def _loaded_terms(self, manifest: Manifest) -> KnownTerms | None:
        """The stored terms of chunk texts, when the index's corpus is loaded already
        (re-parsed files mostly keep their chunks: their terms are not counted again)."""
        cached = self._clean
        if cached is None or cached.view.manifest.build_id != manifest.build_id or (
                "corpus" not in vars(cached.view)):
            return None
        return cached.view.corpus.terms_of

    def _base_corpus(self, manifest: Manifest, head: str) -> SearchCorpus:
        """The loaded corpus of the index alone (the clean view's, loaded once per index
        build), for an overlaid view to splice its changes into."""
        cached = self._clean
        if cached is None or cached.view.manifest.build_id != manifest.build_id:
            empty = Overlay(manifest.revision, (), {}, None, frozenset(), False,
                            fingerprint=manifest.revision)
            cached = self._clean = _Cached(
                (manifest.build_id, empty.fingerprint, ()),
                View(self.repo, self.db, manifest, empty, head, ()))
        try:
            return cached.view.corpus
        finally:
            if cached.view is not self._current:
                cached.view.release()  # the index file stays closed between calls

    def embedder(self, manifest: Manifest) -> Embedder | None:
        """The index's own model run by its own backend (loaded only when something is
        embedded)."""
        if manifest.embedding_model == NO_MODEL:
            return None
        if self._embedder is None or self._embedder.name != manifest.embedding_model or (
                backend_variant(self._embedder.backend)
                != backend_variant(manifest.embedding_backend)):
            self._embedder = make_embedder(
                manifest.embedding_model, backend_variant(manifest.embedding_backend),
                self.settings.onnx_cache, lambda _: None)
        return self._embedder

    @property
    def model_loaded(self) -> bool:
        loaded = vars(self._embedder) if self._embedder is not None else {}
        return "_model" in loaded or "_session" in loaded

    def policy(self, sha: str) -> PathPolicy:
        """The path policy the index applies at ``sha`` (its config file plus options)."""
        if sha not in self._policies:
            self._policies[sha] = policy_at(self.repo, Sha(sha), self.settings.index_options)
        return self._policies[sha]

    def manifest(self) -> Manifest:
        """The index file's manifest, read again only when the file changed."""
        try:
            stamp: object = tuple((s.st_mtime_ns, s.st_size) for s in map(
                os.stat, [p for p in (self.db, Path(f"{self.db}.wal")) if p.exists()]))
        except OSError as exc:
            raise IndexFileError(f"cannot read index {self.db}: {exc}") from exc
        if self._manifest is None or self._manifest[0] != stamp:
            if not self.db.is_file():
                raise IndexFileError(
                    f"no index at {self.db}: build it with `pr-context index --repo "
                    f"{self.repo.path} --rev HEAD --db {self.db}`")
            with IndexStore.open_existing(self.db) as store:
                assert store.manifest is not None
                self._manifest = (stamp, store.manifest)
        return self._manifest[1]

    def _git_index(self) -> Path | None:
        """A copy of git's index with its stat data refreshed (``git.IndexCopy``)."""
        if self._index_copy is None:
            self._index_copy = IndexCopy(self.repo, self.scratch() / "git-index")
        return self._index_copy.path()

    def scratch(self) -> Path:
        """A private temporary directory for reviews, removed by ``close``."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="pr-context-mcp-"))
        return self._scratch

    def release(self) -> None:
        """End of a call: the index file and git reader it opened are closed."""
        if self._current is not None:
            self._current.release()

    def close(self) -> None:
        self.release()
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
            self._index_copy = None

    def _current_manifest(self, head: str) -> tuple[Manifest, tuple[str, ...]]:
        """The manifest once the index holds HEAD; when the update cannot run (another
        process holds the file), the old index with a note: the overlay covers the rest."""
        manifest = self.manifest()
        if manifest.revision == head:
            return manifest, ()
        try:
            build_index(self.repo, head, self.db, self.settings.index_options,
                        self.embedder(manifest), SilentProgress())
        except (IndexFileError, GitError) as exc:
            return manifest, (f"the index could not be updated to HEAD {head[:12]} ({exc}); "
                              f"answers are of {manifest.revision[:12]} with the working "
                              "tree's differences overlaid",)
        return self.manifest(), ()
