"""Oracle: the symbol graph of two or more code versions gives the same answers.

Usage::

    python evals/graph_oracle.py --code main --code . \
        --source sphinx=/path/to/sphinx.git --source rxjs=/path/to/rxjs.git

Each ``--code`` is a revision of this repository (its ``pr_context/`` archived under
``evals/.cache/bench-process/``, as ``bench_process.py`` does) or ``.`` for the working
tree; the first is the reference. Each project (``--project``, default all of
:data:`PROJECTS`: real code nobody here wrote, cloned or downloaded at run time into
``evals/.cache/``) is indexed once at its pinned commit (``--no-embeddings``). Then, per
code version, one process builds the symbol graph of that index and writes, for every
definition, its callers (:func:`pr_context.graph.callers_of`: every site, how, confidence,
reason, candidate, sole, kind), its walk to the tests (``Reacher.reach``) and linked tests
(:func:`pr_context.links.linked_tests`) as the review asks for a symbol changed in place
(for every ``--links-every``-th definition), and a digest of the type bindings the graph
inferred. The answers must be equal, definition by definition; the first
differences are printed. The processes' CPU time for ``build_graph`` (and ``read_tables``)
is measured over ``--rounds`` interleaved rounds (A B A B ...) and reported as medians and
ratios to the reference. Exit status 1 when any answer differs.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_process import baseline_source

EVALS_DIR = Path(__file__).resolve().parent
ROOT = EVALS_DIR.parent
CACHE_DIR = EVALS_DIR / ".cache" / "graph-oracle"


@dataclass(frozen=True)
class Project:
    """A real repository at a pinned commit: a git source, or a corpus of corpora.yml."""

    name: str
    source: str  # a git URL or path; "corpus" for a pypi corpus of evals/corpora.yml
    revision: str


PROJECTS = (
    Project("sphinx", "https://github.com/sphinx-doc/sphinx.git",
            "465b758a35f6cb5be066997ef970ad69fe879cf8"),
    Project("django", "corpus", "fe59c2b7383840cd80ea9f5e7f79d58585bddb20"),
    Project("rich", "corpus", "0d8bd2758d5a58773cdbb42ce377deb31c933333"),
    Project("rxjs", "https://github.com/ReactiveX/rxjs.git",
            "54796b38a57e6309f9861e174737479bb3f63f61"),
    Project("class-validator", "https://github.com/typestack/class-validator.git",
            "0853341cc36f53d54e5afb50800c3a4b169abd73"),
)

# The reference code version's command line, not the installed (editable) package.
_CLI = """
import sys
sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
sys.path.insert(0, sys.argv.pop(1))
from pr_context.cli import run
sys.argv[0] = 'pr-context'
sys.exit(run())
"""
# One code version's worker: its pr_context first on the path, not the installed one.
_BOOT = """
import sys
sys.meta_path = [f for f in sys.meta_path if 'editable' not in repr(f).lower()]
sys.path.insert(0, sys.argv[1])
sys.path.insert(1, sys.argv[2])
import graph_oracle
graph_oracle.worker(sys.argv[3], sys.argv[4], int(sys.argv[5]))
"""


def worker(db: str, out: str, links_every: int) -> None:
    """Build the graph of ``db`` and write its CPU time to ``out`` and, unless
    ``links_every`` is 0, every definition's callers and, for every ``links_every``-th,
    its walk to the tests and linked tests. Runs under one code version."""
    import time

    from pr_context.graph import build_graph, callers_of
    from pr_context.graph.tables import read_tables
    from pr_context.index.store import IndexStore
    from pr_context.links.evidence import load_link_index
    from pr_context.links.reach import Reacher

    answers = links_every > 0

    with IndexStore.open_existing(Path(db)) as store:
        started = time.process_time()
        tables = read_tables(store)
        read_s = time.process_time() - started
        links = load_link_index(store) if answers else None
    started = time.process_time()
    graph = build_graph(tables)
    build_s = time.process_time() - started
    figures: dict[str, Any] = {"read_tables_cpu_s": read_s, "build_graph_cpu_s": build_s,
                               "sites": len(tables.sites),
                               "definitions": len(tables.definitions)}
    if answers:
        assert links is not None
        started = time.process_time()
        reacher = Reacher(graph, links)
        with gzip.open(f"{out}.answers.gz", "wt", encoding="utf-8") as stream:
            for number, qualified in enumerate(sorted(graph.tables.definitions)):
                callers = [_plain(c) for c in callers_of(graph, qualified)]
                tests = (_linked(graph, links, reacher, qualified)
                         if number % links_every == 0 else None)
                stream.write(json.dumps([qualified, callers, tests]) + "\n")
        figures["answers_cpu_s"] = time.process_time() - started
        figures["bindings"] = _bindings_digest(graph.tables)
    Path(out).write_text(json.dumps(figures), encoding="utf-8")


def _linked(graph: Any, links: Any, reacher: Any, qualified: str) -> list[Any]:
    """The review's walk to the tests and linked tests of ``qualified``, changed in
    place (no corpus: the semantic signal needs embeddings, which an index built here
    has not)."""
    from pr_context.changes import ChangedSymbol
    from pr_context.links import linked_tests

    d = graph.tables.definitions[qualified]
    change = ChangedSymbol(
        path=d.path, old_path=None, symbol=d.name, qualified_name=qualified,
        old_qualified_name=None, kind=d.kind, change="modified", cosmetic=False,
        start_line=d.start_line, end_line=d.end_line, old_signature=d.signature,
        new_signature=d.signature,
        parameter_changes=(), changed_lines=(d.start_line,))
    walk = reacher.reach(qualified)
    return [_plain(walk), *(_plain(e) for e in linked_tests(change, graph, links, {d.path},
                                                              reach=walk))]


def _plain(item: Any) -> Any:
    import dataclasses

    return json.loads(json.dumps(dataclasses.asdict(item), default=_sorted_sets))


def _sorted_sets(value: Any) -> Any:
    return sorted(value) if isinstance(value, set | frozenset) else str(value)


def _bindings_digest(tables: Any) -> str:
    """What bind_types inferred, as one digest: locals, attributes, module-level names,
    aliases, returned values, members and bases."""
    parts = [sorted((repr(k), repr(sorted(v) if isinstance(v, frozenset) else v))
                    for k, v in getattr(tables, name).items())
             for name in ("variables", "attributes", "globals", "aliases", "returns",
                          "members", "bases")]
    return hashlib.sha256(repr(parts).encode()).hexdigest()


def prepare(project: Project, sources: dict[str, str], code: Path) -> tuple[Path, Path]:
    """The project's repository at its revision and its index there, built once by the
    reference ``code`` (the graph's inputs are the same for every version compared)."""
    repo = _repository(project, sources.get(project.name, project.source))
    db = CACHE_DIR / "db" / code.name / f"{project.name}-{project.revision[:12]}.duckdb"
    if not db.is_file():
        db.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-c", _CLI, str(code), "index", "--quiet",
                        "--no-embeddings", "--repo", str(repo), "--rev", project.revision,
                        "--db", str(db)], check=True)
    return repo, db


