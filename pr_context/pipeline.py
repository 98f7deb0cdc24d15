"""Wires the stages together for the commands: index a revision, then search it.

The CLI and the evaluation harness call these; they hold no logic of their own beyond
choosing the embedder an index needs and keeping loaded corpora for reuse.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pr_context.defaults import DEFAULT_K
from pr_context.embed import (
    DEFAULT_BACKEND,
    DEFAULT_MODEL,
    Embedder,
    backend_variant,
    make_embedder,
)
from pr_context.errors import EmbeddingError, IndexFileError
from pr_context.git import Repository, resolve_revision
from pr_context.index.build import NO_MODEL, IndexOptions, IndexResult, build_index
from pr_context.index.store import IndexStore
from pr_context.progress import Progress
from pr_context.retrieve import SearchOutcome, search
from pr_context.retrieve.corpus import SearchCorpus, load_corpus
from pr_context.retrieve.foreign_names import LANGUAGE_NAMES
from pr_context.retrieve.fusion import intent_words, prose_of
from pr_context.retrieve.messages import reported_message
from pr_context.retrieve.tokens import plain_words, proper_names, technology_names

__all__ = ["EmbeddingChoice", "Searcher", "default_onnx_cache", "embedder_for",
           "existing_model"]

# Name phrases kept embedded by a long-lived searcher (an MCP server): 384 floats each,
# about 75 MB at most; past it the cache starts again.
MAX_CACHED_NAME_VECTORS = 50_000
# A past participle, an -ize verb or an adverb says how something is done ("tokenized",
# "hyphenated", "serialize"), and code names that otherwise: absent from the codebase, it
# is a paraphrase, not a thing the codebase lacks (as "bcrypt", "asyncio", "SMTP" are).
# Gerunds stay: they name techniques ("backtracking", "sharding", "caching").
_DESCRIBES_HOW = re.compile(r"(?:ed|ly|i[sz](?:e|es))$", re.IGNORECASE)


@dataclass(frozen=True)
class EmbeddingChoice:
    """How to embed, as asked: None for the index's own model and backend."""

    model: str | None
    backend: str | None
    onnx_cache: Path  # where ONNX graphs are kept


def default_onnx_cache(environ: Mapping[str, str]) -> Path:
    """A user cache folder for ONNX graphs: $XDG_CACHE_HOME/pr-context/onnx."""
    base = environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pr-context" / "onnx"


def existing_model(db: Path) -> str | None:
    """The embedding model an existing index was built with, if it can be read."""
    existing = _existing_embedder(db)
    return existing[0] if existing else None


def _existing_embedder(db: Path) -> tuple[str, str] | None:
    if not db.is_file():
        return None
    try:
        with IndexStore.open_existing(db) as store:
            assert store.manifest is not None
            return store.manifest.embedder()
    except IndexFileError:  # unreadable: the index command will repair it
        return None


def embedder_for(choice: EmbeddingChoice, no_embeddings: bool, db: Path,
                 warn: Callable[[str], None]) -> Embedder | None:
    """The embedder to index and search with: explicit choice, else the index's own
    model and backend, else the defaults. Loads nothing yet."""
    if no_embeddings:
        return None
    existing = _existing_embedder(db) if not (choice.model and choice.backend) else None
    model = choice.model or (existing[0] if existing else None) or DEFAULT_MODEL
    if model == NO_MODEL:
        return None
    same_model = existing is not None and existing[0] == model and existing[1] != NO_MODEL
    backend = choice.backend or (backend_variant(existing[1]) if existing and same_model
                                 else DEFAULT_BACKEND)
    return make_embedder(model, backend, choice.onnx_cache, warn)


@contextmanager
def model_loading(embedder: Embedder | None) -> Iterator[None]:
    """``embedder``'s model loaded in a worker thread while the block runs (a search
    reads its index meanwhile, on the other core), and loaded when the block ends. A
    model that cannot load is left to the first ``embed``, which raises the error."""
    if embedder is None:
        yield
        return
    with ThreadPoolExecutor(1, thread_name_prefix="model-load") as pool:
        pool.submit(embedder.load)
        yield


