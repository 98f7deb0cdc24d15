"""Linked tests: the test files that exercise a changed symbol, ranked best first.

Signals, each in [0, 1] per test file, combined as a weighted sum (weights below):

- ``graph``: a test function calls the symbol (``callers_of``; resolved calls count
  fully, same-name candidates by their confidence); one hop away, a test calls a helper
  in a test or test-support file, or takes a conftest fixture, that calls it; or the
  test file imports the symbol, its class or its module.
- ``naming``: the test file is named after the source file by its language's convention
  (``test_x.py``/``x_test.py``, ``x_test.go``, ``XTest.java``, ``x.test.ts``/``x.spec.ts``).
- ``cochange``: how often the source file and the test file changed in the same commit,
  from the index's history (``n / (n + COCHANGE_HALF)``).
- ``semantic``: the best cosine between the symbol's chunks and the test file's chunks;
  a tie-breaker, and a fallback for a few files when nothing else links.

Pure: reads only the graph, the :class:`LinkIndex` and the corpus it is given.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from pr_context.changes import ChangedSymbol
from pr_context.graph import SymbolGraph, callers_of
from pr_context.links.evidence import (
    Evidence,
    LinkIndex,
    TestDef,
    nearness_by_path,
    symbol_vector,
)
from pr_context.parse.code_paths import absolute_module, module_path
from pr_context.retrieve.corpus import SearchCorpus

__all__ = [
    "COCHANGE_WEIGHT",
    "GRAPH_WEIGHT",
    "NAMING_WEIGHT",
    "SELECTION_MIN_SCORE",
    "SEMANTIC_WEIGHT",
    "linked_tests",
    "test_selection",
]

# A test that calls the symbol is checkable evidence that it exercises it: the strongest.
GRAPH_WEIGHT = 1.0
# Through a helper or fixture the call is one step removed, and the helper serves tests
# that may not care about the symbol.
HOP_DECAY = 0.7
# Importing the module (or the symbol) without a call we could resolve: dynamic use,
# or a test of a sibling in the same module. Half of a resolved call.
IMPORT_STRENGTH = 0.5
# The naming convention is how most projects lay out unit tests; a matching file
# nearly always tests the source file, though not necessarily this symbol.
NAMING_WEIGHT = 0.6
# ``test_x_more.py`` for ``x.py``: the convention, extended; less certain.
NAMING_PREFIX_STRENGTH = 0.5
# History says the files move together, but commits also touch unrelated files.
COCHANGE_WEIGHT = 0.4
COCHANGE_HALF = 2  # commits together at which the cochange signal reaches 0.5
# One shared commit is usually an initial import or a sweep, not coupling.
COCHANGE_MIN_COMMITS = 2
# Similar text is not relevance (tests look like everything they test): tie-breaker.
SEMANTIC_WEIGHT = 0.15
# A file nothing else links is listed when this close, and only the closest: in the
# review evaluation run with embeddings, the closest such file per symbol was a test the
# real change edited in 22 % of symbols, the second and third in 4 % and 2 %.
SEMANTIC_FALLBACK_MIN = 0.3
SEMANTIC_FALLBACK_K = 1
# Below this a linked file is listed but not selected to run (semantic-only, weak
# cochange): running it would rarely catch a regression of this symbol.
SELECTION_MIN_SCORE = 0.3

_SIGNAL_WEIGHTS = {"graph": GRAPH_WEIGHT, "naming": NAMING_WEIGHT,
                   "cochange": COCHANGE_WEIGHT, "semantic": SEMANTIC_WEIGHT}
_TEST_ROLE = "test"
_SUPPORT_ROLES = frozenset({"test", "test_support"})
_VERBS = {"call": "calls", "instantiation": "instantiates", "read": "reads"}
_JS_SUFFIXES = r"\.(?:test|spec)\.[cm]?[jt]sx?"


@dataclass(frozen=True)
class _Finding:
    path: str
    signal: str  # a key of _SIGNAL_WEIGHTS
    strength: float  # 0..1
    reason: str
    test: TestDef | None = None  # the test function the link runs through
    line: int = 1
    call: bool = False  # a call site, resolved or one hop away (not an import)


def linked_tests(
    change: ChangedSymbol,
    graph: SymbolGraph,
    index: LinkIndex,
    touched_paths: set[str],
    corpus: SearchCorpus | None = None,
    head_paths: set[str] | None = None,
) -> list[Evidence]:
    """Test files linked to ``change``, best first, one item per file.

    ``graph``, ``index`` and ``corpus`` are of the revision that holds the symbol: head,
    or base for a removed symbol. ``head_paths`` (the files that exist at head) drops
    tests the PR deleted; None keeps all.
    """
    findings = [*_graph_findings(change, graph, index), *_import_findings(change, graph, index)]
    # A test helper is linked to the tests that use it: test files change together and
    # read alike because they test one feature, which says nothing about this helper.
    if index.roles.get(change.path) not in _SUPPORT_ROLES:
        findings += [*_naming_findings(change, index), *_cochange_findings(change, index)]
        findings += _semantic_findings(change, index, corpus, {f.path for f in findings})
    by_path: dict[str, list[_Finding]] = defaultdict(list)
    for f in findings:
        if head_paths is None or f.path in head_paths:
            by_path[f.path].append(f)
    items = [_evidence(path, found, index, touched_paths) for path, found in by_path.items()]
    return sorted(items, key=lambda e: (-e.score, e.path))


def test_selection(all_linked: Iterable[Evidence],
                   min_score: float = SELECTION_MIN_SCORE) -> list[str]:
    """Test files (pytest node ids where resolvable) to run, in order of first listing.

    Files the PR touched are always selected; others need ``min_score``. A file whose
    link runs through named test functions is selected as those functions.
    """
    selected: dict[str, None] = {}
    for item in all_linked:
        if item.score >= min_score or item.touched_in_pr:
            for target in item.node_ids or (item.path,):
                selected.setdefault(target, None)
    file_wide = {t for t in selected if "::" not in t}
    return [t for t in selected if "::" not in t or t.split("::", 1)[0] not in file_wide]


# -- graph ----------------------------------------------------------------------------------


def _graph_findings(change: ChangedSymbol, graph: SymbolGraph,
                    index: LinkIndex) -> Iterator[_Finding]:
    for caller in callers_of(graph, change.qualified_name):
        role = index.roles.get(caller.path)
        if role not in _SUPPORT_ROLES:
            continue
        test = _test_function(index, caller.path, caller.enclosing)
        if role == _TEST_ROLE:
            where = _node_id(test) if test else caller.path
            verb = _VERBS.get(caller.kind, "uses")
            yield _Finding(caller.path, "graph", caller.confidence,
                           f"{where} {verb} {change.symbol} (line {caller.line})",
                           test, caller.line, call=True)
        if test is None and caller.enclosing:
            yield from _hop_findings(change, graph, index, caller.enclosing,
                                     caller.confidence * HOP_DECAY)


def _hop_findings(change: ChangedSymbol, graph: SymbolGraph, index: LinkIndex,
                  helper: str, strength: float) -> Iterator[_Finding]:
    """Tests that call ``helper`` (which calls the symbol), or take it as a fixture."""
    short = helper.rsplit(".", 1)[-1]
    for caller in callers_of(graph, helper):
        test = _test_function(index, caller.path, caller.enclosing)
        if index.roles.get(caller.path) == _TEST_ROLE and test is not None:
            yield _Finding(caller.path, "graph", strength * caller.confidence,
                           f"{_node_id(test)} calls {short} (line {caller.line}), "
                           f"which calls {change.symbol}", test, caller.line, call=True)
    helper_path = _path_of(index, helper)
    if helper_path is None or PurePosixPath(helper_path).name != "conftest.py":
        return
    for test in _fixture_users(index, helper_path, short):
        yield _Finding(test.path, "graph", strength,
                       f"{_node_id(test)} uses fixture {short} ({helper_path}), "
                       f"which calls {change.symbol}", test, test.start_line, call=True)


def _fixture_users(index: LinkIndex, conftest: str, fixture: str) -> Iterator[TestDef]:
    scope = posixpath.dirname(conftest)
    for path, defs in index.test_defs.items():
        in_scope = not scope or path.startswith(scope + "/")
        if in_scope and index.roles.get(path) == _TEST_ROLE:
            yield from (d for d in defs if _is_test(d) and fixture in d.parameters)


def _path_of(index: LinkIndex, qualified_name: str) -> str | None:
    return next((d.path for defs in index.test_defs.values() for d in defs
                 if d.qualified_name == qualified_name), None)


def _test_function(index: LinkIndex, path: str, enclosing: str | None) -> TestDef | None:
    """The test function (or method) whose body holds ``enclosing``, if any."""
    defs = {d.qualified_name: d for d in index.test_defs.get(path, ())}
    current = defs.get(enclosing or "")
    while current is not None and not _is_test(current):
        current = defs.get(current.parent or "")
    return current


def _is_test(d: TestDef) -> bool:
    if d.kind not in ("function", "method"):
        return False
    return bool(re.match(r"(?i)test", d.name)) or d.name.startswith(("it", "should"))


def _node_id(test: TestDef) -> str:
    """``path::Class::name`` for a method, ``path::name`` for a function."""
    parent = test.parent.rsplit(".", 1)[-1] if test.parent and test.kind == "method" else None
    return "::".join(p for p in (test.path, parent, test.name) if p)


# -- imports --------------------------------------------------------------------------------


def _import_findings(change: ChangedSymbol, graph: SymbolGraph,
                     index: LinkIndex) -> Iterator[_Finding]:
    module = graph.tables.file_module.get(change.path) or _module_of(change, index)
    if not module:
        return
    for path, imports in graph.tables.imports.items():
        if index.roles.get(path) != _TEST_ROLE:
            continue
        language = index.languages.get(path) or ""
        for imp in imports:
            target = absolute_module(path, imp.module, imp.level, language)
            full = f"{target}.{imp.name}" if imp.name and imp.name != "*" else target
            if _names_symbol(full, module, change.qualified_name):
                yield _Finding(path, "graph", IMPORT_STRENGTH,
                               f"{path} imports {full} (line {imp.line})", None, imp.line)
                break


def _module_of(change: ChangedSymbol, index: LinkIndex) -> str:
    return module_path(change.path, index.languages.get(change.path) or "")


def _names_symbol(full: str, module: str, qualified_name: str) -> bool:
    """``full`` is the symbol, its class or its module (not merely a parent package)."""
    if full in (qualified_name, module):
        return True
    return full.startswith(module + ".") and qualified_name.startswith(full + ".")


# -- naming, cochange, semantic -------------------------------------------------------------


def _naming_findings(change: ChangedSymbol, index: LinkIndex) -> Iterator[_Finding]:
    source = PurePosixPath(change.path)
    for path, role in index.roles.items():
        if role == _TEST_ROLE:
            strength = naming_strength(source, PurePosixPath(path))
            if strength:
                yield _Finding(path, "naming", strength,
                               f"{path} is named after {change.path}")


def naming_strength(source: PurePosixPath, test: PurePosixPath) -> float:
    """1.0 when ``test`` follows its language's naming convention for ``source``."""
    stem, name = re.escape(source.stem), test.name
    suffix = source.suffix
    exact = {
        ".py": rf"test_{stem}\.py|{stem}_test\.py",
        ".go": rf"{stem}_test\.go",
        ".java": rf"{stem}(?:Test|Tests|IT)\.java|Test{stem}\.java",
        ".kt": rf"{stem}(?:Test|Tests)\.kt",
        ".rs": rf"{stem}_test\.rs",
    }.get(suffix, rf"{stem}{_JS_SUFFIXES}" if re.fullmatch(r"\.[cm]?[jt]sx?", suffix) else "")
    if not exact:
        return 0.0
    if re.fullmatch(exact, name):
        return 1.0
    if suffix == ".py" and re.fullmatch(rf"test_{stem}_\w+\.py", name):
        return NAMING_PREFIX_STRENGTH
    return 0.0


