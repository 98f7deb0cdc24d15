"""The retrievers live evaluation compares: pr-context's hybrid search and three baselines.

- ``hybrid``: ``pr-context search`` itself.
- ``bm25``: BM25 alone over the same chunks (no threshold, no roles, no structure).
- ``embedding``: cosine similarity alone over the same chunks and vectors.
- ``rrf``: the textbook hybrid: BM25 and embedding rankings fused by reciprocal rank
  (K=60, equal weights), nothing else.
- ``naive-windows``: the common first attempt: every indexed file cut into 400-line
  windows, embedded with the same model, ranked by cosine. A window reports the
  definitions it fully contains (``contains``), so it is credited for a symbol when the
  symbol's whole definition reaches the reader.

The first four share one index per corpus (same settings, so no retriever forces
another's rebuild); the naive baseline keeps its windows in its own file.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np

from pr_context.embed import Embedder
from pr_context.evals import LIVE_RETRIEVERS
from pr_context.evals.results import RankedChunk, SearchRun
from pr_context.evals.runner import Retriever
from pr_context.git import (
    BlobReader,
    Repository,
    list_files,
    open_repository,
    resolve_revision,
)
from pr_context.pipeline import Searcher
from pr_context.policy import decode_text
from pr_context.progress import Progress
from pr_context.retrieve import SearchHit
from pr_context.retrieve.corpus import SearchCorpus
from pr_context.retrieve.signals import bm25_ranking, cosine_scores, embedding_ranking

__all__ = [
    "LIVE_RETRIEVERS",
    "NAIVE_WINDOW_LINES",
    "HybridRetriever",
    "NaiveWindowsRetriever",
    "RrfRetriever",
    "SingleSignalRetriever",
    "live_retrievers",
]

NAIVE_WINDOW_LINES = 400
# The customary constant of reciprocal-rank fusion (Cormack et al. 2009), untuned.
TEXTBOOK_RRF_K = 60


def _shared_db(db: Path) -> Path:
    return db.parent.parent / "shared" / db.name


def _manifest(corpus: SearchCorpus) -> dict[str, object]:
    m = corpus.manifest
    return {"revision": m.revision, "build_id": m.build_id, "parser_version": m.parser_version,
            "embedding_model": m.embedding_model, "path_policy": m.path_policy,
            "schema_version": m.schema_version}


def _ranked(hit: SearchHit) -> RankedChunk:
    return RankedChunk(rank=hit.rank, chunk_id=hit.chunk_id, path=hit.path, symbol=hit.symbol,
                       role=hit.role, start_line=hit.start_line, end_line=hit.end_line,
                       revision=hit.revision, score=hit.score, components=hit.components)


@dataclass
class HybridRetriever:
    searcher: Searcher

    def search(self, repo: Path, revision: str, db: Path, query: str, k: int,
               path_context: str | None) -> SearchRun:
        corpus = self.searcher.corpus(open_repository(repo), revision, _shared_db(db))
        outcome = self.searcher.search(corpus, query, k, path_context)
        return SearchRun(manifest=_manifest(corpus), rewritten_query=outcome.rewritten_query,
                         candidates=[_ranked(h) for h in outcome.candidates],
                         results=[_ranked(h) for h in outcome.hits], message=outcome.message)


@dataclass
class SingleSignalRetriever:
    """Ranks the hybrid's chunks by one signal alone."""

    searcher: Searcher
    signal: str  # "bm25" or "embedding"

    def search(self, repo: Path, revision: str, db: Path, query: str, k: int,
               path_context: str | None) -> SearchRun:
        corpus = self.searcher.corpus(open_repository(repo), revision, _shared_db(db))
        if self.signal == "bm25":
            ranking = bm25_ranking(corpus, query, k)
        else:
            vector = self.searcher.query_vector(corpus, query)
            ranking = embedding_ranking(cosine_scores(corpus, vector), k)
        results = [_single_chunk(corpus, rank, index, score, self.signal)
                   for rank, (index, score) in enumerate(ranking, start=1)]
        return SearchRun(manifest=_manifest(corpus), rewritten_query=None,
                         candidates=results, results=results)


@dataclass
class RrfRetriever:
    """BM25 and embedding rankings fused by reciprocal rank: the usual hybrid baseline."""

    searcher: Searcher

    def search(self, repo: Path, revision: str, db: Path, query: str, k: int,
               path_context: str | None) -> SearchRun:
        corpus = self.searcher.corpus(open_repository(repo), revision, _shared_db(db))
        vector = self.searcher.query_vector(corpus, query)
        fused: dict[int, float] = {}
        for ranking in (bm25_ranking(corpus, query), embedding_ranking(
                cosine_scores(corpus, vector))):
            for rank, (index, _score) in enumerate(ranking, start=1):
                fused[index] = fused.get(index, 0.0) + 1.0 / (TEXTBOOK_RRF_K + rank)
        order = sorted(fused.items(), key=lambda item: (-item[1], item[0]))[:k]
        results = [_single_chunk(corpus, rank, index, score, "rrf")
                   for rank, (index, score) in enumerate(order, start=1)]
        return SearchRun(manifest=_manifest(corpus), rewritten_query=None,
                         candidates=results, results=results)


def _single_chunk(corpus: SearchCorpus, rank: int, index: int, score: float,
                  signal: str) -> RankedChunk:
    c = corpus.chunks[index]
    return RankedChunk(rank=rank, chunk_id=c.chunk_id, path=c.path, symbol=c.symbol,
                       role=c.role, start_line=c.start_line, end_line=c.end_line,
                       revision=corpus.revision, score=round(score, 6),
                       components={signal: round(score, 6)})


