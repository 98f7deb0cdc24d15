"""Benchmark: the review's load stage (graph, links, corpus) under two or more code versions.

Usage::

    python evals/bench_review_load.py --source /path/to/sphinx.git --code main --code HEAD \
        --doc docs/review-load-performance.md

Each ``--code`` is a revision of this repository (its ``pr_context/`` is archived under
``evals/.cache/bench-process/``, as ``bench_process.py`` does) or ``.`` for the working
tree. The pull request is the 10-file sphinx-doc/sphinx change of ``evals/bench_action.py``,
in its clone. Per code version, the
base index is built once (``--no-embeddings``, untimed); then ``pr-context review
--no-embeddings`` runs ``--rounds`` times per version, interleaved (A B A B ...), each
its own process, so a busy machine slows both alike. Reported: the median of the
review's loading of both sides (``load``, with ``load_base`` added where it ran after it:
reading the head and base indexes and building each side's symbol graph, link index and
search corpus), of ``load_base`` alone, of ``analyse``, of the
whole process's wall time and of its CPU time (less sensitive to other load on the
machine than wall time), with each version's ratio to the first. Raw figures go to
``evals/out/bench_review_load.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench_action import DEFAULT_SOURCE, HEAD, clone, parent_of
from bench_process import baseline_source

EVALS_DIR = Path(__file__).resolve().parent
ROOT = EVALS_DIR.parent
CACHE_DIR = EVALS_DIR / ".cache" / "bench-review-load"
OUT_JSON = EVALS_DIR / "out" / "bench_review_load.json"
STAGES = ("load", "load_base", "analyse", "total")
# Runs the CLI from one code version's directory, not from the installed (editable) package.
_BOOT = """
import sys
sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
sys.path.insert(0, sys.argv.pop(1))
from pr_context.cli import run
sys.argv[0] = 'pr-context'
sys.exit(run())
"""


def code_dir(revision: str) -> Path:
    """A directory holding ``revision``'s ``pr_context`` package (the work tree for ``.``)."""
    return ROOT if revision == "." else baseline_source(revision)


def review(code: Path, repo: Path, base: str, db: Path, out: Path,
           head: str = HEAD) -> dict[str, Any]:
    """One ``pr-context review`` process: wall seconds and the review's stage timings."""
    shutil.rmtree(out, ignore_errors=True)
    command = [sys.executable, "-c", _BOOT, str(code), "review", "--quiet", "--no-embeddings",
               "--repo", str(repo), "--base", base, "--head", head, "--db", str(db),
               "--out", str(out)]
    started, cpu = time.perf_counter(), _children_cpu()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    seconds, cpu = time.perf_counter() - started, _children_cpu() - cpu
    if done.returncode != 0:
        raise SystemExit(f"review failed ({done.returncode}):\n{done.stderr[-2000:]}")
    evidence = json.loads((out / "evidence.json").read_text(encoding="utf-8"))
    return {"seconds": seconds, "cpu_seconds": cpu, "timings_ms": evidence["timings_ms"],
            "callers": sum(len(s["callers"]) for s in evidence["changed_symbols"])}


