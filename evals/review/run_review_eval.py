"""Evaluate ``pr-context review`` on real changes of public projects, tests and docs withheld.

For each case of ``cases.jsonl`` (mined by ``mine_cases.py``): a scratch clone gets a new
commit on top of the case's base holding only the real change's source files (tests and
docs stay at base); ``pr-context review --no-embeddings`` runs on base..withheld; the
evidence is scored against the test and doc files the real change touched, beside two
baselines computed in the same run (naming convention for tests, grep for docs and
callers), and Python callers are compared with jedi's ``get_references`` at the withheld
head. Writes ``OUT/results.json`` and the Markdown report (``--doc``). Usage:

    python evals/review/run_review_eval.py --source pytest-dev/pluggy=/path/to/clone \\
        [--source ...] --doc docs/review-evaluation.md

A repository without ``--source`` is cloned from https://github.com/OWNER/NAME.
The pure metric functions come first; ``tests/test_review_eval.py`` checks them.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from caller_sample import ChangedFunction, changed_functions, miss_kind, touched_lines

__all__ = [
    "Ranked",
    "doc_paths_per_symbol",
    "grep_doc_ranking",
    "mean",
    "naming_tests",
    "precision_recall",
    "recall_at_k",
    "top_docs_union",
    "union_by_best_rank",
]

TEST_K = 5  # linked tests: recall@5 of the test files the real change touched
DOC_K = 3  # stale docs: top 3 doc paths per changed symbol
TARGETS = {"tests_recall_at_5": 0.85, "docs_recall_at_3": 0.70, "docs_per_symbol_max": 3.0,
           "callers_recall": 0.95, "callers_precision": 0.90}
JEDI_SYMBOLS_PER_CASE = 4  # changed functions sampled per case for the callers check
# Withheld heads are committed with a fixed identity and date so their SHAs are stable.
_COMMIT_ENV = {"GIT_AUTHOR_NAME": "pr-context-evals", "GIT_AUTHOR_EMAIL": "evals@invalid",
               "GIT_COMMITTER_NAME": "pr-context-evals",
               "GIT_COMMITTER_EMAIL": "evals@invalid",
               "GIT_AUTHOR_DATE": "2000-01-01T00:00:00+0000",
               "GIT_COMMITTER_DATE": "2000-01-01T00:00:00+0000"}
_DOC_SUFFIXES = (".rst", ".md", ".txt")
_CHANGELOG = re.compile(r"^(changes|changelog|history|news)\b", re.IGNORECASE)
_IMPORT_LINE = re.compile(r"^\s*(from\s+\S+\s+)?import\s")


# -- metrics (pure) -------------------------------------------------------------------------


@dataclass(frozen=True)
class Ranked:
    """A path with its sort key: lower is better; equal keys are ties."""

    path: str
    key: tuple[float, ...]


def recall_at_k(ranked: Sequence[Ranked], relevant: Iterable[str], k: int) -> float | None:
    """Expected fraction of ``relevant`` within the first ``k``, ties broken at random.

    A tie group straddling position ``k`` contributes, for each relevant member, the
    share of the group's places that fall within ``k``. None when nothing is relevant.
    """
    wanted = set(relevant)
    if not wanted:
        return None
    ordered = sorted(ranked, key=lambda r: r.key)
    found, position = 0.0, 0
    for _, group in _tie_groups(ordered):
        places = max(0, min(k - position, len(group)))
        found += places / len(group) * sum(1 for r in group if r.path in wanted)
        position += len(group)
    return found / len(wanted)


def _tie_groups(ordered: Sequence[Ranked]) -> Iterator[tuple[tuple[float, ...], list[Ranked]]]:
    group: list[Ranked] = []
    for item in ordered:
        if group and item.key != group[0].key:
            yield group[0].key, group
            group = []
        group.append(item)
    if group:
        yield group[0].key, group


def union_by_best_rank(per_symbol: Iterable[Sequence[Mapping[str, Any]]]) -> list[Ranked]:
    """Evidence of every symbol merged by path: its best rank, then its best score."""
    best: dict[str, tuple[float, float]] = {}
    for items in per_symbol:
        for item in items:
            key = (float(item["rank"]), -float(item["score"]))
            best[item["path"]] = min(best.get(item["path"], key), key)
    return [Ranked(p, k) for p, k in best.items()]


def doc_paths_per_symbol(items: Sequence[Mapping[str, Any]]) -> list[str]:
    """Distinct doc paths of one symbol's evidence, in rank order."""
    return list(dict.fromkeys(i["path"] for i in sorted(items, key=lambda i: i["rank"])))


def top_docs_union(per_symbol: Iterable[Sequence[str]], k: int) -> set[str]:
    """The union over symbols of each symbol's first ``k`` doc paths."""
    return {p for paths in per_symbol for p in paths[:k]}


def set_recall(found: set[str], relevant: Iterable[str]) -> float | None:
    wanted = set(relevant)
    return len(found & wanted) / len(wanted) if wanted else None


