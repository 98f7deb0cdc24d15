"""Whole-process cost of `pr-context search` and of a warm `pr-context review` on sphinx.

Usage::

    python evals/bench_process.py --doc docs/process-performance.md
    python evals/bench_process.py --source /path/to/sphinx.git --baseline 4edb108

Every figure is one process, as a user or CI runs it (interpreter start, imports, index
load, model load). Each variant runs interleaved with the others (A B C A B C ...), so a
machine whose load drifts treats them alike:

- **baseline**: the pr-context source at ``--baseline`` (a git revision of this
  repository, extracted into ``evals/.cache/``), torch backend unless
  ``--baseline-backend`` names another (a revision that has ``--embedding-backend``);
- one variant per ``--backends`` entry (default ``onnx,onnx-int8``: the default backend
  and the quantized one): this tree with that backend (an ONNX graph is made once,
  before timing).

Each variant gets its own index of each base revision, built lexically and then given a
random unit vector per chunk text (the search and review cost does not depend on the
vectors' values; embedding sphinx's 12k chunks for real takes the model an hour here),
and holds the base's graph stored by that variant's own code, as the index a warm review
finds does (a graph stored by other code would be built again by every review).
The query vector and, in a review, the vectors of the chunks the pull request changed are
computed by the real model. Each review's findings (evidence.json without the index's
build details and the timings) are compared with the baseline's: a speed-up must not
change them (run with ``--baseline`` at the code before it and the same backend).
Side effects: the sphinx clone of ``evals/bench_action.py``, indexes under
``evals/.cache/bench-process/``, raw figures in ``evals/out/bench_process.json``,
profiles (``--profile``) beside them.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_action import DEFAULT_SOURCE, REPOSITORY, clone

EVALS = Path(__file__).resolve().parent
ROOT = EVALS.parent
WORK = EVALS / ".cache" / "bench-process"
OUT_JSON = EVALS / "out" / "bench_process.json"
# The code before the stored BM25 terms, the tokenizer-only word pieces and the backends.
DEFAULT_BASELINE = "4edb108672cdfb491fa616bc7839c989764655f9"
# Merged sphinx pull requests of 10 or 11 files (first-parent commits of master).
PULL_REQUESTS = (
    ("465b758a35f6cb5be066997ef970ad69fe879cf8", "Extract _generate_directives()"),
    ("8923f086769e24e0ed13cf0c23a0c5083a1824ea", "Extract most docstring-related logic"),
    ("4c89a82c1db13a12a5423b12595e646dc7a58583", "Improve signature handling in autodoc"),
)
QUERIES = (
    "how are autodoc directive options parsed",
    "where is the intersphinx inventory fetched",
    "resolve a cross-reference to a python object",
    "LaTeX writer table column widths",
    "which documents are rebuilt after a config change",
    "napoleon google style docstring sections",
)
REVIEW_RUNS = 2
TARGET_SEARCH_P50_S = 3.0
TARGET_REVIEW_S = 8.0
# evidence.json parts that say how the index was built and how long stages took
VOLATILE_EVIDENCE = frozenset({"index", "timings_ms"})
# and those that hold a score: another backend's vectors move semantic scores a little
SCORED_EVIDENCE = frozenset({"score", "signals", "reason"})
DIMENSION = 384
SEED = 20261201


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                          check=True).stdout


def check_baseline(variant: Variant) -> None:
    """The baseline must run its own code, not this tree's (sys.path order matters)."""
    done = subprocess.run([sys.executable, "-c", "import pr_context; print(pr_context.__file__)"],
                          env=variant.env(), cwd=variant.source, capture_output=True,
                          text=True, check=True)
    if not done.stdout.strip().startswith(str(variant.source)):
        raise SystemExit(f"the baseline imports {done.stdout.strip()}, not {variant.source}")


