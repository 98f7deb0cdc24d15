"""Wires the stages together for the commands: index a revision, then search it.

The CLI and the evaluation harness call these; they hold no logic of their own beyond
choosing the embedder an index needs and keeping loaded corpora for reuse.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pr_context.embed import DEFAULT_MODEL, Embedder, SentenceTransformerEmbedder
from pr_context.errors import EmbeddingError, IndexFileError
from pr_context.git import Repository, resolve_revision
from pr_context.index.build import NO_MODEL, IndexOptions, IndexResult, build_index
from pr_context.index.store import IndexStore
from pr_context.progress import Progress
from pr_context.retrieve import DEFAULT_K, SearchOutcome, search
from pr_context.retrieve.corpus import SearchCorpus, load_corpus
from pr_context.retrieve.fusion import intent_words
from pr_context.retrieve.tokens import plain_words, proper_names, technology_names

__all__ = ["Searcher", "embedder_for", "existing_model"]

# A past participle, an -ize verb or an adverb says how something is done ("tokenized",
# "hyphenated", "serialize"), and code names that otherwise: absent from the codebase, it
# is a paraphrase, not a thing the codebase lacks (as "bcrypt", "asyncio", "SMTP" are).
# Gerunds stay: they name techniques ("backtracking", "sharding", "caching").
_DESCRIBES_HOW = re.compile(r"(?:ed|ly|i[sz](?:e|es))$", re.IGNORECASE)


def existing_model(db: Path) -> str | None:
    """The embedding model an existing index was built with, if it can be read."""
    if not db.is_file():
        return None
    try:
        with IndexStore.open_existing(db) as store:
            assert store.manifest is not None
            return store.manifest.embedding_model
    except IndexFileError:  # unreadable: the index command will repair it
        return None


def embedder_for(model: str | None, no_embeddings: bool, db: Path) -> Embedder | None:
    """The embedder to index and search with: explicit choice, else the index's own."""
    if no_embeddings:
        return None
    chosen = model or existing_model(db) or DEFAULT_MODEL
    return None if chosen == NO_MODEL else SentenceTransformerEmbedder(chosen)


@dataclass
class Searcher:
    """Indexes a revision on demand and answers queries on it, reusing what it loaded."""

    embedder: Embedder | None
    progress: Progress
    options: IndexOptions = field(default_factory=IndexOptions)
    _corpora: dict[tuple[Path, str], SearchCorpus] = field(default_factory=dict)

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
        skip = intent_words(query)
        # A capitalised compound the codebase defines is one of its classes, not a product.
        names = [w for w in proper_names(query) if w not in corpus.definitions_by_name]
        rare = frozenset(w for w in [*plain_words(query), *names]
                         if self.embedder is not None and w.lower() not in skip
                         and not _DESCRIBES_HOW.search(w)
                         and self.embedder.word_pieces(w) > 1)
        rare |= frozenset(technology_names(query))
        return search(corpus, query, k, self.query_vector(corpus, query), path_context, rare)

    def query_vector(self, corpus: SearchCorpus, query: str) -> np.ndarray | None:
        if corpus.vectors is None:
            return None
        if self.embedder is None or self.embedder.name != corpus.manifest.embedding_model:
            raise EmbeddingError(
                f"the index was embedded with {corpus.manifest.embedding_model!r}; "
                "search it with the same --model")
        vector: np.ndarray = self.embedder.embed([query]).vectors[0]
        return vector