def precision_recall(predicted: set[Any], truth: set[Any]) -> tuple[float | None, float | None]:
    """(precision, recall); None where the denominator is empty."""
    hit = len(predicted & truth)
    return (hit / len(predicted) if predicted else None,
            hit / len(truth) if truth else None)


def mean(values: Iterable[float | None]) -> tuple[float | None, int]:
    """Mean of the values that are not None, and how many there were."""
    kept = [v for v in values if v is not None]
    return (sum(kept) / len(kept) if kept else None), len(kept)


def module_stem(path: str) -> str:
    """``src/pkg/_hooks.py`` -> ``hooks``; a package ``__init__`` -> the package name."""
    pure = PurePosixPath(path)
    stem = pure.parent.name if pure.stem == "__init__" else pure.stem
    return stem.lstrip("_")


def naming_tests(source_files: Iterable[str], files: Iterable[str]) -> list[Ranked]:
    """Naming-convention baseline: test_<module>.py or <module>_test.py under tests/ or
    testing/, all tied (the convention gives no order)."""
    stems = {module_stem(s) for s in source_files}
    names = {f"test_{s}.py" for s in stems} | {f"{s}_test.py" for s in stems}
    return [Ranked(f, (0.0,)) for f in files
            if PurePosixPath(f).parts[0] in {"tests", "testing"}
            and PurePosixPath(f).name in names]


def is_doc(path: str) -> bool:
    """A documentation page the labels can name (changelogs are never labels)."""
    pure = PurePosixPath(path)
    return (pure.suffix.lower() in _DOC_SUFFIXES and not _CHANGELOG.match(pure.name)
            and "changelog" not in {p.lower() for p in pure.parts[:-1]}
            and (pure.parts[0] in {"docs", "doc"} or pure.name.upper().startswith("README")))


def grep_doc_ranking(name: str, doc_texts: Mapping[str, str]) -> list[Ranked]:
    """Grep baseline: doc files mentioning ``name`` as a word, most mentions first."""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    counts = {p: len(pattern.findall(t)) for p, t in doc_texts.items()}
    return [Ranked(p, (-float(c),)) for p, c in counts.items() if c]


def top_k_paths(ranked: Sequence[Ranked], k: int) -> list[str]:
    """The first ``k`` paths, ties kept in path order (a deterministic baseline list)."""
    return [r.path for r in sorted(ranked, key=lambda r: (r.key, r.path))[:k]]


def search_name(qualified_name: str) -> str:
    """The name a grep looks for: the last component, or the class for ``__init__``."""
    parts = qualified_name.split(".")
    return parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]


# -- git and the withheld head --------------------------------------------------------------


def _git(repo: Path, *args: str, env: Mapping[str, str] | None = None) -> str:
    return subprocess.run(["git", "--git-dir", str(repo), *args], check=True,
                          capture_output=True, text=True,
                          env={**os.environ, **(env or {})}).stdout


def scratch_clone(repo: str, source: str | None, cache: Path) -> Path:
    """A bare clone of ``repo`` under ``cache`` (made once, from ``source`` or GitHub)."""
    target = cache / "repos" / (repo.replace("/", "+") + ".git")
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        url = source or f"https://github.com/{repo}.git"
        subprocess.run(["git", "clone", "--bare", "--quiet", url, str(target)], check=True)
    return target


def withheld_head(clone: Path, case: Mapping[str, Any]) -> str:
    """Commit base + the real head's source files only; tests and docs stay at base."""
    with tempfile.TemporaryDirectory() as tmp:
        env = {**_COMMIT_ENV, "GIT_INDEX_FILE": str(Path(tmp) / "index")}
        _git(clone, "read-tree", case["base"], env=env)
        for path in case["source_files"]:
            entry = _git(clone, "ls-tree", case["head"], "--", path).split()
            if entry:
                _git(clone, "update-index", "--add", "--cacheinfo",
                     f"{entry[0]},{entry[2]},{path}", env=env)
            else:
                _git(clone, "update-index", "--force-remove", path, env=env)
        tree = _git(clone, "write-tree", env=env).strip()
        return _git(clone, "commit-tree", tree, "-p", case["base"], "-m",
                    f"withheld head of {case['head']}", env=env).strip()


def run_review(clone: Path, base: str, head: str, db: Path, out: Path,
               embeddings: bool = False, backend: str = "torch") -> dict[str, Any]:
    """``pr-context review`` through its CLI (this interpreter's, so an unactivated
    virtual environment works); returns evidence.json."""
    model = ["--embedding-backend", backend] if embeddings else ["--no-embeddings"]
    subprocess.run([sys.executable, "-m", "pr_context", "review", "--repo", str(clone),
                    "--base", base, "--head", head, "--db", str(db), "--out", str(out),
                    *model, "--json", "--quiet"],
                   check=True, capture_output=True, text=True)
    evidence: dict[str, Any] = json.loads((out / "evidence.json").read_text(encoding="utf-8"))
    return evidence


def tree_files(clone: Path, rev: str) -> list[str]:
    return _git(clone, "ls-tree", "-r", "--name-only", rev).splitlines()


def read_blobs(clone: Path, rev: str, paths: Iterable[str]) -> dict[str, str]:
    return {p: _git(clone, "show", f"{rev}:{p}") for p in paths}