def baseline_source(revision: str) -> Path:
    """The pr_context package as of ``revision``, extracted once (PYTHONPATH for it)."""
    sha = git(ROOT, "rev-parse", f"{revision}^{{commit}}").strip()
    target = WORK / f"baseline-{sha[:12]}"
    if not (target / "pr_context").is_dir():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "-C", str(ROOT), "archive", sha, "pr_context"],
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


# The CLI's main() under cProfile, the profile written whatever the exit; argv[1] is
# the profile's path, the rest the command line.
_PROFILED = """
import cProfile, sys
out = sys.argv.pop(1)
sys.argv[0] = "pr-context"
profile = cProfile.Profile()
profile.enable()
try:
    from pr_context.cli import main
    main()
except SystemExit as done:
    code = done.code
else:
    code = 0
finally:
    profile.disable()
    profile.dump_stats(out)
sys.exit(code)
"""


class Variant:
    """One way of running pr-context: a source tree and a backend."""

    def __init__(self, name: str, source: Path, backend: str | None) -> None:
        self.name, self.source, self.backend = name, source, backend

    def command(self, *args: str, profile: Path | None = None) -> list[str]:
        # The baseline has no --embedding-backend option: it runs torch.
        extra = ["--embedding-backend", self.backend,
                 "--onnx-cache", str(WORK / "onnx")] if self.backend else []
        if profile is not None:  # `python -m pr_context` ends in os._exit: no profile left
            return [sys.executable, "-c", _PROFILED, str(profile), *args, *extra]
        return [sys.executable, "-m", "pr_context", *args, *extra]

    def env(self) -> dict[str, str]:
        # Run from the source folder too: ``-m`` puts the working directory first.
        return {**os.environ, "PYTHONPATH": str(self.source)}

    def parser_version(self) -> str:
        """The parser version of this variant's code (its indexes are rebuilt for
        another)."""
        done = subprocess.run([sys.executable, "-c", "from pr_context.parse import "
                               "PARSER_VERSION; print(PARSER_VERSION)"], env=self.env(),
                              cwd=self.source, capture_output=True, text=True, check=True)
        return done.stdout.strip()

    def backend_identity(self) -> str:
        """What this variant's index records as its backend (exports the model once)."""
        if self.backend in (None, "torch"):
            return "torch"
        cache = str(WORK / "onnx")
        script = ("from pathlib import Path; from pr_context.embed import make_embedder, "
                  f"DEFAULT_MODEL; e = make_embedder(DEFAULT_MODEL, {self.backend!r}, "
                  f"Path({cache!r}), print); e.embed(['warm up']); print(e.backend)")
        done = subprocess.run([sys.executable, "-c", script], env=self.env(),
                              cwd=self.source, capture_output=True, text=True, check=True)
        return done.stdout.split()[-1]


def timed(command: list[str], env: dict[str, str], cwd: Path) -> float:
    return timed_cpu(command, env, cwd)[0]


def timed_cpu(command: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall seconds of the process, and the CPU seconds it and its children used (all
    threads: less disturbed than wall time by other load on the machine)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True,
                          check=False)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n"
                         f"{done.stdout[-2000:]}\n{done.stderr[-3000:]}")
    return seconds, cpu


def base_index(variant: Variant, repo: Path, base: str, identity: str) -> Path:
    """A pristine index of ``base`` for ``variant``: lexical rows, random vectors.

    Built once per source tree and base: another variant of the same tree gets a copy
    recording its own backend (the rows and vectors do not depend on it). A baseline's
    indexes are kept apart per baseline revision (another revision's schema may differ).
    """
    kept = variant.name if variant.source == ROOT else variant.source.name
    pristine = WORK / "indexes" / kept / f"{base[:12]}.duckdb"
    if pristine.is_file() and _parser_of(pristine) != variant.parser_version():
        pristine.unlink()  # the review would rebuild it, embedding every chunk
    built = _BUILT.get((variant.source, base))
    if not pristine.is_file() and built is not None:
        pristine.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built, pristine)
    elif not pristine.is_file():
        pristine.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pr_context", "index", "--quiet", "--repo",
                        str(repo), "--rev", base, "--db", str(pristine), "--no-embeddings"],
                       env=variant.env(), cwd=variant.source, check=True, capture_output=True)
        _add_random_vectors(pristine, identity)
    _BUILT.setdefault((variant.source, base), pristine)
    _set_backend(pristine, identity)  # also right after a graph recipe changed
    _store_graph(variant, pristine)
    return pristine


