"""Sharded-build benchmark: N shard builds and their merge against one single build.

Usage::

    python evals/bench_shards.py          # django, sphinx: docs/sharding-performance.md
    python evals/bench_shards.py --quick  # one small corpus, a sanity run of every figure
    python evals/bench_shards.py --sphinx-source /path/to/sphinx.git
    # with embeddings only, on a part of sphinx (a loaded machine's budget):
    python evals/bench_shards.py --rounds 0 --include 'sphinx/ext/**'

Every build, shard and merge is its own ``pr-context`` process (start-up, imports and
model loading count, as on N runners), timed from the outside with its peak RSS. A round
runs a single build, the N = 2 shards and their merge, and the N = 4 shards and their
merge, in an order that rotates from round to round, so all three share the machine's
drift. The shards of one N run one after another: their walls add up to what N runners
spend together. The across-revisions figure builds shards at an older commit, updates
each from its own file to the newer commit and merges them, against the single index
updated the same way.

Corpora nobody here wrote: django's sdist (as ``evals/bench_index.py`` prepares it) and
sphinx-doc/sphinx cloned with its history (``--sphinx-source``; the clone and revision
of ``evals/bench_action.py``), both in git-ignored ``evals/.cache/``. Writes the report
(``--out``) and the raw figures to ``evals/out/bench_shards.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from bench_action import DEFAULT_SOURCE as SPHINX_SOURCE
from bench_action import HEAD as SPHINX_REV  # the benchmark's sphinx pull request head
from bench_action import clone as sphinx_repo
from bench_index import FULL_PLAN, QUICK_PLAN, Corpus, machine_facts, prepare_corpus

EVALS_DIR = Path(__file__).resolve().parent
ROOT = EVALS_DIR.parent
OUT_JSON = EVALS_DIR / "out" / "bench_shards.json"
DEFAULT_REPORT = ROOT / "docs" / "sharding-performance.md"
QUICK_REPORT = EVALS_DIR / "out" / "sharding-performance-quick.md"

# Targets from issue 18, on this machine.
TARGET_SHARD_SUM = 1.15  # the N shard builds together / one single build
TARGET_MERGE = 0.10  # the merge / one single build
SHARD_COUNTS = (2, 4)
UPDATE_COMMITS = 20  # first-parent commits between the older and the newer revision
MOVE_GAPS = (1, 10, 100)  # first-parent commits apart, for the files-moved figure
ROUNDS_WITHOUT_EMBEDDINGS = 3


@dataclass(frozen=True)
class Target:
    """One repository at one revision (and an older one for the update figure)."""

    name: str
    repo: str
    rev: str
    older: str | None = None
    include: tuple[str, ...] = ()  # index only these paths (``index --include``)


@dataclass(frozen=True)
class Proc:
    """One pr-context process: wall and CPU seconds, peak RSS and its --json output.

    CPU seconds (user + system, of the process and of the parse workers and git
    processes it waited for) move less with the machine's load than wall seconds do.
    """

    wall_s: float
    cpu_s: float
    peak_rss_mb: float
    result: dict[str, Any]

    @property
    def digest(self) -> str:
        return str(self.result["digest"])


@dataclass(frozen=True)
class Sharded:
    """The N shard builds of one round and their merge."""

    count: int
    shards: list[Proc]
    merge: Proc

    @property
    def shard_sum_s(self) -> float:
        return sum(p.wall_s for p in self.shards)

    @property
    def shard_cpu_s(self) -> float:
        return sum(p.cpu_s for p in self.shards)

    @property
    def slowest_s(self) -> float:
        return max(p.wall_s for p in self.shards)


@dataclass(frozen=True)
class Round:
    single: Proc
    sharded: list[Sharded]


@dataclass(frozen=True)
class Update:
    """The update figure: single and shards updated from ``older`` to ``rev``."""

    count: int
    single: Proc
    shards: list[Proc]
    merge: Proc
    full_digest: str  # of a full single build of ``rev``
    moved: int  # files that changed shard between the two revisions


@dataclass
class Results:
    quick: bool
    machine: dict[str, str]
    load_before: tuple[float, ...] = ()
    load_after: tuple[float, ...] = ()
    rounds: dict[str, list[Round]] = field(default_factory=dict)  # "corpus/mode" -> rounds
    files: dict[str, int] = field(default_factory=dict)  # corpus -> files at rev
    updates: dict[str, Update] = field(default_factory=dict)  # corpus -> update figure
    moves: dict[str, dict[str, int]] = field(default_factory=dict)  # corpus -> gap/N -> moved
    total_s: float = 0.0
    include: tuple[str, ...] = ()  # the paths indexed, when not every file


# -- corpora ------------------------------------------------------------------------------


def targets(quick: bool, sphinx_source: str, only: set[str] | None = None,
            include: tuple[str, ...] = ()) -> list[Target]:
    """The corpora to measure (of the full plan: those named in ``only``, if given),
    each indexing only the paths ``include`` matches, if given."""
    plan = QUICK_PLAN if quick else FULL_PLAN
    if quick:
        small = next(c for c in plan.parse if len(c.releases) > 1)
        return [replace(_release_target(small), include=include)]
    chosen = []
    if only is None or "django" in only:
        django = next(c for c in plan.parse if c.name == "django")
        chosen.append(Target("django", str(prepare_corpus(django)), django.head_tag,
                             include=include))
    if only is None or "sphinx" in only:
        sphinx = sphinx_repo(sphinx_source)
        older = _check(["git", "-C", str(sphinx), "rev-parse",
                        f"{SPHINX_REV}~{UPDATE_COMMITS}"]).strip()
        chosen.append(Target("sphinx", str(sphinx), SPHINX_REV, older, include))
    return chosen


def _release_target(corpus: Corpus) -> Target:
    repo = prepare_corpus(corpus)
    return Target(corpus.name, str(repo), corpus.releases[-1].tag, corpus.releases[0].tag)


# -- measuring ----------------------------------------------------------------------------


def run_process(args: Sequence[str]) -> Proc:
    """Run ``pr-context ARGS --json`` as a child; time it and read its own peak RSS."""
    command = [sys.executable, "-m", "pr_context", *args, "--json", "--quiet"]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(command, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's own rusage
        wall = time.perf_counter() - started
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read().decode(), err.read().decode()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{stderr[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    shard = f" --shard {args[args.index('--shard') + 1]}" if "--shard" in args else ""
    _log(f"{args[0]}{shard}: {wall:.1f} s wall, {cpu:.1f} s CPU, "
         f"load {os.getloadavg()[0]:.1f}")
    return Proc(wall, cpu, usage.ru_maxrss / 1024, json.loads(stdout))


def index_args(target: Target, rev: str, db: Path, embeddings: bool,
               shard: str | None = None) -> list[str]:
    args = ["index", "--repo", target.repo, "--rev", rev, "--db", str(db)]
    args += [f"--include={glob}" for glob in target.include]
    if not embeddings:
        args.append("--no-embeddings")
    return [*args, "--shard", shard] if shard else args


def build_sharded(target: Target, rev: str, folder: Path, count: int,
                  embeddings: bool) -> Sharded:
    """The N shards of ``rev``, one process after another, then their merge."""
    paths = [folder / f"shard-{k}-of-{count}.duckdb" for k in range(1, count + 1)]
    shards = [run_process(index_args(target, rev, path, embeddings, f"{k}/{count}"))
              for k, path in enumerate(paths, 1)]
    merged = run_process(["merge", "--repo", target.repo, "--db",
                          str(folder / f"merged-{count}.duckdb"), *map(str, paths)])
    return Sharded(count, shards, merged)


def measure_round(target: Target, embeddings: bool, work: Path, number: int) -> Round:
    """A single build and the sharded builds, in an order rotated by ``number``."""
    folder = work / f"{target.name}-{'model' if embeddings else 'lexical'}-{number}"
    folder.mkdir(parents=True)
    jobs: list[int] = [0, *SHARD_COUNTS]  # 0: the single build
    jobs = jobs[number % len(jobs):] + jobs[:number % len(jobs)]
    single: Proc | None = None
    sharded: dict[int, Sharded] = {}
    for job in jobs:
        if job == 0:
            single = run_process(index_args(target, target.rev, folder / "single.duckdb",
                                            embeddings))
        else:
            sharded[job] = build_sharded(target, target.rev, folder, job, embeddings)
    assert single is not None
    shutil.rmtree(folder)
    result = Round(single, [sharded[n] for n in SHARD_COUNTS])
    _log_round(target, embeddings, result)
    return result


def measure_update(target: Target, work: Path, count: int, full_digest: str) -> Update:
    """Shards and the single index built at ``older``, each updated to ``rev``."""
    assert target.older is not None
    folder = work / f"{target.name}-update"
    folder.mkdir()
    single_db = folder / "single.duckdb"
    run_process(index_args(target, target.older, single_db, False))
    build_sharded(target, target.older, folder, count, False)
    paths = [folder / f"shard-{k}-of-{count}.duckdb" for k in range(1, count + 1)]
    before = _shard_of_paths(paths)
    single = run_process(index_args(target, target.rev, single_db, False))
    shards = [run_process(index_args(target, target.rev, p, False, f"{k}/{count}"))
              for k, p in enumerate(paths, 1)]
    after = _shard_of_paths(paths)
    merged = run_process(["merge", "--repo", target.repo, "--db",
                          str(folder / "merged.duckdb"), *map(str, paths)])
    shutil.rmtree(folder)
    moved = sum(1 for p, k in after.items() if before.get(p, k) != k)
    return Update(count, single, shards, merged, full_digest, moved)


def _shard_of_paths(shards: Sequence[Path]) -> dict[str, int]:
    return {p: k for k, shard in enumerate(shards, 1) for p in _paths(shard)}


def _paths(db: Path) -> list[str]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return [p for (p,) in con.execute("SELECT path FROM files").fetchall()]


def count_moves(target: Target) -> dict[str, int]:
    """Files that change shard between a revision ``gap`` first-parent commits back and
    ``rev``, for N = 2 and 4: the part of a shard cache an update must re-parse for
    moves alone (the files it changes come on top). Computed in this process."""
    from pr_context.git import list_files, open_repository, resolve_revision
    from pr_context.index.build import IndexOptions, policy_at
    from pr_context.index.shards import shard_of

    repo = open_repository(target.repo)

    def assignment(rev: str, count: int) -> dict[str, int]:
        sha = resolve_revision(repo, rev)
        return shard_of(list_files(repo, sha), policy_at(repo, sha, IndexOptions()), count)

    moves: dict[str, int] = {}
    for count in SHARD_COUNTS:
        now = assignment(target.rev, count)
        moves[f"files/{count}"] = len(now)
        for gap in MOVE_GAPS:
            then = assignment(f"{target.rev}~{gap}", count)
            moves[f"{gap}/{count}"] = sum(1 for p, k in now.items() if then.get(p, k) != k)
    return moves


# -- the benchmark ------------------------------------------------------------------------


def run_benchmark(quick: bool, sphinx_source: str, rounds: int, embed_corpora: set[str],
                  work: Path, include: tuple[str, ...] = (), embed_rounds: int = 1) -> Results:
    """``rounds`` rounds without embeddings (none: the update and moves figures are
    skipped too), then ``embed_rounds`` rounds with them for each of ``embed_corpora``."""
    started = time.perf_counter()
    results = Results(quick=quick, machine=machine_facts(), load_before=os.getloadavg(),
                      include=include)
    chosen = targets(quick, sphinx_source, None if rounds > 0 else embed_corpora, include)
    for target in chosen if rounds > 0 else []:
        key = f"{target.name}/lexical"
        results.rounds[key] = [measure_round(target, False, work, n) for n in range(rounds)]
        results.files[target.name] = int(results.rounds[key][0].single.result["files"])
        if target.older is not None:
            digest = results.rounds[key][0].single.digest
            results.updates[target.name] = measure_update(target, work, SHARD_COUNTS[-1],
                                                           digest)
            if not quick:
                results.moves[target.name] = count_moves(target)
    for target in chosen:
        if quick or target.name in embed_corpora:
            key = f"{target.name}/model"
            results.rounds[key] = [measure_round(target, True, work, n)
                                   for n in range(embed_rounds)]
            results.files.setdefault(target.name,
                                     int(results.rounds[key][0].single.result["files"]))
    results.load_after = os.getloadavg()
    results.total_s = time.perf_counter() - started
    return results


# -- the report ---------------------------------------------------------------------------


def _ratio(values: Sequence[float]) -> float:
    return statistics.median(values)


def summary_rows(results: Results) -> list[tuple[str, float, float, bool]]:
    """(figure, measured, target, met) for every corpus, mode and N."""
    rows = []
    for key, rounds in results.rounds.items():
        for i, count in enumerate(SHARD_COUNTS):
            total = _ratio([r.sharded[i].shard_sum_s / r.single.wall_s for r in rounds])
            merge = _ratio([r.sharded[i].merge.wall_s / r.single.wall_s for r in rounds])
            cpu = _ratio([r.sharded[i].shard_cpu_s / r.single.cpu_s for r in rounds])
            merge_cpu = _ratio([r.sharded[i].merge.cpu_s / r.single.cpu_s for r in rounds])
            rows += [
                (f"{key}, N = {count}: shards together / single build, wall", total,
                 TARGET_SHARD_SUM, total <= TARGET_SHARD_SUM),
                (f"{key}, N = {count}: shards together / single build, CPU", cpu,
                 TARGET_SHARD_SUM, cpu <= TARGET_SHARD_SUM),
                (f"{key}, N = {count}: merge / single build, wall", merge, TARGET_MERGE,
                 merge <= TARGET_MERGE),
                (f"{key}, N = {count}: merge / single build, CPU", merge_cpu, TARGET_MERGE,
                 merge_cpu <= TARGET_MERGE)]
    return rows


def digests_equal(results: Results) -> bool:
    rounds_ok = all(s.merge.digest == r.single.digest for rounds in results.rounds.values()
                    for r in rounds for s in r.sharded)
    updates_ok = all(u.merge.digest == u.full_digest == u.single.digest
                     for u in results.updates.values())
    return rounds_ok and updates_ok


def render_report(runs: Sequence[Results]) -> str:
    results = combine(runs)
    commands = [command_line(run) for run in runs]
    lines = [
        "# Sharded build performance",
        "",
        "How much a sharded build (`pr-context index --shard K/N` on N runners, then",
        "`pr-context merge`) costs against one single build, measured by",
        "[`evals/bench_shards.py`](../evals/bench_shards.py) on code nobody here wrote.",
        "This file is written by the benchmark; re-run it rather than editing the figures:",
        "",
        "```sh",
        *commands,
        *(["python evals/bench_shards.py --from-json RUN.json ...  # the report of them all"]
          if len(runs) > 1 else []),
        "```",
        "",
        "Every build, shard and merge is its own process, timed from the outside (start-up,",
        "imports and, with embeddings, loading the model count, as on a runner). The shards",
        "of one N run one after another on this machine, so their walls add up to what N",
        "runners spend together; the slowest shard is what the matrix waits for. Each round",
        "runs the single build, the 2 shards and their merge, and the 4 shards and their",
        "merge, in an order rotated from round to round; each ratio compares figures of",
        "the same round, and the median over rounds is shown.",
        "",
        "Each figure is given twice: in wall seconds, what runners are billed for, and in",
        "CPU seconds (user and system time of the process and of the parse workers and",
        "git processes it waited for), which measure the work itself. On a quiet 2-core",
        "machine the two move together; on a shared one, wall seconds mostly measure the",
        "other jobs, and the CPU ratios are the ones to read.",
        "",
        *_conditions(runs),
        "",
        "## Summary",
        "",
        "| figure | measured | target | met |",
        "|---|---:|---:|---|",
        *[f"| {name} | {value:.2f}x | ≤ {target:.2f}x | {'yes' if met else 'no'} |"
          for name, value, target, met in summary_rows(results)],
        f"| merged digest equals the single build's, every round and update | "
        f"{'yes' if digests_equal(results) else 'NO'} | equal | "
        f"{'yes' if digests_equal(results) else 'no'} |",
        "",
        *_rounds_section(results),
        *_work_section(results),
        *_update_section(results),
        *_moves_section(results),
    ]
    return "\n".join(lines) + "\n"


def command_line(run: Results) -> str:
    """The command that measures what ``run`` holds (read from the figures themselves)."""
    words = ["python evals/bench_shards.py"]
    lexical = [rounds for key, rounds in run.rounds.items() if key.endswith("/lexical")]
    if run.quick:
        words.append("--quick")
    else:
        words.append("--sphinx-source PATH_OR_URL")
        if not lexical:
            words.append("--rounds 0")
        elif len(lexical[0]) != ROUNDS_WITHOUT_EMBEDDINGS:
            words.append(f"--rounds {len(lexical[0])}")
        embedded = sorted(key.split("/")[0] for key in run.rounds if key.endswith("/model"))
        if embedded != ["sphinx"]:
            words.append("--embed-corpora " + (",".join(embedded) or "''"))
        model = [rounds for key, rounds in run.rounds.items() if key.endswith("/model")]
        if model and len(model[0]) != 1:
            words.append(f"--embed-rounds {len(model[0])}")
    words += [f"--include '{glob}'" for glob in run.include]
    return " ".join(words)


def _conditions(runs: Sequence[Results]) -> list[str]:
    lines = []
    for run in runs:
        m = run.machine
        before = ", ".join(f"{v:.1f}" for v in run.load_before)
        after = ", ".join(f"{v:.1f}" for v in run.load_after)
        measured = ", ".join([*run.rounds, *(f"{c}/update" for c in run.updates)])
        lines += [
            f"Conditions{f' of the run that measured {measured}' if len(runs) > 1 else ''}: "
            f"{m['date']}, {m['cpus']} CPUs ({m['cpu model']}), {m['memory']}, Python "
            f"{m['python']}, pr-context {m['pr-context']} (source "
            f"{m['pr_context source sha256']}), torch {m['torch']}, duckdb {m['duckdb']}. "
            f"Load average (1, 5, 15 min) {before} at the start and {after} at the end. "
            f"The run took {run.total_s / 60:.0f} minutes.", *_subset(run), ""]
    return [*lines, "The machine is shared, so absolute seconds are noisy and only the "
            "ratios of one round mean much."]


def _subset(run: Results) -> list[str]:
    if not run.include:
        return []
    globs = ", ".join(f"`{glob}`" for glob in run.include)
    return [f"Only the paths matching {globs} were indexed (`index --include`; every "
            "file is still listed, weighed and recorded), to fit the run in the time the "
            "machine could spare: the per-process costs weigh more in a smaller build."]


def combine(runs: Sequence[Results]) -> Results:
    """The figures of several runs in one report; a later run's figures replace an
    earlier one's for the same corpus and mode."""
    combined = Results(quick=runs[-1].quick, machine=runs[-1].machine)
    for run in runs:
        combined.rounds.update(run.rounds)
        combined.files.update(run.files)
        combined.updates.update(run.updates)
        combined.moves.update(run.moves)
        combined.total_s += run.total_s
    return combined