def export_tree(clone: Path, rev: str, target: Path) -> None:
    """Write ``rev``'s files into ``target`` for jedi (which reads a directory)."""
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    archive = subprocess.run(["git", "--git-dir", str(clone), "archive", rev],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)


# -- callers against jedi -------------------------------------------------------------------


@dataclass
class CallerCheck:
    """One changed function's call sites: jedi's, pr-context's by signal, grep's."""

    case: str
    symbol: str
    jedi: set[tuple[str, int]]
    graph: set[tuple[str, int]]
    lexical: set[tuple[str, int]]
    grep: set[tuple[str, int]]
    reported: bool = True  # pr-context listed the function as changed
    nested: tuple[str, ...] = ()  # the change was inside these nested functions
    is_property: bool = False
    missed: dict[str, str] = field(default_factory=dict)  # "path:line" -> failure kind
    # "path:line" -> what jedi says of a graph site its reference search did not list
    extra: dict[str, str] = field(default_factory=dict)


def jedi_project(tree: Path) -> Any:
    """A jedi project that resolves the package from the tree, never from site-packages.

    The evaluating virtualenv may hold another release of the same package (pytest
    brings pluggy and packaging): jedi would resolve the tests' imports there and find no
    reference to the tree's definition. So the search path is the tree's ``src/``, the
    tree, and the standard library only.
    """
    import jedi

    paths = sysconfig.get_paths()
    stdlib = [paths["stdlib"], str(Path(paths["platstdlib"]) / "lib-dynload")]
    root = tree.resolve()
    return jedi.Project(str(root), sys_path=[str(root / "src"), str(root), *stdlib],
                        smart_sys_path=False)


def jedi_references(tree: Path, path: str, line: int, column: int) -> set[tuple[str, int]]:
    """(path, line) of every reference jedi finds in the project, minus definitions and
    import statements (an import names a function; it does not call it)."""
    import jedi  # the callers check is optional: only it needs jedi

    script = jedi.Script(path=str(tree / path), project=jedi_project(tree))
    found = set()
    for ref in script.get_references(line, column, include_builtins=False):
        if ref.is_definition() or ref.module_path is None:
            continue
        rel = Path(ref.module_path).resolve().relative_to(tree.resolve()).as_posix()
        text = (tree / rel).read_text(encoding="utf-8").splitlines()[ref.line - 1]
        if not _IMPORT_LINE.match(text):
            found.add((rel, ref.line))
    return found


def jedi_confirms(tree: Path, site: tuple[str, int], name: str,
                  definition: tuple[str, int]) -> bool:
    """Whether jedi, asked at ``site`` itself in a fresh Script (its own inference state),
    goes from an occurrence of ``name`` on that line to the definition at ``definition``.

    One reference search shares one inference state over the whole tree, and in it
    jedi's pytest plugin (0.19, 0.20) finds fixtures for one parameter per test module:
    the modules it searches come from a generator that an inference-state cache keeps,
    exhausted, for the next parameter. A later test's fixture gets no value and its
    calls are not listed (``tests/test_review_eval.py`` reproduces it); asked afresh,
    jedi resolves them.
    """
    import jedi

    path, line = site
    text = (tree / path).read_text(encoding="utf-8").splitlines()[line - 1]
    root = tree.resolve()
    for match in re.finditer(rf"\b{re.escape(name)}\b", text):
        script = jedi.Script(path=str(tree / path), project=jedi_project(tree))
        for found in script.goto(line, match.start(), follow_imports=True):
            if found.module_path is not None and found.line == definition[1] and Path(
                    found.module_path).resolve().relative_to(root).as_posix() == definition[0]:
                return True
    return False


def grep_callers(texts: Mapping[str, str], name: str,
                 definition: tuple[str, int]) -> set[tuple[str, int]]:
    """Grep baseline: lines of Python files naming ``name`` as a word, but not imports and
    not the definition's own line."""
    pattern = re.compile(rf"\b{re.escape(name)}\b")
    return {(p, n) for p, t in texts.items() for n, line in enumerate(t.splitlines(), 1)
            if pattern.search(line) and not _IMPORT_LINE.match(line)
            and (p, n) != definition}