# Stores the base graph (pr_context.graph.stored) unless it is current; a revision of
# pr-context older than the stored graph has nothing to store.
_STORE_GRAPH = """
import sys
from pathlib import Path
try:
    from pr_context.graph import store_graph
except ImportError:
    sys.exit(0)
store_graph(Path(sys.argv[1]))
"""


def _store_graph(variant: Variant, pristine: Path) -> None:
    """The pristine index with its base graph stored by ``variant``'s code, as the
    action's cached index of the base holds it (a graph stored by other code is built
    again by every review, which a warm review does not do)."""
    subprocess.run([sys.executable, "-c", _STORE_GRAPH, str(pristine)], env=variant.env(),
                   cwd=variant.source, check=True, capture_output=True)


_BUILT: dict[tuple[Path, str], Path] = {}


def _parser_of(db: Path) -> str | None:
    with duckdb.connect(str(db), read_only=True) as con:
        found = con.execute("SELECT value FROM manifest WHERE key = 'parser_version'"
                            ).fetchall()
    return str(found[0][0]) if found else None


def _set_backend(db: Path, backend: str) -> None:
    with duckdb.connect(str(db)) as con:
        con.execute("UPDATE manifest SET value = ? WHERE key = 'embedding_backend'",
                    (backend or "torch",))


def _add_random_vectors(db: Path, backend: str) -> None:
    from pr_context.embed import DEFAULT_MODEL

    with duckdb.connect(str(db)) as con:
        hashes = [h for (h,) in con.execute("SELECT DISTINCT text_hash FROM chunks "
                                            "ORDER BY 1").fetchall()]
        # Each text's vector follows from its hash alone: two indexes (two code versions,
        # two parser versions) give a text they share the same vector.
        vectors = np.stack([np.random.default_rng([SEED, int(h[:16], 16)]).normal(
            size=DIMENSION) for h in hashes]) if hashes else np.zeros((0, DIMENSION))
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        con.execute(f"CREATE TABLE embeddings (text_hash VARCHAR NOT NULL, tokens INTEGER "
                    f"NOT NULL, truncated BOOLEAN NOT NULL, vector FLOAT[{DIMENSION}])")
        rows = pa.table({  # noqa: F841 - read by DuckDB's replacement scan
            "text_hash": hashes, "tokens": [0] * len(hashes),
            "truncated": [False] * len(hashes),
            "vector": pa.FixedSizeListArray.from_arrays(
                pa.array(vectors.astype(np.float32).ravel()), DIMENSION)})
        con.execute("INSERT INTO embeddings SELECT * FROM rows")
        settings = {"embedding_model": DEFAULT_MODEL, "embedding_dimension": str(DIMENSION),
                    "embedding_backend": backend or "torch"}
        for key, value in settings.items():
            con.execute("UPDATE manifest SET value = ? WHERE key = ?", (value, key))