def _repository(project: Project, source: str) -> Path:
    if source == "corpus":
        from pr_context.evals.corpora import prepare_corpus

        return prepare_corpus(project.name, EVALS_DIR / ".cache")
    target = CACHE_DIR / f"{project.name}.git"
    if not target.is_dir():
        target.parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["git", "clone", "--bare", "--quiet", "--no-tags", source,
                        str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "cat-file", "-e",
                    f"{project.revision}^{{commit}}"], check=True)
    return target


def run_worker(code: Path, db: Path, out: Path, links_every: int) -> dict[str, Any]:
    subprocess.run([sys.executable, "-c", _BOOT, str(code), str(EVALS_DIR), str(db),
                    str(out), str(links_every)], check=True)
    figures: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))
    return figures


def compare(reference: Path, other: Path, limit: int = 5) -> tuple[int, int, list[str]]:
    """(definitions, differing, the first differences) between two answer files."""
    with gzip.open(reference, "rt", encoding="utf-8") as a, \
            gzip.open(other, "rt", encoding="utf-8") as b:
        left, right = a.readlines(), b.readlines()
    differing, shown = 0, list[str]()
    for x, y in zip(left, right, strict=False):
        if x != y:
            differing += 1
            if len(shown) < limit:
                shown.append(_difference(json.loads(x), json.loads(y)))
    differing += abs(len(left) - len(right))
    return max(len(left), len(right)), differing, shown