def check_callers(case_id: str, evidence: Mapping[str, Any], tree: Path,
                  py_texts: Mapping[str, str], sampled: Sequence[ChangedFunction]
                  ) -> list[CallerCheck]:
    """Compare the callers pr-context gives each sampled function with jedi's references.

    A function pr-context did not report has no callers from it: all of jedi's count as
    missed. Each site the graph missed gets its kind (:func:`caller_sample.miss_kind`);
    each graph site jedi did not list, whether jedi resolves it asked at the site
    (:func:`jedi_confirms`).
    """
    _fresh_jedi_caches()
    checks = []
    trees: dict[str, ast.Module | None] = {}
    for function in sampled:
        symbol = _reported(evidence, function)
        if symbol is not None and not symbol.get("analysed", True):
            continue  # the review's time budget ran out before it: nothing to compare
        by_how: dict[str, set[tuple[str, int]]] = {"graph": set(), "lexical": set()}
        for item in (symbol or {}).get("callers", ()):
            for how in item["signals"]:
                by_how.setdefault(how, set()).add((item["path"], item["line"]))
        name = function.local_name.rpartition(".")[2]
        jedi = jedi_references(tree, function.path, function.line, function.column)
        check = CallerCheck(
            case_id, (symbol or {}).get("qualified_name", function.local_name), jedi,
            by_how["graph"], by_how["lexical"],
            grep_callers(py_texts, name, (function.path, function.line)),
            reported=symbol is not None, nested=function.nested,
            is_property=function.is_property)
        check.missed = {f"{p}:{n}": _failure_kind(check, _parsed(trees, py_texts, p), n,
                                                  name)
                        for p, n in sorted(jedi - check.graph)}
        check.extra = {f"{p}:{n}": _extra_kind(tree, (p, n), name, function)
                       for p, n in sorted(check.graph - jedi)}
        checks.append(check)
    return checks


def _extra_kind(tree: Path, site: tuple[str, int], name: str,
                function: ChangedFunction) -> str:
    confirmed = jedi_confirms(tree, site, name, (function.path, function.line))
    return "jedi at the site" if confirmed else "unconfirmed"


def _fresh_jedi_caches() -> None:
    """Forget earlier cases' trees, keep parso from evicting this case's files, and let
    jedi search the whole tree for references.

    Past 600 cached files parso drops the ones unused for ten minutes, which jedi may
    still hold (a KeyError deep in an inference on a large project); the trees of
    earlier cases are deleted anyway. Jedi's reference search stops after parsing 30
    files that mention the name (or opening 2,000): on a project the size of sphinx its
    references would be a sample, and pr-context's callers in the other files would
    count as wrong. Neither limit has a public setting.
    """
    import jedi.inference.references
    import parso.cache

    parso.cache.parser_cache.clear()
    parso.cache._CACHED_SIZE_TRIGGER = 10**9
    jedi.inference.references._PARSED_FILE_LIMIT = 10**9
    jedi.inference.references._OPENED_FILE_LIMIT = 10**9


def _reported(evidence: Mapping[str, Any], function: ChangedFunction
              ) -> Mapping[str, Any] | None:
    """pr-context's changed symbol for ``function`` (same path and file-relative name)."""
    matches = [s for s in evidence["changed_symbols"]
               if s["path"] == function.path and s["kind"] in {"function", "method"}
               and s["change"] != "removed"
               and ("." + s["qualified_name"]).endswith("." + function.local_name)]
    return min(matches, key=lambda s: abs(s["start_line"] - function.start), default=None)


def _failure_kind(check: CallerCheck, tree: ast.Module | None, line: int,
                  name: str) -> str:
    if not check.reported:
        return "nested function" if check.nested else "function not reported"
    return miss_kind(tree, line, name)


def _parsed(trees: dict[str, ast.Module | None], texts: Mapping[str, str],
            path: str) -> ast.Module | None:
    """``path``'s syntax tree, parsed on first use (None: not Python that parses)."""
    if path not in trees:
        try:
            trees[path] = ast.parse(texts[path])
        except (KeyError, SyntaxError, ValueError):
            trees[path] = None
    return trees[path]


def _blob_or_none(clone: Path, rev: str, path: str) -> str | None:
    done = subprocess.run(["git", "--git-dir", str(clone), "show", f"{rev}:{path}"],
                          capture_output=True, text=True, check=False)
    return done.stdout if done.returncode == 0 else None


def sampled_functions(clone: Path, case: Mapping[str, Any], head: str,
                      py_texts: Mapping[str, str]) -> list[ChangedFunction]:
    """Up to JEDI_SYMBOLS_PER_CASE functions the case's diff changed (by the diff, not by
    pr-context), dunders left out (jedi does not resolve ``Class(...)`` or operators to
    them), the first ones in path and line order."""
    sources = [p for p in case["source_files"] if p.endswith(".py") and p in py_texts]
    if not sources:
        return []
    patch = _git(clone, "diff", "-U0", "--no-renames", case["base"], head, "--", *sources)
    touched = touched_lines(patch)
    found = []
    for path in sorted(sources):
        added, removed = touched.get(path, (set(), set()))
        base = _blob_or_none(clone, case["base"], path)
        found += [f for f in changed_functions(path, py_texts[path], added, base, removed)
                  if not f.local_name.rpartition(".")[2].startswith("__")]
    return found[:JEDI_SYMBOLS_PER_CASE]


# -- one case -------------------------------------------------------------------------------


@dataclass
class CaseResult:
    id: str
    repo: str
    symbols: int
    tests: dict[str, float | None] = field(default_factory=dict)
    docs: dict[str, float | None] = field(default_factory=dict)
    docs_listed: list[int] = field(default_factory=list)  # doc paths per changed symbol
    baseline_docs_listed: list[int] = field(default_factory=list)
    tests_listed: list[int] = field(default_factory=list)  # test files per changed symbol
    tests_edited: list[int] = field(default_factory=list)  # of those, ones the change edited
    seconds: float = 0.0
    error: str | None = None