def measure(variants: list[Variant], repo: Path, profile: bool, queries: Sequence[str],
            review_runs: int) -> dict[str, Any]:
    identities = {v.name: v.backend_identity() for v in variants}
    search_base = git(repo, "rev-parse", f"{PULL_REQUESTS[0][0]}^").strip()
    search: dict[str, list[float]] = {v.name: [] for v in variants}
    dbs = {v.name: base_index(v, repo, search_base, identities[v.name]) for v in variants}
    for query in queries:
        for variant in variants:
            command = variant.command("search", "--repo", str(repo), "--rev", search_base,
                                      "--db", str(dbs[variant.name]), "--json", query)
            search[variant.name].append(timed(command, variant.env(), variant.source))
        print(f"search {query!r}: " + ", ".join(
            f"{n} {s[-1]:.1f}s" for n, s in search.items()), file=sys.stderr)
    reviews: dict[str, dict[str, list[float]]] = {}
    cpu: dict[str, dict[str, list[float]]] = {}
    evidence: dict[str, dict[str, list[str]]] = {}
    findings: dict[str, dict[str, list[str]]] = {}
    for head, _ in PULL_REQUESTS:
        base = git(repo, "rev-parse", f"{head}^").strip()
        pristine = {v.name: base_index(v, repo, base, identities[v.name]) for v in variants}
        reviews[head] = {v.name: [] for v in variants}
        cpu[head] = {v.name: [] for v in variants}
        evidence[head] = {v.name: [] for v in variants}
        findings[head] = {v.name: [] for v in variants}
        for run in range(review_runs):
            for variant in variants:
                wall, used = _review(variant, repo, base, head, pristine[variant.name],
                                     profile and run == 0)
                reviews[head][variant.name].append(wall)
                cpu[head][variant.name].append(used)
                whole, scoreless = _evidence_digests(variant)
                evidence[head][variant.name].append(whole)
                findings[head][variant.name].append(scoreless)
            print(f"review {head[:12]} run {run + 1}: " + ", ".join(
                f"{n} {s[-1]:.1f}s" for n, s in reviews[head].items()), file=sys.stderr)
    return {"search_s": search, "review_s": reviews, "review_cpu_s": cpu, "evidence": evidence,
            "findings": findings, "identities": identities,
            "search_base": search_base, "queries": list(queries), "review_runs": review_runs}


def _review(variant: Variant, repo: Path, base: str, head: str, pristine: Path,
            profile: bool) -> tuple[float, float]:
    work = WORK / "runs" / variant.name
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    db = work / "index.duckdb"
    shutil.copyfile(pristine, db)
    target = (OUT_JSON.parent / f"profile-review-{head[:12]}-{variant.name}.prof"
              if profile else None)
    if target is not None:
        target.parent.mkdir(parents=True, exist_ok=True)
    return timed_cpu(variant.command("review", "--quiet", "--repo", str(repo), "--base", base,
                                     "--head", head, "--db", str(db), "--out",
                                     str(work / "out"), profile=target),
                     variant.env(), variant.source)


def _evidence_digests(variant: Variant) -> tuple[str, str]:
    """Hashes of what the review found (callers, tests, docs, selection, notes), without
    the index's build details and the timings, which differ from run to run: whole, and
    without the ``SCORED_EVIDENCE`` keys at any depth."""
    found = json.loads((WORK / "runs" / variant.name / "out" / "evidence.json").read_text())
    kept = {k: v for k, v in found.items() if k not in VOLATILE_EVIDENCE}
    return _digest(kept), _digest(_without(kept, SCORED_EVIDENCE))


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def _without(value: Any, dropped: frozenset[str]) -> Any:
    if isinstance(value, dict):
        return {k: _without(v, dropped) for k, v in value.items() if k not in dropped}
    if isinstance(value, list):
        return [_without(v, dropped) for v in value]
    return value