@dataclass
class Searcher:
    """Indexes a revision on demand and answers queries on it, reusing what it loaded."""

    embedder: Embedder | None
    progress: Progress
    options: IndexOptions = field(default_factory=IndexOptions)
    _corpora: dict[tuple[Path, str], SearchCorpus] = field(default_factory=dict)
    _name_vectors: dict[str, np.ndarray] = field(default_factory=dict)

    def ensure_index(self, repo: Repository, rev: str, db: Path) -> IndexResult:
        return build_index(repo, rev, db, self.options, self.embedder, self.progress)

    def corpus(self, repo: Repository, rev: str, db: Path) -> SearchCorpus:
        """The loaded index of ``rev``, built or updated first if needed.

        A corpus already loaded for this file and commit is reused without touching git
        or the file again.
        """
        key = (db.resolve(), resolve_revision(repo, rev))
        if key not in self._corpora:
            self.ensure_index(repo, key[1], db)
            with IndexStore.open_existing(db) as store:
                self._corpora[key] = load_corpus(store)
        return self._corpora[key]

    def search(self, corpus: SearchCorpus, query: str, k: int = DEFAULT_K,
               path_context: str | None = None) -> SearchOutcome:
        skip = intent_words(query, corpus.role_markers)
        # Quoted text and code are values the user pasted (a mistyped name, their own
        # file), not concepts asked for, and so are the words of a reported error's
        # message, which hold the user's data: only the rest can name what the code lacks
        # (names written as code are judged apart: retrieve/foreign_names.py).
        message = reported_message(query)
        prose = prose_of(query[: len(query.rstrip()) - len(message)] if message else query)
        # A capitalised compound the codebase defines is one of its classes, not a product,
        # and one the language defines (``KeyboardInterrupt``) is no concept it may lack.
        names = [w for w in proper_names(prose)
                 if w not in corpus.definitions_by_name and w not in LANGUAGE_NAMES]
        rare = frozenset(w for w in [*plain_words(prose), *names]
                         if self.embedder is not None and w.lower() not in skip
                         and not _DESCRIBES_HOW.search(w)
                         and self.embedder.word_pieces(w) > 1)
        rare |= frozenset(technology_names(prose))
        return search(corpus, query, k, self.query_vector(corpus, query), path_context, rare,
                      self.embed_names if self.embedder is not None else None)

    def embed_names(self, phrases: Sequence[str]) -> np.ndarray:
        """The vectors of definitions' name phrases, each embedded once per process."""
        missing = [p for p in dict.fromkeys(phrases) if p not in self._name_vectors]
        if missing and self.embedder is not None:
            if len(self._name_vectors) + len(missing) > MAX_CACHED_NAME_VECTORS:
                self._name_vectors.clear()
            self._name_vectors.update(zip(missing, self.embedder.embed(missing).vectors,
                                          strict=True))
        return np.stack([self._name_vectors[p] for p in phrases])

    def query_vector(self, corpus: SearchCorpus, query: str) -> np.ndarray | None:
        if corpus.vectors is None:
            return None
        if self.embedder is None or self.embedder.name != corpus.manifest.embedding_model:
            raise EmbeddingError(
                f"the index was embedded with {corpus.manifest.embedding_model!r}; "
                "search it with the same --model")
        if self.embedder.backend != corpus.manifest.embedding_backend:
            raise EmbeddingError(
                f"the index was embedded by the {corpus.manifest.embedding_backend!r} "
                f"backend, not {self.embedder.backend!r}; search it with the same "
                "--embedding-backend, or re-embed it with `pr-context index "
                f"--embedding-backend {backend_variant(self.embedder.backend)}`")
        vector: np.ndarray = self.embedder.embed([query]).vectors[0]
        return vector