def evaluate_case(case: Mapping[str, Any], clone: Path, cache: Path, out: Path,
                  with_jedi: bool, embeddings: bool = False, backend: str = "torch"
                  ) -> tuple[CaseResult, list[CallerCheck]]:
    started = time.perf_counter()
    head = withheld_head(clone, case)
    suffix = ("-model" + ("" if backend == "torch" else f"-{backend}")) if embeddings else ""
    db = cache / "db" / (case["repo"].replace("/", "+") + suffix + ".duckdb")
    db.parent.mkdir(parents=True, exist_ok=True)
    evidence = run_review(clone, case["base"], head, db, out / case["id"], embeddings,
                          backend)
    symbols = evidence["changed_symbols"]
    result = CaseResult(case["id"], case["repo"], len(symbols))
    files = tree_files(clone, head)
    _score_tests(result, case, symbols, files)
    _score_docs(result, case, symbols, read_blobs(clone, head, filter(is_doc, files)))
    checks: list[CallerCheck] = []
    if with_jedi:
        py_texts = read_blobs(clone, head, [f for f in files if f.endswith(".py")])
        sampled = sampled_functions(clone, case, head, py_texts)
        if sampled:
            tree = cache / "trees" / case["id"]
            export_tree(clone, head, tree)
            checks = check_callers(case["id"], evidence, tree, py_texts, sampled)
            shutil.rmtree(tree, ignore_errors=True)
    result.seconds = time.perf_counter() - started
    return result, checks


def _score_tests(result: CaseResult, case: Mapping[str, Any],
                 symbols: Sequence[Mapping[str, Any]], files: Sequence[str]) -> None:
    ranked = union_by_best_rank(s["tests"] for s in symbols)
    touched = set(case["tests_touched"])
    result.tests_listed = [len(s["tests"]) for s in symbols]
    result.tests_edited = [sum(t["path"] in touched for t in s["tests"]) for s in symbols]
    result.tests = {
        "pr-context": recall_at_k(ranked, case["tests_touched"], TEST_K),
        "naming": recall_at_k(naming_tests(case["source_files"], files),
                              case["tests_touched"], TEST_K)}


def _score_docs(result: CaseResult, case: Mapping[str, Any],
                symbols: Sequence[Mapping[str, Any]], doc_texts: Mapping[str, str]) -> None:
    listed = [doc_paths_per_symbol(s["docs"]) for s in symbols]
    grepped = [top_k_paths(grep_doc_ranking(search_name(s["qualified_name"]), doc_texts),
                           DOC_K) for s in symbols]
    result.docs_listed = [len(p) for p in listed]
    result.baseline_docs_listed = [len(p) for p in grepped]
    result.docs = {
        "pr-context": set_recall(top_docs_union(listed, DOC_K), case["docs_touched"]),
        "grep": set_recall(top_docs_union(grepped, DOC_K), case["docs_touched"])}


# -- report ---------------------------------------------------------------------------------


def _fmt(value: float | None, n: int | None = None) -> str:
    text = "n/a" if value is None else f"{value:.2f}"
    return text if n is None else f"{text} (n={n})"


def _slices(results: Sequence[CaseResult]) -> list[tuple[str, list[CaseResult]]]:
    repos = sorted({r.repo for r in results})
    return [(repo, [r for r in results if r.repo == repo]) for repo in repos] + [
        ("**all**", list(results))]


def _metric_rows(results: Sequence[CaseResult]) -> Iterator[str]:
    yield ("| repository | cases | symbols | tests R@5 pr-context | tests R@5 naming "
           "| tests/symbol pr-context | tests listed that were edited "
           "| docs R@3 pr-context | docs R@3 grep | docs/symbol pr-context "
           "| docs/symbol grep |")
    yield "|---|---|---|---|---|---|---|---|---|---|---|"
    for name, rows in _slices(results):
        ok = [r for r in rows if r.error is None]
        cells = [name, str(len(ok)), str(sum(r.symbols for r in ok))]
        cells += [_fmt(*mean(r.tests[m] for r in ok)) for m in ("pr-context", "naming")]
        cells += [_fmt(*mean(float(n) for r in ok for n in r.tests_listed)),
                  _fmt(*_edited_share(ok))]
        cells += [_fmt(*mean(r.docs[m] for r in ok)) for m in ("pr-context", "grep")]
        cells += [_fmt(*mean(float(n) for r in ok for n in r.docs_listed)),
                  _fmt(*mean(float(n) for r in ok for n in r.baseline_docs_listed))]
        yield "| " + " | ".join(cells) + " |"


def _edited_share(results: Sequence[CaseResult]) -> tuple[float | None, int]:
    """Of the test files listed in cases that edited a test, the share the change edited
    (pooled over symbols; n = files listed)."""
    scored = [r for r in results if r.tests.get("pr-context") is not None]
    listed = sum(sum(r.tests_listed) for r in scored)
    edited = sum(sum(r.tests_edited) for r in scored)
    return (edited / listed if listed else None), listed


