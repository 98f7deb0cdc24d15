"""Search latency on a ~50k-chunk index with the model loaded.

    python evals/bench_search.py [--out docs/search-performance.md]

Builds one git repository from five pinned PyPI corpora (django, werkzeug, rich,
packaging, pluggy: released code nobody here wrote, downloaded into evals/.cache/),
indexes it without embeddings, then stores a random unit vector for every chunk:
search cost does not depend on the vectors' values, and embedding 50k chunks for real
would take the model ~20 minutes here. Queries are real ones (every gold case's query),
each embedded by the real model as part of its measured latency, run by the default
backend as a user's search runs it. The index records that backend, so the searcher finds
it up to date and embeds nothing at load. Loading the index is reported separately from
per-query latency.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa

from pr_context.defaults import DEFAULT_BACKEND
from pr_context.embed import DEFAULT_MODEL, Embedder, make_embedder
from pr_context.evals.cases import load_cases
from pr_context.evals.corpora import load_corpora, prepare_corpus
from pr_context.git import open_repository
from pr_context.index.build import IndexOptions, build_index
from pr_context.pipeline import Searcher, default_onnx_cache
from pr_context.progress import SilentProgress

EVALS = Path(__file__).resolve().parent
CACHE = EVALS / ".cache"
CORPORA = ("django", "werkzeug", "rich", "packaging", "pluggy")
TARGET_P50_MS = 150.0
SEED = 20261130


def combined_repository(work: Path) -> Path:
    """One repository holding every corpus's files under its own directory."""
    repo = work / "combined"
    if (repo / ".git").is_dir():
        return repo
    repo.mkdir(parents=True)
    for name in CORPORA:
        source = prepare_corpus(name, CACHE)
        shutil.copytree(source, repo / name, ignore=shutil.ignore_patterns(".git"))
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@invalid",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@invalid",
           "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
           "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}
    for args in (["init", "-q", "-b", "main"], ["add", "-A", "-f"],
                 ["commit", "-q", "-m", "combined corpora"]):
        subprocess.run(["git", *args], cwd=repo, env=env, check=True)
    return repo


def index_with_random_vectors(repo: Path, db: Path, dimension: int,
                              backend: str) -> dict[str, object]:
    """Index lexically, then give every chunk text a random unit vector of ``dimension``,
    recorded as made by ``backend`` (the searcher's own, or it would embed them again)."""
    started = time.perf_counter()
    result = build_index(open_repository(repo), "HEAD", db, IndexOptions(), None,
                         SilentProgress())
    con = duckdb.connect(str(db))
    hashes = [h for (h,) in con.execute("SELECT DISTINCT text_hash FROM chunks").fetchall()]
    vectors = np.random.default_rng(SEED).normal(size=(len(hashes), dimension))
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    con.execute(f"CREATE TABLE embeddings (text_hash VARCHAR NOT NULL, tokens INTEGER "
                f"NOT NULL, truncated BOOLEAN NOT NULL, vector FLOAT[{dimension}])")
    rows = pa.table({
        "text_hash": hashes, "tokens": [0] * len(hashes), "truncated": [False] * len(hashes),
        "vector": pa.FixedSizeListArray.from_arrays(
            pa.array(vectors.astype(np.float32).ravel()), dimension)})
    con.register("random_vectors", rows)
    con.execute("INSERT INTO embeddings SELECT * FROM random_vectors")
    con.execute("UPDATE manifest SET value = ? WHERE key = 'embedding_model'", (DEFAULT_MODEL,))
    con.execute("UPDATE manifest SET value = ? WHERE key = 'embedding_dimension'",
                (str(dimension),))
    con.execute("UPDATE manifest SET value = ? WHERE key = 'embedding_backend'", (backend,))
    con.close()
    return {"files": result.files, "chunks": result.chunks,
            "build_s": round(time.perf_counter() - started, 1)}


def loaded_embedder() -> tuple[Embedder, float]:
    """The default backend's embedder, model loaded, and the seconds loading took."""
    started = time.perf_counter()
    embedder = make_embedder(DEFAULT_MODEL, DEFAULT_BACKEND, default_onnx_cache(os.environ),
                             print)
    embedder.embed(["warm up"])
    return embedder, time.perf_counter() - started


def measure(repo: Path, db: Path, queries: list[str], embedder: Embedder,
            model_s: float) -> dict[str, object]:
    searcher = Searcher(embedder, SilentProgress())
    repository = open_repository(repo)
    started = time.perf_counter()
    if searcher.ensure_index(repository, "HEAD", db).embedded:
        raise SystemExit("the searcher embedded chunks again: the index's recorded embedder "
                         "is not the searcher's, and the figures would include that work")
    corpus = searcher.corpus(repository, "HEAD", db)
    corpus.prepare()  # otherwise built by the first query
    load_s = time.perf_counter() - started
    latencies = []
    for query in queries:
        started = time.perf_counter()
        searcher.search(corpus, query, 10)
        latencies.append((time.perf_counter() - started) * 1000)
    latencies.sort()
    return {"model_load_s": round(model_s, 1), "index_load_s": round(load_s, 1),
            "queries": len(latencies), "chunks": len(corpus.chunks),
            "p50_ms": round(statistics.median(latencies), 1),
            "p90_ms": round(latencies[int(0.9 * (len(latencies) - 1))], 1),
            "max_ms": round(latencies[-1], 1)}


def render(figures: dict[str, object], build: dict[str, object]) -> str:
    met = "yes" if float(str(figures["p50_ms"])) <= TARGET_P50_MS else "**no**"
    return f"""# Search performance

Measured by [`evals/bench_search.py`](../evals/bench_search.py) (`python
evals/bench_search.py`) on {time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, Python
{platform.python_version()}. The machine is shared and noisy.

One index of {build['chunks']:,} chunks ({build['files']:,} files: django, werkzeug,
rich, packaging and pluggy from PyPI in one repository). Every chunk gets a random unit
vector instead of a real embedding: search cost does not depend on vector values, and
embedding 50k chunks would take the model about 20 minutes here. The
{figures['queries']} queries are the gold cases' queries, each embedded by the real
model (all-MiniLM-L6-v2, {DEFAULT_BACKEND} backend) inside its measured time.

| figure | value | target |
|---|---|---|
| per-query latency p50 | {figures['p50_ms']} ms | ≤ {TARGET_P50_MS:.0f} ms ({met}) |
| per-query latency p90 | {figures['p90_ms']} ms | |
| slowest query | {figures['max_ms']} ms | |
| loading the index and its search structures | {figures["index_load_s"]} s | once |
| loading the model | {figures['model_load_s']} s | once per process |
| lexical build of the index | {build['build_s']} s | |
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=EVALS.parent / "docs" /
                        "search-performance.md")
    args = parser.parse_args()
    work = CACHE / "bench-search"
    work.mkdir(parents=True, exist_ok=True)
    repo = combined_repository(work)
    db = work / "combined.duckdb"
    db.unlink(missing_ok=True)
    embedder, model_s = loaded_embedder()
    build = index_with_random_vectors(repo, db, 384, embedder.backend)
    cases = load_cases(EVALS / "cases", load_corpora(EVALS / "corpora.yml"))
    figures = measure(repo, db, [c.query for c in cases], embedder, model_s)
    print(json.dumps({**build, **figures}), file=sys.stderr)
    args.out.write_text(render(figures, build), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
