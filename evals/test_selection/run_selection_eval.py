"""Grade ``review``'s test selection and linked tests against what the tests execute.

For each case of ``cases.jsonl`` (real merged changes, mined by ``mine_cases.py``):

1. The oracle (``oracle.py``): the project's own suite runs at the case's base, in a
   throwaway virtualenv, under pytest-cov with per-test contexts; coverage.py says which
   tests executed the body of every function of the changed files.
2. A withheld head (as ``evals/review`` makes it): the base plus the change's source
   files only; its test edits are withheld.
3. ``pr-context review --no-embeddings`` on base..withheld head, three times: without
   coverage; with ``--coverage`` of the oracle's own run at the base; and, where the
   project has an older case, with the coverage of that older base, remapped
   (``--coverage-rev``), as a user's CI cache one merge behind would give it.
4. Per PR: the selection's recall of the test files that execute the changed functions
   (a file counts when every executing test of it is selected) and its size as a share of
   the suite; per changed symbol: precision@5 and recall@5 of its linked test files
   against the files that execute it. Baselines beside: naming convention, import
   closure, everything.

Writes ``OUT/results.json`` and, with ``--doc``, the report (docs/test-selection.md):

    python evals/test_selection/run_selection_eval.py --doc docs/test-selection.md

The pure metric functions come first; ``tests/test_selection_eval.py`` checks them.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

from functions import imported_modules, module_name
from oracle import build_oracle, load_projects

__all__ = ["covers", "file_recall", "import_closure", "node_recall", "precision_recall_at_k",
           "suite_share"]

K = 5
TARGETS = {"selection_recall": 0.98, "selection_share_max": 0.60,
           "linked_precision_at_5": 0.80, "linked_recall_at_5": 0.90,
           "coverage_selection_recall": 1.0}
_HERE = Path(__file__).resolve().parent
_MIRROR = Path("/work/.mirror")


def _load(name: str, path: Path) -> ModuleType:
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))  # it imports the modules beside it by name
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


review_eval = _load("run_review_eval", _HERE.parent / "review" / "run_review_eval.py")


# -- metrics (pure) -------------------------------------------------------------------------


def covers(target: str, node: str) -> bool:
    """Whether running ``target`` (a directory, a file, a class or a test id) runs ``node``."""
    if node == target:
        return True
    file = node.split("::", 1)[0]
    if "::" not in target:
        return file == target or file.startswith(target.rstrip("/") + "/")
    return node.startswith(target + "::") or node.startswith(target + "[")


def _covered(selection: Sequence[str], nodes: Iterable[str]) -> set[str]:
    files = {t for t in selection if "::" not in t}
    ids = [t for t in selection if "::" in t]
    found = set()
    for node in nodes:
        file = node.split("::", 1)[0]
        if any(covers(f, file) for f in files) or any(covers(t, node) for t in ids
                                                       if t.split("::", 1)[0] == file):
            found.add(node)
    return found


def node_recall(selection: Sequence[str], executing: set[str]) -> float | None:
    """Share of the executing tests the selection runs; None when none executes."""
    return len(_covered(selection, executing)) / len(executing) if executing else None


def file_recall(selection: Sequence[str], executing: set[str]) -> float | None:
    """Share of the executing test files the selection runs whole: a file counts when
    every executing test of it is selected."""
    if not executing:
        return None
    missed = {n.split("::", 1)[0] for n in executing - _covered(selection, executing)}
    files = {n.split("::", 1)[0] for n in executing}
    return (len(files) - len(missed & files)) / len(files)


def suite_share(selection: Sequence[str], suite: set[str]) -> tuple[float, float]:
    """(tests, test files) the selection runs, as shares of the suite."""
    if not suite:
        return 0.0, 0.0
    run = _covered(selection, suite)
    files = {n.split("::", 1)[0] for n in suite}
    run_files = {n.split("::", 1)[0] for n in run}
    return len(run) / len(suite), len(run_files) / len(files)


def precision_recall_at_k(ranked: Sequence[str], relevant: set[str],
                          k: int = K) -> tuple[float | None, float | None]:
    """Of the first ``k`` distinct paths: precision (None when nothing is listed) and
    recall against ``min(k, |relevant|)`` (None when nothing is relevant)."""
    top = list(dict.fromkeys(ranked))[:k]
    hits = len(set(top) & relevant)
    return (hits / len(top) if top else None,
            hits / min(k, len(relevant)) if relevant else None)


def import_closure(texts: Mapping[str, str], changed: Iterable[str],
                   tests: Iterable[str]) -> set[str]:
    """Test files importing a changed module, directly or through other modules."""
    modules = {module_name(p): p for p in texts}
    importers: dict[str, set[str]] = {}
    for path, text in texts.items():
        for imported in imported_modules(path, text):
            parts = imported.split(".")
            for i in range(1, len(parts) + 1):  # a.b.c runs a and a.b too
                target = modules.get(".".join(parts[:i]))
                if target is not None and target != path:
                    importers.setdefault(target, set()).add(path)
    seen, queue = set(changed), list(changed)
    while queue:
        for importer in importers.get(queue.pop(), ()):
            if importer not in seen:
                seen.add(importer)
                queue.append(importer)
    return seen & set(tests)


def naming_files(source_files: Iterable[str], tests: Iterable[str]) -> list[str]:
    """Naming-convention baseline: ``test_<module>.py`` / ``<module>_test.py``."""
    stems = {review_eval.module_stem(s) for s in source_files}
    names = {f"test_{s}.py" for s in stems} | {f"{s}_test.py" for s in stems}
    return sorted(t for t in tests if PurePosixPath(t).name in names)


# -- one case -------------------------------------------------------------------------------


@dataclass
class Run:
    """One selection's figures on one PR."""

    selection: list[str]
    run_everything: str | None
    file_recall: float | None
    node_recall: float | None
    share_tests: float
    share_files: float