def caller_figures(checks: Sequence[CallerCheck]) -> dict[str, tuple[float | None, float | None]]:
    """Pooled (micro) precision and recall against jedi, per method of finding callers;
    ``graph, jedi at the site`` counts as jedi's the graph sites jedi itself resolves to
    the function when asked there (:func:`jedi_confirms`), which its reference search
    leaves out."""
    truth = {(c.case, c.symbol, *site) for c in checks for site in c.jedi}
    figures = {}
    for how in ("graph", "lexical", "graph+lexical", "grep"):
        predicted = {(c.case, c.symbol, *site) for c in checks
                     for site in _sites(c, how)}
        figures[how] = precision_recall(predicted, truth)
    confirmed = truth | {(c.case, c.symbol, *_site(key)) for c in checks
                         for key, kind in c.extra.items() if kind == "jedi at the site"}
    for how in ("graph", "graph+lexical"):
        predicted = {(c.case, c.symbol, *site) for c in checks for site in _sites(c, how)}
        figures[f"{how}{_CONFIRMED}"] = precision_recall(predicted, confirmed)
    return figures


# Figures against jedi's references and the graph sites jedi resolves when asked there.
_CONFIRMED = ", jedi at the site"


def _site(key: str) -> tuple[str, int]:
    """``path:line`` as (path, line)."""
    path, _, line = key.rpartition(":")
    return path, int(line)


def _sites(check: CallerCheck, how: str) -> set[tuple[str, int]]:
    if how == "graph+lexical":
        return check.graph | check.lexical
    return dict(graph=check.graph, lexical=check.lexical, grep=check.grep)[how]


_MODES = {
    False: "`pr-context review --no-embeddings` (lexical and graph evidence only, no model)",
    True: "`pr-context review` with the default embedding model (as the action runs it)",
}


def render_report(results: Sequence[CaseResult], checks: Sequence[CallerCheck] | None,
                  command: str, embeddings: bool = False) -> str:
    ok = [r for r in results if r.error is None]
    tests, n_tests = mean(r.tests["pr-context"] for r in ok)
    docs, n_docs = mean(r.docs["pr-context"] for r in ok)
    per_symbol, _ = mean(float(n) for r in ok for n in r.docs_listed)
    lines = [_HEADER.format(command=command, cases=len(results), mode=_MODES[embeddings]),
             *_metric_rows(results), ""]
    lines += ["## Callers against jedi", ""]
    repos = {r.id: r.repo for r in results}
    if checks is None:
        lines += ["Not measured in this run (`--no-jedi`).", ""]
        per_repo: dict[str, dict[str, tuple[float | None, float | None]]] = {}
    else:
        lines += _caller_lines(checks, repos)
        per_repo = {name: caller_figures(rows) for name, rows in _by_repo(checks, repos)}
    lines += _target_lines(tests, n_tests, docs, n_docs, per_symbol, per_repo)
    failed = [r for r in results if r.error]
    if failed:
        lines += ["", "## Cases that failed to run", ""]
        lines += [f"- `{r.id}`: {r.error}" for r in failed]
    lines += ["", "## Per case", "", "| case | symbols | tests R@5 (naming) "
              "| docs R@3 (grep) | seconds |", "|---|---|---|---|---|"]
    lines += [f"| `{r.id}` | {r.symbols} | {_fmt(r.tests.get('pr-context'))} "
              f"({_fmt(r.tests.get('naming'))}) | {_fmt(r.docs.get('pr-context'))} "
              f"({_fmt(r.docs.get('grep'))}) | {r.seconds:.1f} |" for r in results]
    return "\n".join(lines) + "\n"


def _target_lines(tests: float | None, n_tests: int, docs: float | None, n_docs: int,
                  per_symbol: float | None,
                  callers: Mapping[str, Mapping[str, tuple[float | None, float | None]]]
                  ) -> list[str]:
    verdict = _verdict
    return [
        "## Targets", "", "| target | measured | verdict |", "|---|---|---|",
        f"| linked tests recall@5 ≥ 0.85 | {_fmt(tests, n_tests)} "
        f"| {verdict(tests, TARGETS['tests_recall_at_5'])} |",
        f"| stale docs recall@3 ≥ 0.70 | {_fmt(docs, n_docs)} "
        f"| {verdict(docs, TARGETS['docs_recall_at_3'])} |",
        f"| ≤ 3 docs listed per changed symbol on average | {_fmt(per_symbol)} "
        f"| {verdict(per_symbol, TARGETS['docs_per_symbol_max'], at_least=False)} |",
    ] + [row for how in ("graph", "graph" + _CONFIRMED, "graph+lexical",
                         "graph+lexical" + _CONFIRMED)
         for row in _caller_target_rows(how, callers, verdict)]


def _verdict(value: float | None, target: float, at_least: bool = True) -> str:
    if value is None:
        return "not measured"
    return "met" if (value >= target if at_least else value <= target) else "**not met**"