def _children_cpu() -> float:
    """CPU seconds (user and system) of the finished child processes so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def render(figures: dict[str, Any]) -> str:
    names = list(figures["runs"])
    first = names[0]
    medians = {n: {**{s: statistics.median(r["timings_ms"][s] / 1000
                                            for r in figures["runs"][n]) for s in STAGES},
                   "load": statistics.median(_both_sides(r["timings_ms"])
                                             for r in figures["runs"][n]),
                   "wall": statistics.median(r["seconds"] for r in figures["runs"][n]),
                   "cpu": statistics.median(r["cpu_seconds"] for r in figures["runs"][n])}
               for n in names}
    lines = ["| code | load s | load_base s | analyse s | review total s | process wall s "
             "| process CPU s | callers listed | load vs first | CPU vs first |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        m = medians[name]
        lines.append(f"| `{name}` | {m['load']:.2f} | {m['load_base']:.2f} "
                     f"| {m['analyse']:.2f} | {m['total']:.2f} "
                     f"| {m['wall']:.1f} | {m['cpu']:.1f} "
                     f"| {figures['runs'][name][0]['callers']} "
                     f"| {m['load'] / medians[first]['load']:.2f} "
                     f"| {m['cpu'] / medians[first]['cpu']:.2f} |")
    return "\n".join([f"Medians of {figures['rounds']} interleaved rounds per code version, "
                      f"sphinx-doc/sphinx@{figures.get('head', HEAD)[:12]} "
                      f"({figures.get('files', 10)} files), `--no-embeddings`.", "",
                      *lines, ""])


def _both_sides(timings: dict[str, int]) -> float:
    """Seconds the review took to load both sides: ``load``, and ``load_base`` where it
    ran after it (older code); newer code loads the base side within ``load`` (its
    stage is timed inside, before the head's vectors are waited for)."""
    stages = list(timings)
    within = stages.index("load_base") < stages.index("load")
    return (timings["load"] + (0 if within else timings["load_base"])) / 1000


def render_doc(figures: dict[str, Any], command: str) -> str:
    """The report: what was measured, how to re-run it, the table, the conditions."""
    load = _load_average()
    return "\n".join([
        "# Review load stage: code versions compared on sphinx", "",
        "Written by `evals/bench_review_load.py`; do not edit by hand. Reproduce:", "",
        "```sh", command, "```", "",
        "Each round runs `pr-context review --no-embeddings` once per code version, in "
        "turn, each its own process, on the base index that version built. `load` is the "
        "time the review took to read the head and the base index and build each side's "
        "symbol graph, link index and search corpus (the base's rows and corpus, which the "
        "head's are read over, and, in `load_base`, the base side made of them: code that "
        "times `load_base` after `load` has it added in, newer code loads it within); "
        "process CPU time "
        "counts what the review process itself spent, which other load on the machine "
        "disturbs less than wall time.", "", render(figures),
        f"Machine: {os.cpu_count()} CPUs, load average {load} at the end of the run "
        f"(other work on the machine slows every version alike, round by round); "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.", ""])


def _load_average() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", default=DEFAULT_SOURCE,
                        help="where to clone sphinx-doc/sphinx from (URL or local path)")
    parser.add_argument("--code", action="append", required=True,
                        help="a revision of this repository, or . for the work tree "
                             "(repeat: the first is the reference)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--head", default=HEAD,
                        help="the pull request's head commit (its parent is the base); "
                             "default the 10-file change of bench_action.py")
    parser.add_argument("--doc", type=Path, default=None, help="write the report here")
    args = parser.parse_args(argv)
    repo = clone(args.source)
    head = args.head
    base = parent_of(repo, head)
    codes = {name: code_dir(name) for name in args.code}
    dbs = {name: CACHE_DIR / "db" / f"{head[:12]}-{i}.duckdb"
           for i, name in enumerate(codes)}
    for name, code in codes.items():  # build each base index (and warm the disk cache)
        dbs[name].parent.mkdir(parents=True, exist_ok=True)
        review(code, repo, base, dbs[name], CACHE_DIR / "out" / "warmup", head)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    for round_number in range(args.rounds):
        for name, code in codes.items():
            runs[name].append(review(code, repo, base, dbs[name], CACHE_DIR / "out" / name,
                                     head))
            print(f"round {round_number + 1} {name}: {runs[name][-1]['timings_ms']}",
                  file=sys.stderr)
    files = subprocess.run(["git", "-C", str(repo), "diff", "--name-only", base, head],
                           capture_output=True, text=True, check=True).stdout.split()
    figures = {"rounds": args.rounds, "runs": runs, "head": head, "files": len(files)}
    OUT_JSON.parent.mkdir(parents=True, exist_ok=True)
    OUT_JSON.write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    if args.doc:
        command = "python evals/bench_review_load.py " + " ".join(
            [*(f"--code {c}" for c in args.code), f"--rounds {args.rounds}",
             *([f"--head {head}"] if head != HEAD else []),
             f"--doc {args.doc}"])
        args.doc.write_text(render_doc(figures, command), encoding="utf-8")
    print(render(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