@dataclass
class SymbolScore:
    symbol: str
    executing_files: int
    precision: dict[str, float | None]
    recall: dict[str, float | None]


@dataclass
class CaseResult:
    id: str
    repo: str
    suite: int
    executing_tests: int
    executing_files: int
    runs: dict[str, Run] = field(default_factory=dict)
    symbols: list[SymbolScore] = field(default_factory=list)
    unmatched_symbols: int = 0
    seconds: float = 0.0
    error: str | None = None


# review's analysis budget: a PR of hundreds of symbols on a loaded machine ran past the
# default minute and listed the rest untested; the grade is of the evidence, not the speed
REVIEW_BUDGET_S = 3600


def _review(clone: Path, base: str, head: str, db: Path, out: Path,
            extra: Sequence[str] = ()) -> dict[str, Any]:
    done = subprocess.run(["pr-context", "review", "--repo", str(clone), "--base", base,
                           "--head", head, "--db", str(db), "--out", str(out),
                           "--no-embeddings", "--json", "--quiet",
                           "--budget", str(REVIEW_BUDGET_S), *extra],
                          capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"pr-context review failed: {done.stderr.strip()[-500:]}")
    evidence: dict[str, Any] = json.loads((out / "evidence.json").read_text(encoding="utf-8"))
    return evidence


def _run(evidence: Mapping[str, Any], executing: set[str], suite: set[str]) -> Run:
    selection = list(evidence["test_selection"])
    tests, files = suite_share(selection, suite)
    return Run(selection, evidence.get("run_everything_reason"),
               file_recall(selection, executing), node_recall(selection, executing),
               tests, files)


def _baseline(selection: Sequence[str], executing: set[str], suite: set[str]) -> Run:
    tests, files = suite_share(selection, suite)
    return Run(list(selection), None, file_recall(selection, executing),
               node_recall(selection, executing), tests, files)


def _symbol_scores(evidence_by_mode: Mapping[str, Mapping[str, Any]],
                   oracle: Mapping[str, Any], naming: Sequence[str]
                   ) -> tuple[list[SymbolScore], int]:
    functions = oracle["functions"]
    scores, unmatched = [], 0
    by_mode = {mode: {(s["path"], s["qualified_name"]): s for s in e["changed_symbols"]}
               for mode, e in evidence_by_mode.items()}
    for sym in evidence_by_mode["plain"]["changed_symbols"]:
        if sym["kind"] not in ("function", "method") or sym["change"] == "added":
            continue
        path = sym.get("old_path") or sym["path"]
        name = sym.get("old_qualified_name") or sym["qualified_name"]
        prefix = module_name(path) + "."
        found = functions.get(f"{path}::{name[len(prefix):]}") if name.startswith(
            prefix) else None
        if found is None:
            unmatched += 1
            continue
        relevant = {t.split("::", 1)[0] for t in found["tests"]}
        if not relevant:
            continue
        precision, recall = {}, {}
        for mode, symbols in by_mode.items():
            items = sorted(symbols[sym["path"], sym["qualified_name"]]["tests"],
                           key=lambda t: t["rank"])
            precision[mode], recall[mode] = precision_recall_at_k(
                [t["path"] for t in items], relevant)
        precision["naming"], recall["naming"] = precision_recall_at_k(naming, relevant)
        scores.append(SymbolScore(name, len(relevant), precision, recall))
    return scores, unmatched


