"""Embedding backends compared: full builds with torch, onnx and onnx-int8, interleaved.

Usage::

    python evals/bench_backends.py --doc docs/embedding-backends.md
    python evals/bench_backends.py --include 'sphinx/domains/**' --include 'django/db/**'

On real code nobody here wrote (the sphinx and django-core sdists of
``evals/bench_index.py``), every round builds each corpus's index from scratch once per
backend, each build its own ``pr-context index`` process (wall time and peak RSS as a
user gets them), and times the torch model's own ``encode`` of the same distinct chunk
texts in this process, model loaded beforehand: the floor the issue's target is set on
(a build at most 0.6x that encode time). Backends rotate from round to round, so a
machine whose load drifts treats them alike. Agreement is each backend's stored vector
against torch's for the same text (cosine). ``--include`` keeps only matching paths of
a corpus (named by its first path segment), for a machine where full builds take hours;
the report says which paths were kept.

The ONNX exports are made once before timing (their cost is reported apart). Side
effects: corpora and indexes under ``evals/.cache/``, raw figures in
``evals/out/bench_backends.json``, the report at ``--doc``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_index import (
    _DJANGO_CORE,
    CACHE_DIR,
    ENCODE_BATCH_SIZE,
    OUT_DIR,
    Corpus,
    Release,
    _distinct_chunk_texts,
    machine_facts,
    prepare_corpus,
    run_index,
)

SPHINX = Corpus("sphinx", (Release("sphinx", "8.1.3"),))
CORPORA = (SPHINX, _DJANGO_CORE)
BACKENDS = ("torch", "onnx", "onnx-int8")
TARGET_BUILD_VS_ENCODE = 0.6
WORK = CACHE_DIR / "bench-backends"


def measure_corpus(corpus: Corpus, includes: Sequence[str], rounds: int,
                   model: Any) -> dict[str, Any]:
    repo = prepare_corpus(corpus)
    rev = corpus.head_tag
    kept = [g for g in includes if g.split("/", 1)[0] in (corpus.name, corpus.name.split(
        "-")[0])]
    extra = [arg for glob in kept for arg in ("--include", glob)]
    work = WORK / corpus.name
    work.mkdir(parents=True, exist_ok=True)
    scratch = work / "texts.duckdb"
    run_index(corpus.name, repo, rev, scratch, False, extra)
    texts = _distinct_chunk_texts(scratch)
    onnx_cache = WORK / "onnx"
    export_s = {b: _export(b, onnx_cache) for b in BACKENDS[1:]}
    builds: dict[str, list[dict[str, float]]] = {b: [] for b in BACKENDS}
    encode_s: list[float] = []
    for round_number in range(rounds):
        shift = round_number % len(BACKENDS)
        for backend in (*BACKENDS[shift:], *BACKENDS[:shift]):
            db = work / f"{backend}.duckdb"
            for suffix in ("", ".wal"):
                Path(f"{db}{suffix}").unlink(missing_ok=True)
            run = run_index(corpus.name, repo, rev, db, True, [
                *extra, "--embedding-backend", backend, "--onnx-cache", str(onnx_cache)])
            builds[backend].append({"wall_s": run.wall_s, "peak_rss_mb": run.peak_rss_mb,
                                    "embedded": float(run.count("embedded"))})
            encode_s.append(_time_encode(model, texts))
            _log(f"{corpus.name} round {round_number + 1} {backend}: build "
                 f"{run.wall_s:.1f}s, torch encode {encode_s[-1]:.1f}s")
    reference = _vectors(work / "torch.duckdb")
    agreement = {b: _agreement(reference, _vectors(work / f"{b}.duckdb")) for b in BACKENDS}
    return {"corpus": corpus.name, "release": f"{corpus.releases[-1].name}=="
            f"{corpus.releases[-1].version}", "includes": kept, "texts": len(texts),
            "builds": builds, "encode_s": encode_s, "agreement": agreement,
            "export_s": export_s}


def _export(backend: str, cache: Path) -> float:
    from pr_context.embed import DEFAULT_MODEL, make_embedder

    started = time.perf_counter()
    make_embedder(DEFAULT_MODEL, backend, cache, _log).embed(["export"])
    return time.perf_counter() - started


def _time_encode(model: Any, texts: list[str]) -> float:
    started = time.perf_counter()
    model.encode(texts, batch_size=ENCODE_BATCH_SIZE, normalize_embeddings=True)
    return time.perf_counter() - started


def _vectors(db: Path) -> dict[str, np.ndarray]:
    with duckdb.connect(str(db), read_only=True) as con:
        rows = con.execute("SELECT text_hash, vector FROM embeddings").fetchall()
    return {h: np.asarray(v, np.float32) for h, v in rows}


def _agreement(reference: dict[str, np.ndarray], other: dict[str, np.ndarray]
               ) -> dict[str, float]:
    cosines = [float(reference[h] @ other[h]) for h in reference if h in other]
    return {"mean": float(np.mean(cosines)), "worst": float(np.min(cosines)),
            "compared": len(cosines)}


def render(figures: dict[str, Any], command: str) -> str:
    lines = ["# Embedding backends: torch, onnx and onnx-int8", "",
             "Written by `evals/bench_backends.py`; do not edit by hand. Reproduce:", "",
             "```sh", command, "```", "",
             f"Machine: {figures['machine']}; load average {figures['load']:.1f} at the "
             "end (a shared machine: compare backends within a run, not with other runs). "
             f"{figures['rounds']} round(s), backends interleaved. Each build is a "
             "`pr-context index` process from scratch with embeddings; *torch encode* is "
             "the torch model's own `encode` of the same distinct texts (batch 32, model "
             "loaded), timed after each build.", "",
             "| corpus | backend | texts | build wall s | chunks/s | peak RSS MB | build / "
             "torch encode | cosine to torch, mean | worst |",
             "|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for corpus in figures["corpora"]:
        encode = statistics.median(corpus["encode_s"])
        for backend, runs in corpus["builds"].items():
            wall = statistics.median(r["wall_s"] for r in runs)
            rss = max(r["peak_rss_mb"] for r in runs)
            agree = corpus["agreement"][backend]
            lines.append(
                f"| {corpus['corpus']} | {backend} | {corpus['texts']:,} | {wall:.1f} | "
                f"{corpus['texts'] / wall:.1f} | {rss:,.0f} | {wall / encode:.2f} | "
                f"{agree['mean']:.4f} | {agree['worst']:.4f} |")
            if backend != "torch":
                verdicts.append((corpus["corpus"], backend, wall / encode))
        kept = ", ".join(f"`{g}`" for g in corpus["includes"]) or "every path"
        lines.append(f"| {corpus['corpus']} | torch encode alone | | {encode:.1f} | "
                     f"{corpus['texts'] / encode:.1f} | | 1.00 | | |")
        lines.append(f"| | | | | | | | | {corpus['release']}, kept: {kept}; exports "
                     + ", ".join(f"{b} {s:.0f} s" for b, s in corpus["export_s"].items())
                     + " |")
    lines += ["", "| target: build at most "
              f"{TARGET_BUILD_VS_ENCODE:g}x the torch encode | measured | verdict |",
              "|---|---|---|"]
    for name, backend, ratio in verdicts:
        lines.append(f"| {name}, {backend} | {ratio:.2f}x | "
                     f"{'met' if ratio <= TARGET_BUILD_VS_ENCODE else '**not met**'} |")
    return "\n".join(lines) + "\n"


def _log(message: str) -> None:
    print(f"bench_backends: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="keep only these paths of the corpus the glob's first "
                             "segment names (sphinx/..., django/...)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--corpus", action="append", choices=[c.name for c in CORPORA],
                        help="only these corpora (default: all)")
    parser.add_argument("--doc", type=Path, help="write the Markdown report here")
    args = parser.parse_args(argv)
    from pr_context.embed import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()._model
    model.encode(["warm up"], batch_size=ENCODE_BATCH_SIZE, normalize_embeddings=True)
    chosen = [c for c in CORPORA if not args.corpus or c.name in args.corpus]
    figures = {"corpora": [measure_corpus(c, args.include, args.rounds, model)
                           for c in chosen],
               "rounds": args.rounds, "load": os.getloadavg()[0],
               "machine": ", ".join(f"{k} {v}" for k, v in machine_facts().items()
                                    if k in ("cpus", "cpu model", "python"))}
    OUT_DIR.mkdir(parents=True, exist_ok=True)
    (OUT_DIR / "bench_backends.json").write_text(json.dumps(figures, indent=1) + "\n")
    command = " ".join(["python evals/bench_backends.py",
                        *[f"--include '{g}'" for g in args.include],
                        *[f"--corpus {c}" for c in args.corpus or []],
                        f"--rounds {args.rounds}"]
                       + ([f"--doc {args.doc}"] if args.doc else []))
    report = render(figures, command)
    if args.doc:
        args.doc.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