def render(figures: dict[str, Any], command: str) -> str:
    from pr_context.defaults import DEFAULT_BACKEND

    names = list(figures["search_s"])
    p50 = {n: statistics.median(s) for n, s in figures["search_s"].items()}
    lines = [
        "# Whole-process cost: `pr-context search` and a warm `pr-context review`",
        "", "Written by `evals/bench_process.py`; do not edit by hand. Reproduce:", "",
        "```sh", command, "```", "",
        f"On {REPOSITORY} (a bare clone), {figures['machine']}, measured "
        f"{figures['date']}. Variants run interleaved; each figure is one process. "
        f"`baseline` is pr-context at `{figures['baseline'][:12]}` "
        f"({figures.get('baseline_backend', 'torch')}); "
        f"{' and '.join(f'`{n}`' for n in names[1:])} are this tree with that backend "
        f"(`{DEFAULT_BACKEND}` is the default). Indexes hold a random vector per "
        "chunk text, drawn from its hash (cost, not quality, is measured here; a text "
        "two variants share has one vector); query and changed-chunk vectors "
        "come from the real model.", "",
        f"## `pr-context search` ({len(figures['queries'])} queries, index of "
        f"{figures['search_base'][:12]})", "",
        "| variant | p50 s | min s | max s |", "|---|---|---|---|"]
    for name in names:
        times = figures["search_s"][name]
        lines.append(f"| {name} | {p50[name]:.2f} | {min(times):.2f} | {max(times):.2f} |")
    lines += ["", "## Warm `pr-context review` (base index and its graph in place, "
              f"{figures['review_runs']} run(s) each, median)", "",
              "| pull request | files | " + " | ".join(names) + " |",
              "|---|---|" + "---|" * len(names)]
    for head, title in PULL_REQUESTS:
        runs = figures["review_s"].get(head)
        if not runs:
            lines.append(f"| {head[:12]} {title} | | not measured (run stopped) |")
            continue
        cells = " | ".join(f"{statistics.median(runs[n]):.1f}" for n in names)
        lines.append(f"| [{head[:12]}](https://github.com/{REPOSITORY}/commit/{head}) "
                     f"{title} | {figures['files'][head]} | {cells} |")
    lines += _cpu_table(figures, names)
    lines += _evidence_table(figures, names)
    lines += ["", "| target | measured | verdict |", "|---|---|---|"]
    for name in names[1:]:
        ok = p50[name] <= TARGET_SEARCH_P50_S
        lines.append(f"| search p50 at most {TARGET_SEARCH_P50_S:g} s ({name}) | "
                     f"{p50[name]:.2f} s (baseline {p50[names[0]]:.2f} s) | "
                     f"{'met' if ok else '**not met**'} |")
        worst = max((statistics.median(figures["review_s"][h][name])
                     for h, _ in PULL_REQUESTS if figures["review_s"].get(h)), default=0.0)
        if len(figures["review_s"]) < len(PULL_REQUESTS):
            lines.append(f"| warm review at most {TARGET_REVIEW_S:g} s on each PR ({name}) | "
                         f"{len(figures['review_s'])} of {len(PULL_REQUESTS)} PRs measured, "
                         f"worst {worst:.1f} s | not judged |")
            continue
        lines.append(f"| warm review at most {TARGET_REVIEW_S:g} s on each PR ({name}) | "
                     f"worst {worst:.1f} s | "
                     f"{'met' if worst <= TARGET_REVIEW_S else '**not met**'} |")
    return "\n".join(lines) + "\n"


def _cpu_table(figures: dict[str, Any], names: list[str]) -> list[str]:
    """The reviews' CPU seconds (process and children, all threads), when measured."""
    cpu = figures.get("review_cpu_s")
    if not cpu:
        return []
    return _per_pr_table(
        "CPU seconds of the same review processes (median; all threads, children "
        "included), which other load on the machine disturbs less than wall time:", names,
        cpu, lambda runs: " | ".join(f"{statistics.median(runs[n]):.1f}" for n in names))


def _evidence_table(figures: dict[str, Any], names: list[str]) -> list[str]:
    """Whether each variant's reviews found what the baseline's did, when recorded."""
    evidence = figures.get("evidence")
    if not evidence:
        return []
    findings = figures.get("findings", {})

    def cell(pr: str, name: str) -> str:
        if set(evidence[pr][name]) == {evidence[pr][names[0]][0]}:
            return "same"
        scoreless = findings.get(pr, {})
        if scoreless and set(scoreless[name]) == {scoreless[names[0]][0]}:
            return "same findings, other scores"
        return "**differs**"

    return _per_pr_table(
        "What each review found (evidence.json without the index's build details "
        "and the timings), against the baseline's first run; *same findings, other "
        "scores*: the same callers, tests, docs and selection, in the same order, with "
        "other similarity scores (another backend's vectors):", names,
        {pr: pr for pr in evidence},
        lambda pr: " | ".join(cell(pr, n) for n in names))