def _rounds_section(results: Results) -> list[str]:
    lines = ["## Single build against N shards and their merge", "",
             "Seconds are wall (CPU in brackets: user and system of the process and of "
             "the workers and git processes it waited for).", "",
             "| corpus | embeddings | files | round | single s | N | shards s (each) | "
             "shards together s | / single | slowest shard / single | merge s | "
             "merge / single | peak RSS MB single / largest shard | digest equal |",
             "|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|---|"]
    for key, rounds in results.rounds.items():
        corpus, mode = key.split("/")
        for number, r in enumerate(rounds, 1):
            for s in r.sharded:
                each = ", ".join(f"{p.wall_s:.1f}" for p in s.shards)
                rss = max(p.peak_rss_mb for p in s.shards)
                lines.append(
                    f"| {corpus} | {'with' if mode == 'model' else 'without'} | "
                    f"{results.files.get(corpus, 0):,} | {number} | "
                    f"{r.single.wall_s:.1f} ({r.single.cpu_s:.1f}) | {s.count} | {each} | "
                    f"{s.shard_sum_s:.1f} ({s.shard_cpu_s:.1f}) | "
                    f"{s.shard_sum_s / r.single.wall_s:.2f}x "
                    f"({s.shard_cpu_s / r.single.cpu_s:.2f}x) | "
                    f"{s.slowest_s / r.single.wall_s:.2f}x | "
                    f"{s.merge.wall_s:.1f} ({s.merge.cpu_s:.1f}) | "
                    f"{s.merge.wall_s / r.single.wall_s:.2f}x "
                    f"({s.merge.cpu_s / r.single.cpu_s:.2f}x) | "
                    f"{r.single.peak_rss_mb:,.0f} / {rss:,.0f} | "
                    f"{'yes' if s.merge.digest == r.single.digest else 'NO'} |")
    return [*lines, ""]