def evaluate_case(case: Mapping[str, Any], older: Mapping[str, Any] | None,
                  projects: Mapping[str, Any], sources: Mapping[str, str],
                  cache: Path, out: Path) -> CaseResult:
    started = time.perf_counter()
    source = sources[case["repo"]]
    oracle = build_oracle(case, projects[case["repo"]], source, cache)
    executing = {t for f in oracle["functions"].values() if f["changed"] for t in f["tests"]}
    suite = set(oracle["suite"])
    result = CaseResult(case["id"], case["repo"], len(suite), len(executing),
                        len({t.split("::", 1)[0] for t in executing}))
    clone = review_eval.scratch_clone(case["repo"], source, cache / "review")
    head = review_eval.withheld_head(clone, case)
    db = cache / "db" / (case["repo"].replace("/", "+") + ".duckdb")
    db.parent.mkdir(parents=True, exist_ok=True)
    coverage = str(cache / "oracle" / f"{case['id']}.coverage")
    modes: dict[str, list[str]] = {"plain": [],
                                   "coverage": ["--coverage", coverage,
                                                "--coverage-rev", case["base"]]}
    if older is not None:
        modes["older-coverage"] = ["--coverage", str(cache / "oracle" / f"{older['id']}.coverage"),
                                   "--coverage-rev", older["base"]]
    evidence = {mode: _review(clone, case["base"], head, db, out / case["id"] / mode, args)
                for mode, args in modes.items()}
    result.runs = {mode: _run(e, executing, suite) for mode, e in evidence.items()}
    files = review_eval.tree_files(clone, case["base"])
    tests = sorted({t.split("::", 1)[0] for t in suite})
    naming = naming_files(case["source_files"], tests)
    texts = review_eval.read_blobs(clone, case["base"], [f for f in files if f.endswith(".py")])
    result.runs["naming"] = _baseline(naming, executing, suite)
    result.runs["import-closure"] = _baseline(
        sorted(import_closure(texts, case["source_files"], tests)), executing, suite)
    result.runs["everything"] = _baseline(tests, executing, suite)
    result.symbols, result.unmatched_symbols = _symbol_scores(evidence, oracle, naming)
    result.seconds = time.perf_counter() - started
    return result


# -- report ---------------------------------------------------------------------------------


_SELECTIONS = ("plain", "coverage", "older-coverage", "naming", "import-closure", "everything")
_SELECTION_NAMES = {"plain": "pr-context", "coverage": "pr-context --coverage (base)",
                    "older-coverage": "pr-context --coverage (older commit, remapped)",
                    "naming": "naming convention", "import-closure": "import closure",
                    "everything": "everything"}
_LINKED = ("plain", "coverage", "naming")


def _fmt(value: float | None, n: int | None = None, percent: bool = False) -> str:
    text = "n/a" if value is None else (f"{value:.0%}" if percent else f"{value:.2f}")
    return text if n is None else f"{text} (n={n})"


def _slices(results: Sequence[CaseResult]) -> list[tuple[str, list[CaseResult]]]:
    ok = [r for r in results if r.error is None]
    repos = sorted({r.repo for r in ok})
    return [(repo, [r for r in ok if r.repo == repo]) for repo in repos] + [("**all**", ok)]


def selection_figures(results: Sequence[CaseResult], mode: str) -> dict[str, Any]:
    runs = [r.runs[mode] for r in results if mode in r.runs]
    recall, n = review_eval.mean(run.file_recall for run in runs)
    nodes, _ = review_eval.mean(run.node_recall for run in runs)
    share, m = review_eval.mean(run.share_tests for run in runs)
    files, _ = review_eval.mean(run.share_files for run in runs)
    everything = sum(1 for run in runs if run.run_everything)
    return {"recall": recall, "n": n, "node_recall": nodes, "share": share, "prs": m,
            "share_files": files, "everything": everything}