def _per_pr_table(intro: str, names: list[str], by_pr: dict[str, Any],
                  cells: Callable[[Any], str]) -> list[str]:
    """A table with a row per measured pull request and a column per variant."""
    lines = ["", intro, "", "| pull request | " + " | ".join(names) + " |",
             "|---|" + "---|" * len(names)]
    lines += [f"| {head[:12]} | {cells(by_pr[head])} |" for head, _ in PULL_REQUESTS
              if by_pr.get(head)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help="where to clone sphinx-doc/sphinx from (URL or local path)")
    parser.add_argument("--baseline", default=DEFAULT_BASELINE,
                        help="git revision of pr-context to compare with")
    parser.add_argument("--profile", action="store_true",
                        help="also write a cProfile of each variant's first review")
    parser.add_argument("--queries", type=int, default=len(QUERIES),
                        help="how many of the queries to time (a loaded machine: fewer)")
    parser.add_argument("--baseline-backend",
                        help="embedding backend of the baseline (default torch, which a "
                             "revision without --embedding-backend runs)")
    parser.add_argument("--review-runs", type=int, default=REVIEW_RUNS)
    parser.add_argument("--backends", default="onnx,onnx-int8",
                        help="comma-separated backends of this tree to time (torch needs "
                             "the torch extra)")
    parser.add_argument("--doc", type=Path, help="write the Markdown report here")
    parser.add_argument("--render-only", action="store_true",
                        help="only render --doc from the figures of the last run")
    args = parser.parse_args(argv)
    if args.render_only:
        figures = json.loads(OUT_JSON.read_text())
        report = render(figures, figures.get("command", ""))
        if args.doc:
            args.doc.write_text(report, encoding="utf-8")
        print(report)
        return 0
    repo = clone(args.source)
    variants = [Variant("baseline", baseline_source(args.baseline), args.baseline_backend),
                *(Variant(b, ROOT, b) for b in filter(None, args.backends.split(",")))]
    check_baseline(variants[0])
    load_at_start = os.getloadavg()[0]
    figures = measure(variants, repo, args.profile, QUERIES[:args.queries],
                      args.review_runs)
    figures.update({
        "baseline": git(ROOT, "rev-parse", args.baseline).strip(),
        "baseline_backend": args.baseline_backend or "torch",
        "files": {h: len(git(repo, "diff", "--name-only", f"{h}^", h).split())
                  for h, _ in PULL_REQUESTS},
        "date": time.strftime("%Y-%m-%d"),
        "machine": f"{os.cpu_count()} cores, {platform.python_implementation()} "
                   f"{platform.python_version()}, load average "
                   f"{load_at_start:.1f} at the start and {os.getloadavg()[0]:.1f} at the "
                   "end"})
    command = " ".join(["python evals/bench_process.py", *(
        [f"--baseline {args.baseline}"] if args.baseline != DEFAULT_BASELINE else []), *(
        [f"--baseline-backend {args.baseline_backend}"] if args.baseline_backend else []), *(
        [f"--queries {args.queries}"] if args.queries != len(QUERIES) else []), *(
        [f"--review-runs {args.review_runs}"] if args.review_runs != REVIEW_RUNS else []), *(
        [f"--backends {args.backends}"] if args.backends != "onnx,onnx-int8" else []),
        "--doc docs/process-performance.md"])
    figures["command"] = command
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(json.dumps(figures, indent=1) + "\n")
    report = render(figures, command)
    if args.doc:
        args.doc.write_text(report, encoding="utf-8")
    print(report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
