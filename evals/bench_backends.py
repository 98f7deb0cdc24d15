"""Embedding backends compared: full builds, whole processes and quality, per backend.

Usage::

    python evals/bench_backends.py --doc docs/embedding-backends.md
    python evals/bench_backends.py --include 'sphinx/domains/**' --include 'django/db/**'
    python evals/bench_backends.py --parts quality --doc docs/embedding-backends.md

Three parts (``--parts``, all by default; a part not run keeps the figures of its last
run, saved beside the others, so the report stays whole and says when each was measured):

**builds**: on real code nobody here wrote (the sphinx and django-core sdists of
``evals/bench_index.py``), every round builds each corpus's index from scratch once per
backend, each build its own ``pr-context index`` process (wall time and peak RSS as a
user gets them), and times the torch model's own ``encode`` of the same distinct chunk
texts in this process, model loaded beforehand: the floor the issue's target is set on
(a build at most 0.6x that encode time). Backends rotate from round to round, so a
machine whose load drifts treats them alike. Agreement is each backend's stored vector
against torch's for the same text (cosine). ``--include`` keeps only matching paths of
a corpus (named by its first path segment), for a machine where full builds take hours;
the report says which paths were kept.

The ONNX graphs are built once before timing (their cost is reported apart).

**processes**: ``pr-context search`` and a warm ``pr-context review`` of three sphinx
pull requests as whole processes, each backend in turn (``evals/bench_process.py``'s
method: indexes with a random vector per chunk, the query's and the changed chunks'
vectors from the real model).

**quality**: per backend, the hand held-out retrieval evaluation live (``pr-context eval
--cases evals/cases --live --split heldout``, the hybrid and embedding retrievers, each
backend in its own cache of corpora and indexes) and the review evaluation with
embeddings (``evals/review/run_review_eval.py --no-jedi --embeddings``), compared with
torch's: a backend gives the same quality when every figure is within 0.01 of torch's,
and keeps quality when none is worse than torch's by more than 0.01.

**levers** (``evals/bench_embed_levers.py``): in one process, on a random sample of
sphinx's chunk texts, torch's ``encode`` beside the fp32 graph run other ways (operator
threads with and without spin-waiting, padded batches) and int8 graphs quantized other
ways (one precision everywhere; ONNX Runtime's dynamic quantization): speed, agreement
with torch, and whether a text's vector keeps its bits; then where the fp32 graph's time
goes, by operator, and how fast its matrix products run beside one large product on the
same core.

A part with no figures file (``evals/out`` is not committed; a fresh machine has none)
keeps its section of the ``--doc`` report as it stands, with the command that made it.

Side effects: corpora, clones and indexes under ``evals/.cache/``, raw figures in
``evals/out/bench_backends-<part>.json``, eval outputs under ``evals/out/backends/``, the
report at ``--doc``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np

from pr_context.defaults import DEFAULT_BACKEND

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
EMBED_STAGE = "embedding chunks"  # the build's stage that runs the model


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
    fresh = WORK / "onnx-fresh"  # the first build of a graph, timed apart from the builds
    shutil.rmtree(fresh, ignore_errors=True)
    export_s = {b: _build_graph(b, fresh) for b in BACKENDS[1:]}
    for backend in BACKENDS[1:]:  # the builds below find their graphs made
        _build_graph(backend, onnx_cache)
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
                                    "embedded": float(run.count("embedded")),
                                    "embedding_s": run.stages_s.get(EMBED_STAGE, 0.0)})
            encode_s.append(_time_encode(model, texts))
            _log(f"{corpus.name} round {round_number + 1} {backend}: build "
                 f"{run.wall_s:.1f}s, torch encode {encode_s[-1]:.1f}s")
    reference = _vectors(work / "torch.duckdb")
    agreement = {b: _agreement(reference, _vectors(work / f"{b}.duckdb")) for b in BACKENDS}
    return {"corpus": corpus.name, "release": f"{corpus.releases[-1].name}=="
            f"{corpus.releases[-1].version}", "includes": kept, "texts": len(texts),
            "builds": builds, "encode_s": encode_s, "agreement": agreement,
            "export_s": export_s, "graphs_fresh": True}


def measure_levers_part(sample: int, rounds: int, model: Any) -> dict[str, Any]:
    """The levers on a sample of all of sphinx's distinct chunk texts."""
    from bench_embed_levers import measure_levers

    repo = prepare_corpus(SPHINX)
    scratch = WORK / "sphinx-all" / "texts.duckdb"
    if not scratch.is_file():
        scratch.parent.mkdir(parents=True, exist_ok=True)
        run_index(SPHINX.name, repo, SPHINX.head_tag, scratch, False)
    return measure_levers(_distinct_chunk_texts(scratch), sample, rounds, model,
                          WORK / "onnx")