def linked_figures(results: Sequence[CaseResult], mode: str) -> dict[str, Any]:
    symbols = [s for r in results for s in r.symbols]
    precision, n_p = review_eval.mean(s.precision.get(mode) for s in symbols)
    recall, n_r = review_eval.mean(s.recall.get(mode) for s in symbols)
    # one PR with hundreds of changed symbols would outweigh all others: per PR too
    per_pr_p, _ = review_eval.mean(review_eval.mean(s.precision.get(mode) for s in r.symbols)[0]
                                   for r in results)
    per_pr_r, n_prs = review_eval.mean(review_eval.mean(s.recall.get(mode)
                                                        for s in r.symbols)[0]
                                       for r in results)
    return {"precision": precision, "n_precision": n_p, "recall": recall, "n_recall": n_r,
            "unlisted": sum(1 for s in symbols if s.precision.get(mode) is None),
            "pr_precision": per_pr_p, "pr_recall": per_pr_r, "prs": n_prs}


def _selection_rows(results: Sequence[CaseResult]) -> list[str]:
    lines = ["| repository | selection | file recall | test recall | share of tests "
             "| share of files | run everything |", "|---|---|---|---|---|---|---|"]
    for name, rows in _slices(results):
        for mode in _SELECTIONS:
            f = selection_figures(rows, mode)
            if not f["prs"]:
                continue
            lines.append(f"| {name} | {_SELECTION_NAMES[mode]} | {_fmt(f['recall'], f['n'])} "
                         f"| {_fmt(f['node_recall'])} | {_fmt(f['share'], percent=True)} "
                         f"| {_fmt(f['share_files'], percent=True)} "
                         f"| {f['everything']} of {f['prs']} |")
    return lines


def _linked_rows(results: Sequence[CaseResult]) -> list[str]:
    lines = ["| repository | linked tests from | symbols | precision@5 | recall@5 "
             "| symbols with none listed | per PR: precision@5 | per PR: recall@5 |",
             "|---|---|---|---|---|---|---|---|"]
    for name, rows in _slices(results):
        for mode in _LINKED:
            f = linked_figures(rows, mode)
            lines.append(f"| {name} | {_SELECTION_NAMES[mode]} | {f['n_recall']} "
                         f"| {_fmt(f['precision'], f['n_precision'])} "
                         f"| {_fmt(f['recall'])} | {f['unlisted']} "
                         f"| {_fmt(f['pr_precision'], f['prs'])} | {_fmt(f['pr_recall'])} |")
    return lines


def _verdict(value: float | None, target: float, at_least: bool = True) -> str:
    if value is None:
        return "not measured"
    return "met" if (value >= target if at_least else value <= target) else "**not met**"


def _target_rows(results: Sequence[CaseResult]) -> list[str]:
    ok = [r for r in results if r.error is None]
    plain, cov = selection_figures(ok, "plain"), selection_figures(ok, "coverage")
    linked = linked_figures(ok, "plain")
    rows = [
        ("selection recall of executing test files ≥ 0.98", plain["recall"],
         TARGETS["selection_recall"], True, plain["n"], "0.73"),
        ("selection ≤ 60 % of the suite's tests on average", plain["share"],
         TARGETS["selection_share_max"], False, plain["prs"], "0.43"),
        ("linked tests precision@5 ≥ 0.80", linked["precision"],
         TARGETS["linked_precision_at_5"], True, linked["n_precision"], "0.58"),
        ("linked tests recall@5 ≥ 0.90", linked["recall"], TARGETS["linked_recall_at_5"],
         True, linked["n_recall"], "not measured"),
        ("with --coverage: selection recall 1.0", cov["recall"],
         TARGETS["coverage_selection_recall"], True, cov["n"], "no --coverage"),
    ]
    return [_STARTING_POINT, "", "| target | starting point | measured | verdict |",
            "|---|---|---|---|"] + [
        f"| {text} | {start} | {_fmt(value, n)} | {_verdict(value, target, at_least)} |"
        for text, value, target, at_least, n, start in rows]


