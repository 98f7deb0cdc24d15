"""Linked tests: the test files that exercise a changed symbol, ranked for a reviewer.

Ranked for precision, by the kind of evidence first, then by score (a weighted sum of
the signals below), so evidence that is only statistical never outranks a call path:

1. **executed**: the user's coverage data (``--coverage``) says tests of the file ran
   the symbol's body (``coverage``);
2. **call path**: a test reaches the symbol through the call graph (``graph``: see
   :mod:`pr_context.links.reach`), directly, through helpers, production functions or
   fixtures; fewer calls first, then resolved before same-name candidates, then a file
   named after the source file, then more tests of the file reaching it;
3. **structure**: the test file imports the symbol, its class or its module (``graph``,
   at ``IMPORT_STRENGTH``), or is named after its source file by the language's
   convention (``naming``: ``test_x.py``/``x_test.py``, ``x_test.go``, ``XTest.java``,
   ``x.test.ts``/``x.spec.ts``);
4. **statistical**: the file changed together with the source file (``cochange``,
   ``n / (n + COCHANGE_HALF)``) or reads like the symbol (``semantic``, the best cosine);
   their reasons say "statistical".

Weaker evidence is cut short: of the call paths that only reach objects of the symbol's
class (a method called without its name, see :mod:`pr_context.links.reach`) or a value
it made at import, only the ones fewest calls away are listed, after the direct ones,
and of those only the tests seen using the method called without its name (by syntax or
by name, on something of unknown class), unless nothing else links the symbol;
evidence of kinds 3 and 4 only for a symbol no test reaches by a call path (the graph
cannot see how it is used): next to stronger evidence they would crowd the short list
with files that never run the symbol. The test selection keeps them all. Pure: reads
only the graph, the :class:`LinkIndex`, the walk and the corpus it is given.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

from pr_context.changes import ChangedSymbol
from pr_context.coverage import SymbolCoverage
from pr_context.graph import SymbolGraph
from pr_context.links.evidence import (
    Evidence,
    LinkIndex,
    TestDef,
    nearness_by_path,
    symbol_vector,
)
from pr_context.links.reach import Reach, Reached, Reacher, node_id, test_function
from pr_context.parse.code_paths import absolute_module, module_path
from pr_context.retrieve.corpus import SearchCorpus

__all__ = [
    "COCHANGE_WEIGHT",
    "COVERAGE_WEIGHT",
    "GRAPH_WEIGHT",
    "NAMING_WEIGHT",
    "SEMANTIC_WEIGHT",
    "linked_tests",
    "naming_strength",
]

# Tests the user's own coverage run saw executing the symbol: measured, not inferred.
COVERAGE_WEIGHT = 2.0
# A test that calls the symbol is checkable evidence that it exercises it: the strongest
# evidence pr-context infers.
GRAPH_WEIGHT = 1.0
# Each call between the test and the symbol: a helper serves tests that may not care
# about the symbol, and a longer path is likelier to take another branch.
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

_SIGNAL_WEIGHTS = {"coverage": COVERAGE_WEIGHT, "graph": GRAPH_WEIGHT,
                   "naming": NAMING_WEIGHT, "cochange": COCHANGE_WEIGHT,
                   "semantic": SEMANTIC_WEIGHT}
# Kinds of evidence, strongest first (the first sort key of the list).
_EXECUTED, _CALL_PATH, _STRUCTURE, _STATISTICAL = range(4)
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
    kind: int  # _EXECUTED .. _STATISTICAL
    test: TestDef | None = None  # the test function the link runs through
    line: int = 1
    node_ids: tuple[str, ...] = ()  # the tests it names (empty: the whole file)
    hops: int = 0  # calls between the test and the symbol (call paths)
    candidate: bool = False  # a same-name candidate is on the path
    implicit: bool = False  # only through its class's objects or import-time state
    unused: bool = False  # through objects whose method nothing on the way is seen using


def linked_tests(
    change: ChangedSymbol,
    graph: SymbolGraph,
    index: LinkIndex,
    touched_paths: set[str],
    corpus: SearchCorpus | None = None,
    head_paths: set[str] | None = None,
    reach: Reach | None = None,
    covered: SymbolCoverage | None = None,
    coverage_label: str = "coverage",
    measured_files: frozenset[str] = frozenset(),
) -> list[Evidence]:
    """Test files linked to ``change``, best first, one item per file.

    ``graph``, ``index`` and ``corpus`` are of the revision that holds the symbol: head,
    or base for a removed symbol; ``reach`` is its walk (made here when None).
    ``head_paths`` (the files that exist at head) drops tests the PR deleted; None keeps
    all. ``covered`` is what the user's coverage data says of the symbol, and
    ``measured_files`` the test files that data saw running: a call path from one of those
    files that the data contradicts (it did not run the symbol) is left out.
    """
    walk = reach if reach is not None else Reacher(graph, index).reach(change.qualified_name)
    ran = {t.split("::", 1)[0] for t in covered.tests} if covered is not None and \
        covered.status != "not_measured" else None
    paths = [f for f in _reach_findings(change, walk)
             if ran is None or f.path in ran or f.path not in measured_files]
    paths = _weaker_cut(paths)
    findings = [f for f in [*_coverage_findings(change, covered, coverage_label), *paths]
                if head_paths is None or f.path in head_paths]
    if not findings:
        findings += _import_findings(change, graph, index)
        # A test helper is linked only to the tests that use it: test files change
        # together and read alike because they test one feature.
        if index.roles.get(change.path) not in _SUPPORT_ROLES:
            findings += [*_naming_findings(change, index), *_cochange_findings(change, index)]
            findings += _semantic_findings(change, index, corpus, {f.path for f in findings})
    by_path: dict[str, list[_Finding]] = defaultdict(list)
    for f in findings:
        if head_paths is None or f.path in head_paths:
            by_path[f.path].append(f)
    naming = {p for p in by_path if naming_strength(PurePosixPath(change.path),
                                                    PurePosixPath(p))}
    ranked = sorted(by_path.items(), key=lambda item: _order(item[0], item[1], naming))
    return [_evidence(path, found, index, touched_paths) for path, found in ranked]


def _weaker_cut(paths: list[_Finding]) -> list[_Finding]:
    """Of the paths through objects or import-time values, those whose test is seen using
    the method called without its name (all of them, when none is and nothing else links
    the symbol), and of those the closest only."""
    weaker = [f for f in paths if f.implicit]
    seen = [f for f in weaker if not f.unused]
    pool = seen if seen or len(weaker) < len(paths) else weaker
    nearest = min((f.hops for f in pool), default=0)
    # by identity: each finding is an item of ``paths`` (comparing the dataclasses field
    # by field, a test reached along thousands of paths, was quadratic)
    pooled = {id(f) for f in pool}
    return [f for f in paths if not f.implicit or (id(f) in pooled and f.hops == nearest)]


def _order(path: str, found: list[_Finding], naming: set[str]) -> tuple[object, ...]:
    kind = min(f.kind for f in found)
    best = [f for f in found if f.kind == kind]
    # a call path to the symbol itself before one that only reaches its class's objects
    only_objects = all(f.implicit for f in best)
    direct = [f for f in best if f.implicit == only_objects]
    unused = all(f.unused for f in direct)
    hops = min(f.hops for f in direct)
    resolved = any(not f.candidate for f in direct if f.hops == hops)
    strength = max(_SIGNAL_WEIGHTS[f.signal] * f.strength for f in direct)
    reaching = len({n for f in direct for n in f.node_ids} or {path})
    return (kind, only_objects, unused, hops, not resolved, -round(strength, 4),
            path not in naming, -reaching, path)


# -- coverage and call paths ----------------------------------------------------------------


def _coverage_findings(change: ChangedSymbol, covered: SymbolCoverage | None,
                       label: str) -> Iterator[_Finding]:
    if covered is None or covered.status != "executed":
        return
    by_file: dict[str, list[str]] = defaultdict(list)
    for test in covered.tests:
        by_file[test.split("::", 1)[0]].append(test)
    for path, tests in by_file.items():
        more = f" and {len(tests) - 1} more test(s) of the file" if len(tests) > 1 else ""
        yield _Finding(path, "coverage", 1.0, f"{tests[0]}{more} ran {change.symbol} "
                       f"({label})", _EXECUTED, node_ids=tuple(tests))


def _reach_findings(change: ChangedSymbol, walk: Reach) -> Iterator[_Finding]:
    for reached in walk.tests:
        strength = round(reached.confidence * HOP_DECAY ** (reached.hops - 1), 4)
        ids = (node_id(reached.test),) if reached.test and reached.path.endswith(".py") \
            and reached.how != "module" else ()
        yield _Finding(reached.path, "graph", strength, _reach_reason(change, reached),
                       _CALL_PATH, reached.test, reached.line, ids, reached.hops,
                       reached.candidate, reached.through is not None or reached.state is not None,
                       bool(reached.unused))


def _reach_reason(change: ChangedSymbol, reached: Reached) -> str:
    """``tests/t.py::test_a calls helper (line 4), which calls parse``, and so on."""
    where = node_id(reached.test) if reached.test else reached.path
    chain = [*reached.via, change.symbol]
    first = chain[0]
    if reached.how == "fixture":
        text = f"{where} takes fixture {first}"
    elif reached.how == "setup":
        text = f"{where}: its class's setup {first}"
    elif reached.how == "module":
        text = f"{where} runs {first} at import or through a test hook (line {reached.line})"
    elif reached.verb == "syntax":
        text = f"{where} runs {first} by syntax on one of its objects (line {reached.line})"
    else:
        text = f"{where} {_VERBS.get(reached.verb, 'uses')} {first} (line {reached.line})"
    if len(chain) == 2 and not reached.through:
        text += f", which calls {chain[1]}"
    elif len(chain) > 2:
        text += f", which reaches {change.symbol} through {' → '.join(chain[1:-1])}"
    if reached.through:
        text += (f"; it holds {reached.through} objects, whose method on the way Python "
                 "calls without its name (by syntax, as an attribute, or one the graph "
                 "cannot see)")
    if reached.unused:
        text += (f"; nothing on the way is seen using {', '.join(reached.unused)} (by name "
                 "or by syntax)")
    if reached.state:
        text += (f"; it uses {reached.state}, which {change.symbol} helped make when its "
                 "module was imported")
    if reached.candidate:
        text += " (a same-name candidate on the way: the receiver's class is unknown)"
    return text


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
                               f"{path} imports {full} (line {imp.line})", _STRUCTURE,
                               line=imp.line)
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
                               f"{path} is named after {change.path}", _STRUCTURE)


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
                           f"statistical: {path} changed together with {change.path} in "
                           f"{commits} recent commit(s)", _STATISTICAL)


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
    test = test_function(index, path, innermost.qualified_name) if innermost else None
    where = node_id(test) if test else path
    return _Finding(path, "semantic", round(max(cosine, 0.0), 3),
                    f"statistical: {where} reads like {change.symbol} (cosine {cosine:.2f})",
                    _STATISTICAL, test, line)


# -- one item per file ----------------------------------------------------------------------


def _evidence(path: str, found: list[_Finding], index: LinkIndex,
              touched_paths: set[str]) -> Evidence:
    signals = _signals(found)
    kind = min(f.kind for f in found)
    strongest = [f for f in found if f.kind == kind]
    best = max(strongest, key=lambda f: (_SIGNAL_WEIGHTS[f.signal] * f.strength, -f.hops,
                                         -f.line))
    lines = (best.test.start_line, best.test.end_line) if best.test else (best.line, best.line)
    return Evidence(
        path=path, symbol=best.test.qualified_name if best.test else None,
        role=index.roles.get(path, _TEST_ROLE), start_line=lines[0], end_line=lines[1],
        score=round(sum(_SIGNAL_WEIGHTS[k] * v for k, v in signals.items()), 4),
        signals=signals, reason=best.reason, touched_in_pr=path in touched_paths,
        node_ids=_node_ids(path, strongest))


def _signals(found: Iterable[_Finding]) -> dict[str, float]:
    signals: dict[str, float] = {}
    for f in found:
        signals[f.signal] = round(max(signals.get(f.signal, 0.0), min(f.strength, 1.0)), 3)
    return signals


def _node_ids(path: str, found: list[_Finding]) -> tuple[str, ...]:
    """pytest node ids of the tests that link a Python file by a run or a call path.

    Empty when one link runs outside any test function (at import, through a hook), or
    the link is no call path: then the whole file is meant.
    """
    if not path.endswith(".py") or not found or found[0].kind > _CALL_PATH \
            or any(not f.node_ids for f in found):
        return ()
    return tuple(sorted({n for f in found for n in f.node_ids}))