def _caller_target_rows(how: str,
                        callers: Mapping[str, Mapping[str, tuple[float | None, float | None]]],
                        verdict: Any) -> list[str]:
    """A target row per figure: the pooled value and the lowest repository's; met when
    every repository meets it."""
    rows = []
    for index, (figure, target) in enumerate((("precision", "callers_precision"),
                                              ("recall", "callers_recall"))):
        pooled = callers.get("**all**", {}).get(how, (None, None))[index]
        values = sorted((figures[how][index], name) for name, figures in callers.items()
                        if name != "**all**" and figures[how][index] is not None)
        if not values:
            rows.append(f"| callers ({how}) vs jedi {figure} ≥ {TARGETS[target]:.2f} "
                        f"per repository | n/a | {verdict(None, TARGETS[target])} |")
            continue
        lowest, name = values[0]
        rows.append(f"| callers ({how}) vs jedi {figure} ≥ {TARGETS[target]:.2f} "
                    f"per repository | {_fmt(pooled)} (lowest {_fmt(lowest)}, {name}) "
                    f"| {_worst_verdict([verdict(v, TARGETS[target]) for v, _ in values])} |")
    return rows


def _worst_verdict(verdicts: Sequence[str]) -> str:
    return next((v for v in verdicts if v != "met"), "met")


def _by_repo(checks: Sequence[CallerCheck], repos: Mapping[str, str]
             ) -> list[tuple[str, list[CallerCheck]]]:
    names = sorted({repos.get(c.case, "?") for c in checks})
    return [(n, [c for c in checks if repos.get(c.case, "?") == n]) for n in names] + [
        ("**all**", list(checks))]


_FAILURE_KINDS = ("nested function", "function not reported", "return-type receiver",
                  "enum member", "module global", "parameter", "attribute", "bare name",
                  "other")


def _caller_lines(checks: Sequence[CallerCheck], repos: Mapping[str, str]) -> list[str]:
    """The callers section: figures per repository, then the graph's misses by kind."""
    sites = sum(len(c.jedi) for c in checks)
    lines = [f"{len(checks)} changed functions and methods sampled from the diffs (at most "
             f"{JEDI_SYMBOLS_PER_CASE} per case, dunders left out; a change inside a nested "
             "function counts for the outermost function around it) from "
             f"{len({c.case for c in checks})} cases; jedi found {sites} reference sites "
             "(definitions and import lines excluded). Sites are compared as (path, line), "
             "pooled over the symbols of each row. A function pr-context did not report "
             "has no callers from it.", "",
             "| repository | functions | jedi sites | graph P | graph R | graph P, jedi at "
             "the site | graph R, jedi at the site | graph+lexical P "
             "| graph+lexical R | lexical P | grep P | grep R |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, rows in _by_repo(checks, repos):
        f = caller_figures(rows)
        lines.append(
            f"| {name} | {len(rows)} | {sum(len(c.jedi) for c in rows)} "
            f"| {_fmt(f['graph'][0])} | {_fmt(f['graph'][1])} "
            f"| {_fmt(f['graph' + _CONFIRMED][0])} | {_fmt(f['graph' + _CONFIRMED][1])} "
            f"| {_fmt(f['graph+lexical'][0])} | {_fmt(f['graph+lexical'][1])} "
            f"| {_fmt(f['lexical'][0])} | {_fmt(f['grep'][0])} | {_fmt(f['grep'][1])} |")
    lines += ["", "Reference sites jedi found that the graph did not, by kind "
              "(`caller_sample.miss_kind`: what the site calls the function on; "
              "*nested function*: pr-context reported only a function nested in the "
              "sampled one; *function not reported*: it reported neither). The last "
              "column counts the missed sites that read a property.", "",
              "| repository | " + " | ".join(_FAILURE_KINDS) + " | of which property |",
              "|---|" + "---|" * (len(_FAILURE_KINDS) + 1)]
    for name, rows in _by_repo(checks, repos):
        kinds = [kind for c in rows for kind in c.missed.values()]
        properties = sum(len(c.missed) for c in rows if c.is_property)
        lines.append(f"| {name} | " + " | ".join(str(kinds.count(k)) for k in _FAILURE_KINDS)
                     + f" | {properties} |")
    return [*lines, "", *_extra_lines(checks, repos), ""]


def _extra_lines(checks: Sequence[CallerCheck], repos: Mapping[str, str]) -> list[str]:
    """Graph sites jedi's reference search did not list, and how many of them jedi
    resolves to the function when asked at the site itself (they count against the
    graph's precision all the same)."""
    lines = ["Graph sites jedi's reference search did not list (they count against the "
             "graph's precision above, not against the *jedi at the site* columns), and how "
             "many of them jedi itself resolves to the function when asked at the site in a "
             "fresh inference state "
             "(`jedi_confirms`: `goto` on the name there; the reference search shares one "
             "inference state over the tree, in which jedi's pytest plugin finds "
             "fixtures for only one parameter per test module).", "",
             "| repository | graph sites not in jedi's references | jedi resolves them "
             "at the site | unconfirmed |", "|---|---|---|---|"]
    for name, rows in _by_repo(checks, repos):
        kinds = [kind for c in rows for kind in c.extra.values()]
        lines.append(f"| {name} | {len(kinds)} | {kinds.count('jedi at the site')} "
                     f"| {kinds.count('unconfirmed')} |")
    return lines


_HEADER = """\
# Evaluation of `pr-context review` on real history

Written by `evals/review/run_review_eval.py`; do not edit by hand. Method and caveats:
[evals/review/README.md](../evals/review/README.md).

{cases} real merged changes of public projects (labels in `evals/review/cases.jsonl`:
SHAs and paths only). For each, a commit on top of the real parent holds only the
change's Python source files (under `src/`, or the package directory); its test and doc
changes are withheld.
{mode} runs on
parent..withheld head, and its evidence.json is scored against the test and doc files
the real change edited that already existed at the parent (added files cannot be
listed; changelogs are not labels). Baselines run in the same pass on the same trees.

Reproduce (clones are made under `evals/.cache/review/`):

```sh
{command}
```

## Linked tests and stale docs

Means over cases; `n` is the number of cases with something to find (a touched test
file, a touched doc file). Tests per symbol: linked test files pr-context lists per
changed symbol; of those listed in cases that edited a test, the share the change edited
(a floor on precision: a linked test the change did not need to edit may still be
right). Docs per symbol: distinct doc files pr-context lists per changed symbol (all of
them, not only the first 3), and the grep baseline's (top 3).
"""


def _load_cases(path: Path, only: Sequence[str]) -> list[dict[str, Any]]:
    cases = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    return [c for c in cases if not only or c["id"] in only]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=Path, default=Path("evals/review/cases.jsonl"))
    parser.add_argument("--source", action="append", default=[],
                        help="OWNER/NAME=PATH_OR_URL to clone a repository from")
    parser.add_argument("--cache", type=Path, default=Path("evals/.cache/review"))
    parser.add_argument("--out", type=Path, default=Path("evals/out/review"))
    parser.add_argument("--doc", type=Path, default=None)
    parser.add_argument("--case", action="append", default=[], help="only this case id")
    parser.add_argument("--no-jedi", action="store_true", help="skip the callers check")
    parser.add_argument("--embeddings", action="store_true",
                        help="review with the default embedding model, as the action does "
                             "(slower: the first case of each repository embeds it)")
    parser.add_argument("--embedding-backend", default="torch",
                        choices=("torch", "onnx", "onnx-int8"),
                        help="with --embeddings: what runs the model")
    parser.add_argument("--results", type=Path, default=None,
                        help="render the report again from an earlier run's results.json "
                             "(OUT/results.json), running nothing")
    args = parser.parse_args(argv)
    if args.results is not None:
        results, checks = load_results(args.results)
    else:
        results, checks = _run_cases(args)
    # --source only says where to clone from; the figures do not depend on it
    doc = args.doc or Path("docs/review-evaluation.md")
    command = "python evals/review/run_review_eval.py " + " ".join(
        ["--no-jedi"] * args.no_jedi + ["--embeddings"] * args.embeddings
        + [f"--embedding-backend {args.embedding_backend}"] * (args.embedding_backend != "torch")
        + [f"--doc {doc}"])
    report = render_report(results, None if args.no_jedi else checks, command,
                           args.embeddings)
    if args.results is None:
        _write_results(args.out, results, checks)
    if args.doc:
        args.doc.write_text(report, encoding="utf-8")
    print(report)
    return 0


