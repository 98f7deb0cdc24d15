"""The real embedding model, end to end: offline load, index, truncation, search."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import duckdb
import numpy as np
import pytest

from pr_context.embed import (
    DEFAULT_MODEL,
    SentenceTransformerEmbedder,
    default_model_path,
    mean_pooling_model,
)
from pr_context.errors import EmbeddingError
from pr_context.git import open_repository
from pr_context.pipeline import Searcher
from pr_context.progress import SilentProgress
from tests.conftest import GitRepo

pytestmark = pytest.mark.model

LONG_BODY = "\n".join(f"    total += compute_weight(item_{i}, factor={i})" for i in range(70))
FILES = {
    "shipping/rates.py": '''def shipping_cost(weight_kg, distance_km):
    """Price a parcel by weight and distance, with a minimum charge."""
    return max(4.99, 0.5 * weight_kg + 0.01 * distance_km)
''',
    "shipping/retry.py": '''import time


def with_backoff(call, attempts=5):
    """Retry a flaky network call, doubling the wait after each failure."""
    for attempt in range(attempts):
        try:
            return call()
        except ConnectionError:
            time.sleep(2 ** attempt)
    raise ConnectionError("gave up")
''',
    "shipping/big.py": f"def big_sum(items):\n    total = 0\n{LONG_BODY}\n    return total\n",
}


def test_default_model_loads_offline_from_its_package(
        real_embedder: SentenceTransformerEmbedder) -> None:
    assert default_model_path() is not None
    result = real_embedder.embed(["retry with exponential backoff", "x " * 400])
    assert result.vectors.shape == (2, 384)
    assert np.allclose(np.linalg.norm(result.vectors, axis=1), 1.0, atol=1e-4)
    assert result.token_counts[1] > real_embedder.max_tokens == 256
    assert real_embedder.word_pieces("bcrypt") > 1 == real_embedder.word_pieces("house")


def test_index_and_search_with_the_real_model(
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        real_embedder: SentenceTransformerEmbedder) -> None:
    repo = make_repo(FILES)
    db = tmp_path / "index.duckdb"
    searcher = Searcher(real_embedder, SilentProgress())
    corpus = searcher.corpus(open_repository(repo.path), "HEAD", db)
    con = duckdb.connect(str(db), read_only=True)
    manifest = dict(con.execute("SELECT key, value FROM manifest").fetchall())
    truncated = con.execute("SELECT count(*) FROM embeddings WHERE truncated").fetchall()
    con.close()
    assert manifest["embedding_model"] == DEFAULT_MODEL
    assert manifest["embedding_dimension"] == "384"
    assert truncated[0][0] >= 1  # big_sum is longer than the model's 256 tokens
    outcome = searcher.search(corpus, "how are failed network calls retried with a delay")
    assert outcome.hits[0].symbol == "shipping.retry.with_backoff"
    assert searcher.search(corpus, "render a 3d scene with raytracing").hits == []


def test_an_unknown_model_is_a_clear_error() -> None:
    embedder = SentenceTransformerEmbedder("/nonexistent/model/path")
    with pytest.raises(EmbeddingError, match="cannot load embedding model"):
        embedder.embed(["x"])
    with pytest.raises(EmbeddingError, match="cannot load embedding model"):
        embedder.load()  # what a build's worker thread calls ahead of the texts


def test_mean_pooling_path_computes_what_sentence_transformers_does(
        real_embedder: SentenceTransformerEmbedder) -> None:
    from sentence_transformers import SentenceTransformer

    location = default_model_path()
    assert location is not None and mean_pooling_model(location) == 256
    texts = [*FILES.values(), "where is the retry backoff", "x" * 5000, "é ü — 日本語"]
    fast = real_embedder.embed(texts).vectors
    reference = SentenceTransformer(location, device="cpu").encode(
        texts, batch_size=2, normalize_embeddings=True, convert_to_numpy=True)
    assert np.abs(fast - reference).max() < 1e-5


def test_models_with_other_pooling_take_the_library(tmp_path: Path) -> None:
    location = default_model_path()
    assert location is not None
    copy = tmp_path / "model"
    shutil.copytree(location, copy)
    pooling = copy / "1_Pooling" / "config.json"
    pooling.write_text(pooling.read_text().replace(
        '"pooling_mode_cls_token": false', '"pooling_mode_cls_token": true'))
    assert mean_pooling_model(str(copy)) is None
    assert mean_pooling_model("sentence-transformers/all-MiniLM-L6-v2") is None


SCOPE = '''class CancelScope:
    """Cancels the tasks started inside it when cancelled or past its deadline."""

    def __init__(self, deadline=None, shield=False):
        self._deadline = deadline
        self._shield = shield

    def cancel(self):
        self._cancel_called = True

    @property
    def shield(self):
        return self._shield

    @property
    def deadline(self):
        return self._deadline
'''


def test_the_model_reads_what_a_name_means_where_no_word_is_shared(
        make_repo: Callable[..., GitRepo], tmp_path: Path,
        real_embedder: SentenceTransformerEmbedder) -> None:
    searcher = Searcher(real_embedder, SilentProgress())
    corpus = searcher.corpus(open_repository(make_repo({"scopes.py": SCOPE}).path), "HEAD",
                             tmp_path / "index.duckdb")
    outcome = searcher.search(corpus, "the time limit after which the scope cancels its tasks")
    read = [h for h in outcome.candidates if "name_meaning" in h.components]
    # "time limit" shares no word with ``deadline``; the model knows what it means.
    best = max(read, key=lambda h: h.components["name_meaning"])
    assert best.symbol == "scopes.CancelScope.deadline"