def _cochange_findings(change: ChangedSymbol, index: LinkIndex) -> Iterator[_Finding]:
    together: dict[str, int] = defaultdict(int)
    for source in {change.path, change.old_path} - {None}:
        for path, commits in index.cochange.get(str(source), {}).items():
            together[path] = max(together[path], commits)
    for path, commits in together.items():
        if index.roles.get(path) == _TEST_ROLE and commits >= COCHANGE_MIN_COMMITS:
            yield _Finding(path, "cochange", commits / (commits + COCHANGE_HALF),
                           f"{path} changed together with {change.path} in {commits} "
                           "recent commit(s)")


def _semantic_findings(change: ChangedSymbol, index: LinkIndex, corpus: SearchCorpus | None,
                       linked: set[str]) -> list[_Finding]:
    vector = symbol_vector(corpus, change.qualified_name) if corpus is not None else None
    if corpus is None or vector is None:
        return []
    tests = {p: r for p, r in index.roles.items() if r == _TEST_ROLE}
    best: dict[str, tuple[float, int]] = {}  # path -> (cosine, line of its closest chunk)
    for (path, line), cosine in sorted(nearness_by_path(corpus, vector, tests).items()):
        if cosine > best.get(path, (-1.0, 0))[0]:
            best[path] = (cosine, line)
    found = [_semantic_finding(change, index, path, cosine, line)
             for path, (cosine, line) in best.items()
             if path in linked or cosine >= SEMANTIC_FALLBACK_MIN]
    fallback = sorted((f for f in found if f.path not in linked),
                      key=lambda f: (-f.strength, f.path))
    return [f for f in found if f.path in linked] + fallback[:SEMANTIC_FALLBACK_K]