def _work_section(results: Results) -> list[str]:
    """With embeddings: the chunks each process embedded and its CPU seconds per chunk.
    The shards of one N embed the single build's chunks between them (no more, when no
    text lies in two shards), so a gap in CPU per chunk is the machine's drift or a
    per-process cost, not more work."""
    keys = [key for key in results.rounds if key.endswith("/model")]
    if not keys:
        return []
    lines = ["## The work itself, with embeddings", "",
             "Chunks embedded by each process, and its CPU seconds per chunk embedded "
             "(start-up included). The shards of one N embed the single build's chunks "
             "between them; CPU per chunk that differs between processes doing the same "
             "work measures the machine as much as the code.", "",
             "| corpus | round | process | chunks embedded | CPU s | CPU s per chunk |",
             "|---|---:|---|---:|---:|---:|"]
    for key in keys:
        for number, r in enumerate(results.rounds[key], 1):
            named = [("single build", r.single)] + [
                (f"shard {k}/{s.count}", p) for s in r.sharded
                for k, p in enumerate(s.shards, 1)]
            for name, proc in named:
                embedded = int(proc.result["embedded"])
                lines.append(f"| {key.split('/')[0]} | {number} | {name} | {embedded:,} | "
                             f"{proc.cpu_s:.1f} | {proc.cpu_s / max(embedded, 1):.3f} |")
            for s in r.sharded:
                together = sum(int(p.result["embedded"]) for p in s.shards)
                lines.append(f"| {key.split('/')[0]} | {number} | {s.count} shards "
                             f"together | {together:,} | {s.shard_cpu_s:.1f} | "
                             f"{s.shard_cpu_s / max(together, 1):.3f} |")
    return [*lines, ""]