def _build_graph(backend: str, cache: Path) -> float:
    from pr_context.embed import DEFAULT_MODEL, make_embedder

    started = time.perf_counter()
    make_embedder(DEFAULT_MODEL, backend, cache, _log).embed(["build the graph"])
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

QUALITY_RETRIEVERS = ("hybrid", "embedding")
HELDOUT_METRICS = ("hit_at_cutoff", "mrr", "group_recall", "pass_rate")
REVIEW_METRICS = ("tests", "docs")  # recall@5 of touched tests, recall@3 of touched docs
QUALITY_TOLERANCE = 0.01
EVAL_OUT = OUT_DIR / "backends"
ROOT = Path(__file__).resolve().parent.parent


def measure_quality(backends: Sequence[str], review_eval: bool, reuse: bool,
                    review_sources: Sequence[str] = ()) -> dict[str, Any]:
    """The held-out retrieval evaluation and (unless ``review_eval`` is false) the review
    evaluation, per backend; ``reuse``: read the held-out report and review results an
    earlier run of the same commands left in ``EVAL_OUT`` instead of running them again."""
    heldout = {b: _heldout_eval(b, reuse) for b in backends}
    review = ({b: _review_eval(b, reuse, review_sources) for b in backends}
              if review_eval else {})
    return {"heldout": heldout, "review": review}


def _heldout_eval(backend: str, reuse: bool) -> dict[str, dict[str, float]]:
    """Hybrid and embedding retrievers' overall metrics on the held-out cases, live."""
    cache = WORK / f"eval-{backend}"
    _seed_corpora(cache)
    out = EVAL_OUT / backend / "heldout"
    command = [sys.executable, "-m", "pr_context", "eval", "--cases",
               str(ROOT / "evals" / "cases"), "--live", "--split", "heldout", "--out",
               str(out), "--cache-dir", str(cache), "--embedding-backend", backend,
               "--onnx-cache", str(WORK / "onnx"),
               *[a for r in QUALITY_RETRIEVERS for a in ("--retriever", r)]]
    if reuse and (out / "report.json").is_file():
        _log(f"held-out eval, {backend}: the report in {out}")
    else:
        _log(f"held-out eval, {backend}...")
        _checked(command)
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    return {run["retriever"]: {m: float(run["overall"][m]["value"] or 0.0)
                               for m in HELDOUT_METRICS} for run in report["runs"]}


def _seed_corpora(cache: Path) -> None:
    """Each backend evaluates in a cache of its own (an index holds one backend's
    vectors); the downloaded corpora are copied from the default cache when it has them."""
    for part in ("downloads", "corpora"):
        source = CACHE_DIR / part
        if source.is_dir() and not (cache / part).exists():
            shutil.copytree(source, cache / part)


def _review_eval(backend: str, reuse: bool, sources: Sequence[str]) -> dict[str, float]:
    """Mean recall of touched tests (@5) and docs (@3) over the review cases."""
    out = EVAL_OUT / backend / "review"
    if reuse and (out / "results.json").is_file():
        _log(f"review eval, {backend}: the results in {out}")
    else:
        _log(f"review eval, {backend}...")
        _checked([sys.executable, str(ROOT / "evals" / "review" / "run_review_eval.py"),
                  "--no-jedi", "--embeddings", "--embedding-backend", backend, "--out",
                  str(out), *[a for source in sources for a in ("--source", source)]])
    cases = json.loads((out / "results.json").read_text(encoding="utf-8"))["cases"]
    figures = {}
    for metric in REVIEW_METRICS:
        values = [c[metric]["pr-context"] for c in cases
                  if not c.get("error") and c[metric].get("pr-context") is not None]
        figures[metric] = float(np.mean(values)) if values else 0.0
        figures[f"{metric}_n"] = float(len(values))
    figures["errors"] = float(sum(1 for c in cases if c.get("error")))
    return figures