def _difference(x: list[Any], y: list[Any]) -> str:
    if x[0] != y[0]:
        return f"definitions differ: {x[0]} vs {y[0]}"
    what = "callers" if x[1] != y[1] else "linked tests"
    a, b = (x[1], y[1]) if x[1] != y[1] else (x[2], y[2])
    only_a = [i for i in a if i not in b][:2]
    only_b = [i for i in b if i not in a][:2]
    return f"{x[0]}: {what} differ; only in reference {only_a}; only in other {only_b}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--code", action="append", required=True,
                        help="a revision of this repository, or . for the work tree "
                             "(repeat: the first is the reference)")
    parser.add_argument("--project", action="append", choices=[p.name for p in PROJECTS],
                        help="projects to check (repeat; default all)")
    parser.add_argument("--source", action="append", default=[], metavar="NAME=URL",
                        help="clone a git project from here instead (a local mirror)")
    parser.add_argument("--rounds", type=int, default=3,
                        help="interleaved timing rounds per code version")
    parser.add_argument("--links-every", type=int, default=1, metavar="N",
                        help="walk to the tests of every N-th definition only (callers: all)")
    args = parser.parse_args(argv)
    sources = dict(s.split("=", 1) for s in args.source)
    codes = {name: (ROOT if name == "." else baseline_source(name)) for name in args.code}
    failed = False
    for project in [p for p in PROJECTS if not args.project or p.name in args.project]:
        _repo, db = prepare(project, sources, next(iter(codes.values())))
        failed |= not _check(project, db, codes, args.rounds, args.links_every)
    return 1 if failed else 0


def _check(project: Project, db: Path, codes: dict[str, Path], rounds: int,
           links_every: int) -> bool:
    out = CACHE_DIR / "out"
    out.mkdir(parents=True, exist_ok=True)
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in codes}
    for round_number in range(max(rounds, 1)):
        for i, (name, code) in enumerate(codes.items()):
            figures = run_worker(code, db, out / f"{project.name}-{i}.json",
                                 links_every if round_number == 0 else 0)
            runs[name].append(figures)
    first = next(iter(codes))
    equal = True
    print(f"{project.name}@{project.revision[:12]}: {runs[first][0]['definitions']} "
          f"definitions, {runs[first][0]['sites']} sites; load average "
          f"{' '.join(f'{v:.1f}' for v in os.getloadavg())}")
    for i, name in enumerate(codes):
        build = statistics.median(r["build_graph_cpu_s"] for r in runs[name])
        read = statistics.median(r["read_tables_cpu_s"] for r in runs[name])
        ratio = build / statistics.median(r["build_graph_cpu_s"] for r in runs[first])
        line = (f"  {name}: build_graph CPU {build:.2f} s ({ratio:.2f}x the reference), "
                f"read_tables CPU {read:.2f} s, median of {len(runs[name])}")
        if i:
            total, differing, shown = compare(out / f"{project.name}-0.json.answers.gz",
                                              out / f"{project.name}-{i}.json.answers.gz")
            same_bindings = runs[name][0]["bindings"] == runs[first][0]["bindings"]
            line += (f"; answers: {total - differing}/{total} definitions equal, type "
                     f"bindings {'equal' if same_bindings else 'DIFFER'}")
            equal &= differing == 0 and same_bindings
            line += "".join(f"\n    {s}" for s in shown)
        print(line, flush=True)
    return equal


if __name__ == "__main__":
    sys.exit(main())