def _update_section(results: Results) -> list[str]:
    if not results.updates:
        return []
    lines = ["## Across revisions: shard caches updated to a newer commit", "",
             "The single index and the N shards are built at the older commit, then each "
             "is updated from its own file to the newer one (without embeddings). Files "
             "move between shards as sizes change; the merged index must still equal a "
             "full build of the newer commit.", "",
             "| corpus | commits apart | N | single update s | shard updates s (each) | "
             "together / single update | files parsed by the shards | files that changed "
             "shard | merge s | digest equals the full build's |",
             "|---|---:|---:|---:|---|---:|---:|---:|---:|---|"]
    for corpus, u in results.updates.items():
        each = ", ".join(f"{p.wall_s:.1f}" for p in u.shards)
        together = sum(p.wall_s for p in u.shards)
        parsed = sum(int(p.result["changes"]["parsed"]) for p in u.shards)
        equal = u.merge.digest == u.full_digest == u.single.digest
        gap = "2 releases" if results.quick else str(UPDATE_COMMITS)
        cpu = sum(p.cpu_s for p in u.shards) / u.single.cpu_s
        lines.append(f"| {corpus} | {gap} | {u.count} | {u.single.wall_s:.1f} | {each} | "
                     f"{together / u.single.wall_s:.2f}x (CPU {cpu:.2f}x) | {parsed} "
                     f"(single: {u.single.result['changes']['parsed']}) | {u.moved} | "
                     f"{u.merge.wall_s:.1f} | {'yes' if equal else 'NO'} |")
    return [*lines, ""]