def load_results(path: Path) -> tuple[list[CaseResult], list[CallerCheck]]:
    """The cases and caller checks a run wrote to ``results.json``."""
    data = json.loads(path.read_text(encoding="utf-8"))
    checks = [CallerCheck(**{**c, **{k: {tuple(site) for site in c[k]} for k in
                                     ("jedi", "graph", "lexical", "grep")},
                             "nested": tuple(c.get("nested", ()))})
              for c in data["callers"]]
    return [CaseResult(**case) for case in data["cases"]], checks


def _write_results(out: Path, results: Sequence[CaseResult],
                   checks: Sequence[CallerCheck]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps(
        {"cases": [vars(r) for r in results],
         "callers": [{**vars(c), **{k: sorted(getattr(c, k)) for k in
                                    ("jedi", "graph", "lexical", "grep")}}
                     for c in checks]}, indent=1, default=list) + "\n", encoding="utf-8")


def _run_cases(args: argparse.Namespace) -> tuple[list[CaseResult], list[CallerCheck]]:
    sources = dict(s.split("=", 1) for s in args.source)
    results: list[CaseResult] = []
    checks: list[CallerCheck] = []
    for case in _load_cases(args.cases, args.case):
        clone = scratch_clone(case["repo"], sources.get(case["repo"]), args.cache)
        try:
            result, found = evaluate_case(case, clone, args.cache, args.out,
                                          not args.no_jedi, args.embeddings,
                                          args.embedding_backend)
        except subprocess.CalledProcessError as exc:
            result, found = CaseResult(case["id"], case["repo"], 0,
                                       error=(exc.stderr or "").strip()[-300:]), []
        results.append(result)
        checks += found
        print(f"{result.id}: tests {result.tests} docs {result.docs} "
              f"callers {len(found)} {result.seconds:.1f}s", file=sys.stderr)
    return results, checks


if __name__ == "__main__":
    sys.exit(main())