def measure_processes(backends: Sequence[str], queries: int) -> dict[str, Any]:
    """bench_process's search and warm-review processes, one variant per backend."""
    from bench_action import DEFAULT_SOURCE, clone
    from bench_process import PULL_REQUESTS, QUERIES, Variant, measure

    repo = clone(DEFAULT_SOURCE)
    variants = [Variant(b, ROOT, b) for b in backends]
    figures = measure(variants, repo, False, QUERIES[:queries], 1)
    figures["pull_requests"] = [h for h, _ in PULL_REQUESTS]
    return figures


def _checked(command: list[str]) -> None:
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    if done.returncode not in (0, 1):  # eval exits 1 only for a failed gate (none here)
        raise SystemExit(f"{' '.join(command[:4])} failed ({done.returncode}):\n"
                         f"{done.stderr[-3000:]}")


def render_builds(figures: dict[str, Any]) -> list[str]:
    lines = ["## Full builds with embeddings", "",
             f"{_conditions(figures)} {figures['rounds']} round(s), backends interleaved. "
             "Each build is a "
             "`pr-context index` process from scratch with embeddings; *torch encode* is "
             "the torch model's own `encode` of the same distinct texts (batch 32, model "
             "loaded), timed after each build; *embedding stage* is the part of the "
             "build that ran the model (its own log).", "",
             "| corpus | backend | texts | build wall s | chunks/s | peak RSS MB | build / "
             "torch encode | embedding stage s (/ torch encode) | cosine to torch, mean "
             "| worst |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    verdicts = []
    for corpus in figures["corpora"]:
        encode = statistics.median(corpus["encode_s"])
        for backend, runs in corpus["builds"].items():
            wall = statistics.median(r["wall_s"] for r in runs)
            rss = max(r["peak_rss_mb"] for r in runs)
            agree = corpus["agreement"][backend]
            stages = [r["embedding_s"] for r in runs if r.get("embedding_s")]
            stage = (f"{statistics.median(stages):.1f} ({statistics.median(stages) / encode:.2f})"
                     if len(stages) == len(runs) else "not recorded")
            lines.append(
                f"| {corpus['corpus']} | {backend} | {corpus['texts']:,} | {wall:.1f} | "
                f"{corpus['texts'] / wall:.1f} | {rss:,.0f} | {wall / encode:.2f} | "
                f"{stage} | {agree['mean']:.4f} | "
                f"{agree['worst']:.4f} |")
            if backend != "torch":
                verdicts.append((corpus["corpus"], backend, wall / encode))
        kept = ", ".join(f"`{g}`" for g in corpus["includes"]) or "every path"
        lines.append(f"| {corpus['corpus']} | torch encode alone | | {encode:.1f} | "
                     f"{corpus['texts'] / encode:.1f} | | 1.00 | | | |")
        made = ("graphs built from the weights in" if corpus.get("graphs_fresh") else
                "graphs loaded from an earlier run's cache in")
        lines.append(f"| | | | | | | | | | {corpus['release']}, kept: {kept}; {made} "
                     + ", ".join(f"{b} {s:.0f} s" for b, s in corpus["export_s"].items())
                     + " |")
    lines += ["", "| target: build at most "
              f"{TARGET_BUILD_VS_ENCODE:g}x the torch encode | measured | verdict |",
              "|---|---|---|"]
    for name, backend, ratio in verdicts:
        lines.append(f"| {name}, {_labelled(backend)} | {ratio:.2f}x | "
                     f"{'met' if ratio <= TARGET_BUILD_VS_ENCODE else '**not met**'} |")
    return [*lines, "", *_build_target_reading(verdicts)]


def _labelled(backend: str) -> str:
    return f"{backend} (the default)" if backend == DEFAULT_BACKEND else backend


def _build_target_reading(verdicts: list[tuple[str, str, float]]) -> list[str]:
    """What the verdicts mean when the default misses the target and another meets it."""
    missed = {n for n, b, r in verdicts if b == DEFAULT_BACKEND and r > TARGET_BUILD_VS_ENCODE}
    met = sorted({b for n, b, r in verdicts if n in missed and r <= TARGET_BUILD_VS_ENCODE})
    if not missed or not met:
        return []
    return [f"Where the default misses the target, {', '.join(met)} meets it "
            f"(`--embedding-backend {met[0]}`, the action's `embedding-backend: {met[0]}`), "
            "with the quality below. How near the default's fp32 matrix products already "
            "run to the core's best rate: *Where the fp32 graph's time goes*, under Levers.",
            ""]



def _conditions(figures: dict[str, Any]) -> str:
    return (f"Measured {figures.get('date', '?')} on {figures['machine']}; load average "
            f"{figures['load']:.1f} at the end (a shared machine: compare backends within "
            "a part, not with other runs).")


def render_processes(figures: dict[str, Any]) -> list[str]:
    search = figures["search_s"]
    lines = ["## Whole processes: search and warm review on sphinx", "",
             f"{_conditions(figures)} Each figure is one process (interpreter start, "
             "imports, index and model load), backends interleaved (evals/bench_process.py's "
             "method: indexes hold a random vector per chunk; the query's and the changed "
             "chunks' vectors come from the real model).", "",
             "| process | " + " | ".join(search) + " | " + " | ".join(
                 f"{b} / torch" for b in search if b != "torch") + " |",
             "|---|" + "---|" * (2 * len(search) - 1)]

    def row(name: str, times: dict[str, list[float]]) -> str:
        medians = {b: statistics.median(t) for b, t in times.items()}
        return (f"| {name} | " + " | ".join(f"{m:.1f} s" for m in medians.values())
                + " | " + " | ".join(f"{medians[b] / medians['torch']:.2f}x"
                                     for b in medians if b != "torch") + " |")

    lines.append(row(f"`search`, p50 of {len(figures['queries'])} queries", search))
    for head, times in figures["review_s"].items():
        lines.append(row(f"warm `review` of {head[:12]}", times))
    return [*lines, ""]


def render_quality(figures: dict[str, Any]) -> list[str]:
    heldout, review = figures["heldout"], figures["review"]
    backends = list(heldout)
    title = "the held-out retrieval evaluation" + (" and the review evaluation"
                                                   if review else "")
    skipped = "" if review else " The review evaluation was not run (`--no-review-eval`)."
    lines = [f"## Quality: {title}", "",
             f"{_conditions(figures)} Live runs of `pr-context eval --split heldout "
             "--live` (hit and MRR at each case's own cutoff, in evals/cases), each "
             "backend with its own indexes; Δ is the backend's figure minus torch's"
             f" (kept: within ±{QUALITY_TOLERANCE}).{skipped}",
             "", "| figure | " + " | ".join(backends) + " | " + " | ".join(
                 f"Δ {b}" for b in backends if b != "torch") + " |",
             "|---|" + "---|" * (2 * len(backends) - 1)]
    rows = [(f"held-out, {r}: {m}", {b: heldout[b][r][m] for b in backends})
            for r in QUALITY_RETRIEVERS for m in HELDOUT_METRICS]
    rows += [(f"review: {'tests R@5' if m == 'tests' else 'docs R@3'} "
              f"({review['torch'][f'{m}_n']:.0f} cases)", {b: review[b][m] for b in backends})
             for m in REVIEW_METRICS if review]
    for name, values in rows:
        lines.append(f"| {name} | " + " | ".join(f"{values[b]:.3f}" for b in backends)
                     + " | " + " | ".join(f"{values[b] - values['torch']:+.3f}"
                                          for b in backends if b != "torch") + " |")
    return [*lines, ""]


def render_levers(figures: dict[str, Any]) -> list[str]:
    from bench_embed_levers import render_levers as render_table

    return render_table(figures, _conditions(figures))


RENDERERS = {"builds": render_builds, "processes": render_processes,
             "quality": render_quality, "levers": render_levers}
# How each part's section of the report begins (to keep it when the part has no figures).
SECTION_TITLES = {"builds": "## Full builds", "processes": "## Whole processes",
                  "quality": "## Quality", "levers": "## Levers"}
VERDICT_HEADER = "| backend | faster than torch"


def kept_report(doc: Path | None) -> dict[str, list[str]]:
    """An earlier report's sections by part, its verdict table ("verdicts") and its
    commands ("commands", by part): what parts without figures here keep."""
    if doc is None or not doc.is_file():
        return {}
    kept: dict[str, list[str]] = {"verdicts": [], "commands": []}
    current: str | None = None
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.startswith("## "):
            current = next((p for p, t in SECTION_TITLES.items() if line.startswith(t)),
                           None)
        elif line.startswith(VERDICT_HEADER) or (current is None and not line):
            current = "verdicts" if line else None
        elif line.startswith("python evals/bench_backends.py"):
            kept["commands"].append(line)
            continue
        if current is not None:
            kept.setdefault(current, []).append(line)
    return kept


def render(parts: dict[str, dict[str, Any]], kept: dict[str, list[str]]) -> str:
    commands = {p: figures.get("command", "") for p, figures in parts.items()}
    for line in kept.get("commands", []):
        part = next((p for p in RENDERERS if f"--parts {p}" in line), None)
        if part and part not in commands and part in kept:
            commands[part] = line
    lines = ["# Embedding backends: torch, onnx and onnx-int8", "",
             "Written by `evals/bench_backends.py`; do not edit by hand. Reproduce (one "
             "command per part, as last run):", "",
             "```sh", *[commands[p] for p in RENDERERS if p in commands], "```", "",
             "`onnx` runs a graph built from the model's weights without torch "
             "(`pr_context/embed_graph.py`), `onnx-int8` that graph with its linear layers' "
             "products in int8, activations quantized per token (`pr_context/embed_int8.py`), "
             "`torch` the "
             "weights in PyTorch (docs/configuration.md#embedding-backends). A backend can "
             "be the default when it is faster than torch in every whole-process figure "
             "below and keeps quality (no figure worse than torch's by more than "
             f"{QUALITY_TOLERANCE}).", ""]
    lines += render_verdicts(parts) or kept.get("verdicts", [])
    for name, renderer in RENDERERS.items():
        if name in parts:
            lines += renderer(parts[name])
        elif name in kept:
            lines += kept[name]
    return "\n".join(lines)


def render_verdicts(parts: dict[str, dict[str, Any]]) -> list[str]:
    """Per ONNX backend: faster than torch in every process measured, and quality kept."""
    if not {"processes", "quality"} <= set(parts):
        return []
    lines = ["| backend | faster than torch in every process figure | same quality "
             f"(every Δ within ±{QUALITY_TOLERANCE}) | no figure worse by more than "
             f"{QUALITY_TOLERANCE} |", "|---|---|---|---|"]
    for backend in BACKENDS[1:]:
        faster = _always_faster(parts, backend)
        deltas = _quality_deltas(parts["quality"], backend)
        same = all(abs(d) <= QUALITY_TOLERANCE + 1e-9 for d in deltas)
        kept = all(d >= -QUALITY_TOLERANCE - 1e-9 for d in deltas)
        lines.append(f"| {backend} | " + " | ".join(
            "yes" if verdict else "**no**" for verdict in (faster, same, kept)) + " |")
    return [*lines, ""]


def _always_faster(parts: dict[str, dict[str, Any]], backend: str) -> bool:
    processes = parts["processes"]
    timings = [processes["search_s"], *processes["review_s"].values()]
    if "builds" in parts:
        timings += [{b: [r["wall_s"] for r in runs] for b, runs in corpus["builds"].items()}
                    for corpus in parts["builds"]["corpora"]]
    return all(statistics.median(t[backend]) < statistics.median(t["torch"])
               for t in timings)


def _quality_deltas(quality: dict[str, Any], backend: str) -> list[float]:
    """Each quality figure of ``backend`` minus torch's."""
    heldout, review = quality["heldout"], quality["review"]
    deltas = [heldout[backend][r][m] - heldout["torch"][r][m]
              for r in QUALITY_RETRIEVERS for m in HELDOUT_METRICS]
    return deltas + [review[backend][m] - review["torch"][m]
                     for m in REVIEW_METRICS if review]


def _log(message: str) -> None:
    print(f"bench_backends: {message}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="keep only these paths of the corpus the glob's first "
                             "segment names (sphinx/..., django/...)")
    parser.add_argument("--rounds", type=int, default=2,
                        help="builds and levers: rounds, the order of backends (variants) "
                             "rotating from round to round")
    parser.add_argument("--sample", type=int, default=120,
                        help="levers: how many distinct sphinx chunk texts to embed")
    parser.add_argument("--corpus", action="append", choices=[c.name for c in CORPORA],
                        help="only these corpora (default: all)")
    parser.add_argument("--parts", default=",".join(RENDERERS),
                        help="comma-separated parts to measure: builds, processes, quality "
                             "(the others keep their last figures)")
    parser.add_argument("--queries", type=int, default=3,
                        help="processes: how many search queries to time")
    parser.add_argument("--no-review-eval", action="store_true",
                        help="quality: the held-out retrieval evaluation only, without "
                             "the review evaluation")
    parser.add_argument("--reuse-eval-outputs", action="store_true",
                        help="quality: take a backend's held-out report and review "
                             "results from evals/out/backends/BACKEND/{heldout,review} "
                             "when an earlier run (or the same command run by hand) left "
                             "them")
    parser.add_argument("--review-source", action="append", default=[],
                        metavar="OWNER/NAME=PATH_OR_URL",
                        help="quality: clone this review-evaluation repository from here "
                             "instead of GitHub (repeatable; the figures do not depend on "
                             "it, so the report's command leaves it out)")
    parser.add_argument("--doc", type=Path, help="write the Markdown report here")
    args = parser.parse_args(argv)
    wanted = [p for p in args.parts.split(",") if p]
    unknown = sorted(set(wanted) - set(RENDERERS))
    if unknown:
        parser.error(f"unknown part {unknown[0]!r} (known: {', '.join(RENDERERS)})")
    for part in wanted:
        figures = _measure(part, args)
        figures.update({"command": _command(part, args), "date": time.strftime("%Y-%m-%d"),
                        "load": os.getloadavg()[0],
                        "machine": ", ".join(f"{k} {v}" for k, v in machine_facts().items()
                                             if k in ("cpus", "cpu model", "python"))})
        OUT_DIR.mkdir(parents=True, exist_ok=True)
        _part_file(part).write_text(json.dumps(figures, indent=1) + "\n")
    parts = {p: json.loads(_part_file(p).read_text()) for p in RENDERERS
             if _part_file(p).is_file()}
    report = render(parts, kept_report(args.doc))
    if args.doc:
        args.doc.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _measure(part: str, args: argparse.Namespace) -> dict[str, Any]:
    if part == "quality":
        return measure_quality(BACKENDS, not args.no_review_eval, args.reuse_eval_outputs,
                               args.review_source)
    if part == "processes":
        return measure_processes(BACKENDS, args.queries)
    from pr_context.embed import SentenceTransformerEmbedder

    model = SentenceTransformerEmbedder()._model
    model.encode(["warm up"], batch_size=ENCODE_BATCH_SIZE, normalize_embeddings=True)
    if part == "levers":
        return measure_levers_part(args.sample, args.rounds, model)
    chosen = [c for c in CORPORA if not args.corpus or c.name in args.corpus]
    return {"corpora": [measure_corpus(c, args.include, args.rounds, model)
                        for c in chosen], "rounds": args.rounds}


def _command(part: str, args: argparse.Namespace) -> str:
    """The command that measures ``part`` again as this run did."""
    words = ["python evals/bench_backends.py", f"--parts {part}"]
    if part == "builds":
        words += [*[f"--include '{g}'" for g in args.include],
                  *[f"--corpus {c}" for c in args.corpus or []], f"--rounds {args.rounds}"]
    elif part == "processes":
        words.append(f"--queries {args.queries}")
    elif part == "levers":
        words += [f"--sample {args.sample}", f"--rounds {args.rounds}"]
    else:
        words += [flag for flag, on in (("--no-review-eval", args.no_review_eval),
                                        ("--reuse-eval-outputs", args.reuse_eval_outputs))
                  if on]
    return " ".join([*words, *([f"--doc {args.doc}"] if args.doc else [])])


def _part_file(part: str) -> Path:
    return OUT_DIR / f"bench_backends-{part}.json"


if __name__ == "__main__":
    raise SystemExit(main())