def _semantic_finding(change: ChangedSymbol, index: LinkIndex, path: str, cosine: float,
                      line: int) -> _Finding:
    """The file's closest chunk, named by the test function holding it when there is one."""
    around = [d for d in index.test_defs.get(path, ()) if d.start_line <= line <= d.end_line]
    innermost = max(around, key=lambda d: d.start_line, default=None)
    test = _test_function(index, path, innermost.qualified_name) if innermost else None
    where = _node_id(test) if test else path
    return _Finding(path, "semantic", round(max(cosine, 0.0), 3),
                    f"{where} reads like {change.symbol} (cosine {cosine:.2f})", test,
                    line)


# -- one item per file ----------------------------------------------------------------------


def _evidence(path: str, found: list[_Finding], index: LinkIndex,
              touched_paths: set[str]) -> Evidence:
    signals = _signals(found)
    best = max(found, key=lambda f: (_SIGNAL_WEIGHTS[f.signal] * f.strength, -f.line))
    lines = (best.test.start_line, best.test.end_line) if best.test else (best.line, best.line)
    return Evidence(
        path=path, symbol=best.test.qualified_name if best.test else None,
        role=index.roles.get(path, _TEST_ROLE), start_line=lines[0], end_line=lines[1],
        score=round(sum(_SIGNAL_WEIGHTS[k] * v for k, v in signals.items()), 4),
        signals=signals, reason=best.reason, touched_in_pr=path in touched_paths,
        node_ids=_node_ids(path, found))


def _signals(found: Iterable[_Finding]) -> dict[str, float]:
    signals: dict[str, float] = {}
    for f in found:
        signals[f.signal] = round(max(signals.get(f.signal, 0.0), min(f.strength, 1.0)), 3)
    return signals


def _node_ids(path: str, found: Iterable[_Finding]) -> tuple[str, ...]:
    """pytest node ids of the test functions whose calls link a Python file.

    None when a call sits outside any test function (module level, a helper nothing
    named calls): then the whole file is selected.
    """
    if not path.endswith(".py"):
        return ()
    calls = [f for f in found if f.call]
    if not calls or any(f.test is None for f in calls):
        return ()
    return tuple(sorted({_node_id(f.test) for f in calls if f.test is not None}))
