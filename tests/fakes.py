"""In-repo fakes for the seams (STYLE: fakes through a seam, never patching our modules)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pr_context.embed import Embeddings
from pr_context.git import open_repository
from pr_context.pipeline import Searcher
from pr_context.progress import SilentProgress
from pr_context.retrieve.corpus import SearchCorpus

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class FakeEmbedder:
    """Deterministic bag-of-words hashing embedder: same text, same vector, no model.

    Texts sharing words land near each other, which is enough to test the logic around
    embeddings. ``calls`` records every batch, so tests can assert what was embedded.
    """

    name = "fake-hashing-embedder"
    dimension = 256
    max_tokens = 64

    def __init__(self, backend: str = "fake") -> None:
        self.backend = backend
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str], threads: int | None = None) -> Embeddings:
        self.calls.append(list(texts))
        vectors = np.zeros((len(texts), self.dimension), np.float32)
        counts = []
        for row, text in enumerate(texts):
            words = _WORD.findall(text)
            counts.append(len(words) + 2)
            for word in words:
                bucket = int(hashlib.md5(word.lower().encode()).hexdigest()[:8], 16)
                vectors[row, bucket % self.dimension] += 1.0
            norm = float(np.linalg.norm(vectors[row])) or 1.0
            vectors[row] /= norm
        return Embeddings(vectors, tuple(counts))

    def load(self) -> None:
        """Nothing to load."""

    def word_pieces(self, word: str) -> int:
        """Like a WordPiece vocabulary of short words: long or digit-bearing words split."""
        return 1 + (len(word) > 10) + any(ch.isdigit() for ch in word)

    @property
    def embedded_texts(self) -> list[str]:
        return [t for batch in self.calls for t in batch]


def fake_search(repo: Path, db: Path) -> tuple[Searcher, SearchCorpus]:
    """A searcher embedding with FakeEmbedder, and the corpus of ``repo``'s HEAD."""
    searcher = Searcher(FakeEmbedder(), SilentProgress())
    return searcher, searcher.corpus(open_repository(repo), "HEAD", db)