_STARTING_POINT = """\
The starting point is issue 19's first measurement, by the same method, of the code
before this work on another sample (4 merged PRs of one library, 9 symbols, held back
from the project): not the same cases, so a direction, not a paired comparison."""


def results_from_json(path: Path) -> list[CaseResult]:
    """The results a run wrote (``OUT/results.json``), to render the report again."""
    found = []
    for raw in json.loads(path.read_text(encoding="utf-8")):
        runs = {mode: Run(**run) for mode, run in raw.pop("runs").items()}
        symbols = [SymbolScore(**s) for s in raw.pop("symbols")]
        found.append(CaseResult(**raw, runs=runs, symbols=symbols))
    return found


def _everything_rows(results: Sequence[CaseResult]) -> list[str]:
    found = [(r.id, r.runs["plain"].run_everything) for r in results
             if r.error is None and r.runs["plain"].run_everything]
    return [f"- `{case}`: {reason}" for case, reason in found] or ["- none"]


def _case_rows(results: Sequence[CaseResult]) -> list[str]:
    lines = ["| case | suite | executing tests (files) | file recall | share | with coverage "
             "| symbols P@5 / R@5 | seconds |", "|---|---|---|---|---|---|---|---|"]
    for r in results:
        if r.error:
            lines.append(f"| `{r.id}` | failed: {r.error[:80]} | | | | | | |")
            continue
        plain, cov = r.runs["plain"], r.runs["coverage"]
        p, _ = review_eval.mean(s.precision["plain"] for s in r.symbols)
        rc, _ = review_eval.mean(s.recall["plain"] for s in r.symbols)
        lines.append(f"| `{r.id}` | {r.suite} | {r.executing_tests} ({r.executing_files}) "
                     f"| {_fmt(plain.file_recall)} | {_fmt(plain.share_tests, percent=True)}"
                     f"{' (everything)' if plain.run_everything else ''} "
                     f"| {_fmt(cov.file_recall)} / {_fmt(cov.share_tests, percent=True)} "
                     f"| {_fmt(p)} / {_fmt(rc)} ({len(r.symbols)}) | {r.seconds:.0f} |")
    return lines


def render_report(results: Sequence[CaseResult], command: str) -> str:
    ok = [r for r in results if r.error is None]
    projects = sorted({r.repo for r in ok})
    lines = [_HEADER.format(command=command, cases=len(results), projects=len(projects),
                            names=", ".join(projects)),
             "## Test selection (CI)", "", _SELECTION_TEXT, "", *_selection_rows(results), "",
             "PRs that ran everything, and why:", "", *_everything_rows(results), "",
             "## Linked tests per symbol (reviewer)", "", _LINKED_TEXT, "",
             *_linked_rows(results), "", "## Targets", "", *_target_rows(results), "",
             _BLIND_SPOTS, "", "## Per case", "", *_case_rows(results)]
    return "\n".join(lines) + "\n"


_HEADER = """\
# Test selection and linked tests, graded by what the tests execute

Written by `evals/test_selection/run_selection_eval.py`; do not edit by hand. Method:
[evals/test_selection/README.md](../evals/test_selection/README.md).

{cases} real merged changes of {projects} projects ({names}); labels in
`evals/test_selection/cases.jsonl` (SHAs and paths only). The oracle: each project's own
test suite, run at the change's base in a throwaway virtualenv under pytest-cov with
per-test contexts; a test *executes* a changed function when coverage.py saw it run a
line of the function's body. `pr-context review --no-embeddings --budget 3600` runs on the
base and a head holding only the change's source files (its test edits withheld).

Two outputs, two rules ([cli.md](cli.md#pr-context-review)): the **linked tests** of a
symbol are a reviewer's short list, ranked for precision (coverage, then call paths, then
structure and statistics only where no call path exists); the **test selection** is what
CI runs instead of the suite, chosen for safety (every call path, the import closure
where the graph cannot see in, and everything for ubiquitous changes).

Reproduce (clones, virtualenvs, coverage data and indexes under
`evals/.cache/test_selection/`; each project's suite runs once per case, minutes each):

```sh
{command}
```
"""