def _moves_section(results: Results) -> list[str]:
    if not results.moves:
        return []
    lines = ["## Files that change shard between revisions", "",
             "How many of the files at the newer commit belong to another shard than at a "
             "commit so many first-parent commits before (the files the update must "
             "re-parse for moving alone; with embeddings their chunks are embedded again "
             "by their new shard).", "",
             "| corpus | N | files | " + " | ".join(f"{g} commits apart" for g in MOVE_GAPS)
             + " |", "|---|---:|---:|" + "---:|" * len(MOVE_GAPS)]
    for corpus, moves in results.moves.items():
        for count in SHARD_COUNTS:
            files = moves[f"files/{count}"]
            cells = " | ".join(f"{moves[f'{g}/{count}']} ({moves[f'{g}/{count}'] / files:.1%})"
                               for g in MOVE_GAPS)
            lines.append(f"| {corpus} | {count} | {files:,} | {cells} |")
    return [*lines, ""]


def _log_round(target: Target, embeddings: bool, r: Round) -> None:
    parts = [f"single {r.single.wall_s:.1f}s (CPU {r.single.cpu_s:.1f}s)"]
    for s in r.sharded:
        parts.append(f"N={s.count}: shards {s.shard_sum_s:.1f}s "
                     f"({s.shard_sum_s / r.single.wall_s:.2f}x, CPU "
                     f"{s.shard_cpu_s / r.single.cpu_s:.2f}x), merge {s.merge.wall_s:.1f}s "
                     f"({s.merge.wall_s / r.single.wall_s:.2f}x), digest "
                     f"{'equal' if s.merge.digest == r.single.digest else 'DIFFERS'}")
    _log(f"{target.name} {'with' if embeddings else 'without'} embeddings: "
         + "; ".join(parts))