@dataclass
class _Windows:
    ids: list[str]
    paths: list[str]
    starts: list[int]
    ends: list[int]
    vectors: np.ndarray


@dataclass
class NaiveWindowsRetriever:
    """400-line windows + embeddings: no AST, no lexical signal, no roles in ranking."""

    searcher: Searcher
    embedder: Embedder
    progress: Progress
    _loaded: dict[Path, _Windows] = field(default_factory=dict)

    def search(self, repo: Path, revision: str, db: Path, query: str, k: int,
               path_context: str | None) -> SearchRun:
        repository = open_repository(repo)
        corpus = self.searcher.corpus(repository, revision, _shared_db(db))
        windows = self._windows(repository, revision, db, corpus)
        scores = windows.vectors @ self.embedder.embed([query]).vectors[0]
        order = np.lexsort((np.arange(scores.size), -scores))[:k]
        roles = {c.path: c.role for c in corpus.chunks}
        results = []
        for rank, i in enumerate(order, start=1):
            results.append(RankedChunk(
                rank=rank, chunk_id=windows.ids[i], path=windows.paths[i], symbol=None,
                role=roles.get(windows.paths[i], "production"), start_line=windows.starts[i],
                end_line=windows.ends[i], revision=corpus.revision,
                score=round(float(scores[i]), 6),
                components={"embedding": round(float(scores[i]), 6)},
                contains=tuple(_contained(corpus, windows.paths[i], windows.starts[i],
                                          windows.ends[i]))))
        return SearchRun(manifest=_manifest(corpus), rewritten_query=None,
                         candidates=results, results=results)

    def _windows(self, repo: Repository, revision: str, db: Path,
                 corpus: SearchCorpus) -> _Windows:
        if db in self._loaded:
            return self._loaded[db]
        texts, meta = _cut_windows(repo, revision, corpus)
        vectors = self._cached_vectors(db, texts)
        windows = _Windows([m[0] for m in meta], [m[1] for m in meta], [m[2] for m in meta],
                           [m[3] for m in meta], vectors)
        self._loaded[db] = windows
        return windows

    def _cached_vectors(self, db: Path, texts: list[str]) -> np.ndarray:
        """Embed windows once per text, kept in the baseline's own DuckDB file."""
        db.parent.mkdir(parents=True, exist_ok=True)
        dim = self.embedder.dimension
        con = duckdb.connect(str(db))
        con.execute(f"CREATE TABLE IF NOT EXISTS windows (h VARCHAR, v FLOAT[{dim}])")
        hashes = [hashlib.sha256(t.encode("utf-8", "surrogatepass")).hexdigest() for t in texts]
        stored = dict(con.execute("SELECT h, v FROM windows").fetchall())
        missing = sorted({h: t for h, t in zip(hashes, texts, strict=True)
                          if h not in stored}.items())
        if missing:
            self.progress.start("embedding 400-line windows", len(missing))
            vectors = self.embedder.embed([t for _, t in missing]).vectors
            self.progress.advance(len(missing))
            con.executemany("INSERT INTO windows VALUES (?, ?)",
                            [(h, v.tolist()) for (h, _), v in zip(missing, vectors, strict=True)])
            stored.update({h: v.tolist() for (h, _), v in zip(missing, vectors, strict=True)})
            self.progress.finish()
        con.close()
        return np.asarray([stored[h] for h in hashes], dtype=np.float32).reshape(-1, dim)


def _cut_windows(repo: Repository, revision: str, corpus: SearchCorpus
                 ) -> tuple[list[str], list[tuple[str, str, int, int]]]:
    indexed = corpus.paths
    texts: list[str] = []
    meta: list[tuple[str, str, int, int]] = []
    sha = resolve_revision(repo, revision)
    with BlobReader(repo) as blobs:
        for entry in list_files(repo, sha):
            if entry.path not in indexed:
                continue
            lines = decode_text(blobs.read(entry.blob_sha))[0].splitlines()
            for start in range(0, max(len(lines), 1), NAIVE_WINDOW_LINES):
                end = min(start + NAIVE_WINDOW_LINES, len(lines))
                texts.append(f"{entry.path}\n" + "\n".join(lines[start:end]))
                meta.append((f"{entry.path}:{start + 1}-{end}", entry.path, start + 1, end))
    return texts, meta


def _contained(corpus: SearchCorpus, path: str, start: int, end: int) -> list[str]:
    """Qualified names of the chunks in ``path`` lying wholly inside the window."""
    return sorted({c.symbol for c in corpus.chunks
                   if c.path == path and c.symbol and start <= c.start_line
                   and c.end_line <= end})


def live_retrievers(searcher: Searcher, embedder: Embedder | None,
                    progress: Progress) -> dict[str, Retriever]:
    """Hybrid first, then the baselines that apply to this index."""
    retrievers: dict[str, Retriever] = {
        "hybrid": HybridRetriever(searcher),
        "bm25": SingleSignalRetriever(searcher, "bm25"),
    }
    if embedder is not None:
        retrievers["embedding"] = SingleSignalRetriever(searcher, "embedding")
        retrievers["rrf"] = RrfRetriever(searcher)
        retrievers["naive-windows"] = NaiveWindowsRetriever(searcher, embedder, progress)
    return retrievers