_SELECTION_TEXT = """\
Per PR: *file recall* is the share of the test files executing a changed function that
the selection runs (a file counts only when every executing test of it is selected);
*test recall* the same per test; *share* the tests (and test files) it runs of the suite.
Recall is a mean over PRs where some test executes the changed code (n), share over all
PRs. The baselines select by file: test files named after a changed module; test files
importing a changed module, directly or not; everything."""

_LINKED_TEXT = """\
Per changed function or method that some test executes: of its first 5 linked test
files, the share that execute it (precision@5; a symbol with nothing listed has none,
counted apart), and the share of min(5, executing files) they hold (recall@5). Means
over symbols (the targets), and, since one PR can change hundreds of symbols, over PRs
(each PR's mean over its symbols)."""

_BLIND_SPOTS = """\
## What the oracle cannot see

- **Import-time code.** Modules are imported while pytest collects, outside any test's
  context: a change to module-level code, a decorator or a class body executes in no
  test by this measure, so only functions and methods are graded.
- **Subprocesses.** Code a test runs in a child process is not measured (no
  `coverage` subprocess hook is installed): such tests look like they execute nothing.
- **Shared fixtures.** A session- or module-scoped fixture runs once, recorded under the
  first test that needed it; the other tests using its result do not count as executing
  what it ran.
- **Flaky paths.** One run per base: code a test reaches only sometimes (random data,
  timing) may be missed. Property tests run with a fixed seed where the project has them.
- **Deselected tests.** Tests a project's settings skip here (a marker for tests that
  start servers) are not in the suite."""


def _load_cases(path: Path, only: Sequence[str]) -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    return [c for c in cases if not only or c["id"] in only]


def _older(cases: Sequence[Mapping[str, Any]], case: Mapping[str, Any]
           ) -> Mapping[str, Any] | None:
    """The next case of the same project in file order: mined newest first, so older."""
    later = cases[cases.index(case) + 1:]
    return next((c for c in later if c["repo"] == case["repo"]), None)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=_HERE / "cases.jsonl")
    parser.add_argument("--projects", type=Path, default=_HERE / "projects.json")
    parser.add_argument("--source", action="append", default=[],
                        help="OWNER/NAME=PATH_OR_URL to clone a repository from (default: "
                             "/work/.mirror/OWNER+NAME/repo when present, else GitHub)")
    parser.add_argument("--cache", type=Path, default=Path("evals/.cache/test_selection"))
    parser.add_argument("--out", type=Path, default=Path("evals/out/test_selection"))
    parser.add_argument("--doc", type=Path, default=None)
    parser.add_argument("--case", action="append", default=[], help="only this case id")
    parser.add_argument("--results", type=Path, default=None,
                        help="render the report from a run's results.json; run nothing")
    args = parser.parse_args(argv)
    if args.results is not None:
        report = render_report(results_from_json(args.results), _command(args.doc))
        if args.doc:
            args.doc.write_text(report, encoding="utf-8")
        print(report)
        return 0
    cases = _load_cases(args.cases, [])
    projects = load_projects(args.projects)
    sources = {repo: _source(repo, dict(s.split("=", 1) for s in args.source))
               for repo in projects}
    results = []
    for case in cases:
        if args.case and case["id"] not in args.case:
            continue
        try:
            result = evaluate_case(case, _older(cases, case), projects, sources,
                                   args.cache.resolve(), args.out.resolve())
        except (RuntimeError, subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
            result = CaseResult(case["id"], case["repo"], 0, 0, 0, error=str(exc)[-300:])
        results.append(result)
        plain = result.runs.get("plain")
        print(f"{result.id}: {result.executing_files} executing files; recall "
              f"{plain and plain.file_recall} share {plain and round(plain.share_tests, 2)} "
              f"{result.seconds:.0f}s {result.error or ''}", file=sys.stderr)
    report = render_report(results, _command(args.doc))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps([asdict(r) for r in results], indent=1)
                                           + "\n", encoding="utf-8")
    if args.doc:
        args.doc.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _command(doc: Path | None) -> str:
    return "python evals/test_selection/run_selection_eval.py" + (f" --doc {doc}" if doc else "")


def _source(repo: str, given: Mapping[str, str]) -> str:
    mirror = _MIRROR / repo.replace("/", "+") / "repo"
    return given.get(repo) or (str(mirror) if mirror.is_dir() else
                               f"https://github.com/{repo}.git")


if __name__ == "__main__":
    sys.exit(main())