# -- raw figures --------------------------------------------------------------------------


def _results_json(results: Results) -> str:
    return json.dumps(asdict(results), indent=1)


def _results_from_json(text: str) -> Results:
    data = json.loads(text)

    def proc(d: dict[str, Any]) -> Proc:
        return Proc(**d)

    def sharded(d: dict[str, Any]) -> Sharded:
        return Sharded(d["count"], [proc(p) for p in d["shards"]], proc(d["merge"]))

    return Results(
        quick=data["quick"], machine=data["machine"],
        load_before=tuple(data["load_before"]), load_after=tuple(data["load_after"]),
        rounds={k: [Round(proc(r["single"]), [sharded(s) for s in r["sharded"]])
                    for r in v] for k, v in data["rounds"].items()},
        files=data["files"],
        updates={k: Update(u["count"], proc(u["single"]), [proc(p) for p in u["shards"]],
                           proc(u["merge"]), u["full_digest"], u["moved"])
                 for k, u in data["updates"].items()},
        moves=data["moves"], total_s=data["total_s"], include=tuple(data.get("include", ())))


def _check(command: Sequence[str]) -> str:
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stderr}")
    return done.stdout


def _log(message: str) -> None:
    print(f"bench: {message}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="one small corpus (itsdangerous, two releases): a sanity run")
    parser.add_argument("--sphinx-source", default=SPHINX_SOURCE,
                        help="where to clone sphinx-doc/sphinx from (URL or local path)")
    parser.add_argument("--rounds", type=int, default=ROUNDS_WITHOUT_EMBEDDINGS,
                        help="rounds without embeddings (with embeddings: --embed-rounds); 0 "
                             "measures only the builds with embeddings (no update or moves "
                             "figures)")
    parser.add_argument("--embed-rounds", type=int, default=1,
                        help="rounds with embeddings, the order rotating from round to round "
                             "as without")
    parser.add_argument("--embed-corpora", default="sphinx",
                        help="comma-separated corpora also measured with embeddings "
                             "(django's build with embeddings takes over an hour here)")
    parser.add_argument("--include", action="append", default=[], metavar="GLOB",
                        help="index only the paths GLOB matches (repeatable; "
                             "`index --include`): a part of each corpus, when a whole "
                             "build takes longer than the machine can spare")
    parser.add_argument("--out", type=Path, default=None, help="report to write")
    parser.add_argument("--json", type=Path, default=None,
                        help=f"raw figures to write (default {OUT_JSON.relative_to(ROOT)})")
    parser.add_argument("--from-json", type=Path, metavar="JSON", nargs="+",
                        help="measure nothing: write the report from runs' raw figures (a "
                             "later run's replace an earlier one's for the same corpus)")
    args = parser.parse_args(argv)
    if args.from_json:
        runs = [_results_from_json(path.read_text()) for path in args.from_json]
    else:
        with tempfile.TemporaryDirectory(prefix="bench-shards-") as work:
            runs = [run_benchmark(args.quick, args.sphinx_source, args.rounds,
                                  set(filter(None, args.embed_corpora.split(","))),
                                  Path(work), tuple(args.include), args.embed_rounds)]
        json_out = args.json or OUT_JSON.with_name(
            f"bench_shards{'-quick' if runs[0].quick else ''}.json")
        json_out.parent.mkdir(parents=True, exist_ok=True)
        json_out.write_text(_results_json(runs[0]))
    results = combine(runs)
    out = args.out or (QUICK_REPORT if results.quick else DEFAULT_REPORT)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render_report(runs))
    for name, value, target, met in summary_rows(results):
        _log(f"{name}: {value:.2f}x (target {target:.2f}x, {'met' if met else 'MISSED'})")
    _log(f"digests equal: {digests_equal(results)}; wrote {out}")


if __name__ == "__main__":
    main()
