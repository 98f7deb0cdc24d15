"""The test selection for CI: what to run instead of the whole suite, chosen for safety.

Every selected item says why it is there. What is selected, per changed symbol (nothing
for one whose change runs nowhere: only comments, docstrings or whitespace, or a type
alias read only in annotations):

1. With the user's coverage data: the tests it saw running the symbol's body (pytest
   node ids). A symbol it ran in no test adds nothing; one it cannot see (new code,
   lines changed since it was measured, a file it did not measure) goes on to 2.
2. The tests that reach the symbol through the call graph (:mod:`.reach`: calls,
   helpers, fixtures, several hops, overrides and dynamic-dispatch candidates), as node
   ids, or whole files where the call runs at the test file's import.
3. Where the graph cannot see in: the test files importing, transitively, a production
   file that runs the symbol at import; and, for a symbol no test reaches at all, those
   importing its own file, unless nothing names it anywhere (:attr:`Reach.unreferenced`:
   only a lookup by a computed name could run it).

And per PR: the test files it adds or edits (and, with coverage data from an older
commit, those changed since); for module-level code, the importers of the module (for
changed imports only, the nearest importers unless a test already selected imports it:
a failing import fails each of them alike).

**Run everything** instead, with the reason, when the change is ubiquitous: a package's
``__init__`` changed at module level (it runs whenever anything of the package is
imported), a conftest whose fixtures and hooks serve every test, the test configuration
or dependencies
(``TEST_CONFIGURATION``), a symbol reached from nearly everywhere (the walk passed
``MAX_WALK`` definitions), or a selection that already holds more than
``RUN_EVERYTHING_SHARE`` of the suite's tests (the PR's own test files aside). The
targets are then the directories holding the tests, so the list given to pytest still
runs them all. Pure.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from pr_context.coverage import SymbolCoverage
from pr_context.links.evidence import LinkIndex
from pr_context.links.imports import ImportGraph
from pr_context.links.module_code import ModuleChange
from pr_context.links.reach import Reach, is_test, node_id

__all__ = ["RUN_EVERYTHING_SHARE", "TEST_CONFIGURATION", "SelectedTest", "SymbolTests",
           "TestSelection", "select_tests", "test_roots"]

# A selection holding more than this share of the suite's tests (most of them) saves
# little, while a path the graph cannot see would still go untested: run everything.
RUN_EVERYTHING_SHARE = 0.5
# Files whose change affects how every test runs: pytest's configuration files and the
# files that declare the dependencies and environment the tests run with.
TEST_CONFIGURATION = re.compile(
    r"(^|/)(pytest\.ini|tox\.ini|setup\.cfg|setup\.py|pyproject\.toml|noxfile\.py|"
    r"(requirements|constraints)[\w.-]*\.(txt|in))$")
_TEST_ROLE = "test"


@dataclass(frozen=True)
class SelectedTest:
    """One thing to run (a test file, a pytest node id, a directory) and why."""

    target: str
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class TestSelection:
    """The tests to run; ``run_everything`` says why the whole suite should run."""

    items: tuple[SelectedTest, ...]
    run_everything: str | None = None

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(i.target for i in self.items)


@dataclass(frozen=True)
class SymbolTests:
    """What the selection needs of one changed symbol."""

    symbol: str  # short name, for reasons
    path: str
    reach: Reach | None = None  # None: not walked
    covered: SymbolCoverage | None = None
    coverage_label: str = "coverage"
    # nothing it changes runs (comments, docstrings, a type alias): selects nothing
    inert: bool = False


@dataclass
class _Picks:
    """Targets in the order they were first picked, each with its reasons."""

    reasons: dict[str, list[str]] = field(default_factory=dict)

    def add(self, target: str, reason: str) -> None:
        found = self.reasons.setdefault(target, [])
        if reason not in found and len(found) < _MAX_REASONS:
            found.append(reason)


_MAX_REASONS = 3  # per target: the first few say why; evidence.json is not a log


def select_tests(symbols: Sequence[SymbolTests], index: LinkIndex, imports: ImportGraph,
                 changed_paths: Iterable[str], changed_tests: Iterable[str],
                 module_changes: Mapping[str, ModuleChange],
                 tests_changed_since: Iterable[str] = (),
                 everything_share: float | None = RUN_EVERYTHING_SHARE,
                 instances: Mapping[str, int] | None = None,
                 estimate: Callable[[], Mapping[str, int]] | None = None) -> TestSelection:
    """The selection for a PR.

    ``index`` is the head's; ``changed_paths`` every path the PR touched;
    ``changed_tests`` the test files it adds or edits; ``module_changes`` what changed at
    module level per Python file; ``tests_changed_since`` the test files changed between
    the coverage data's commit and the base; ``everything_share`` the share of the
    suite's tests from which everything runs (None: never for that reason);
    ``instances`` how many tests each test function runs (its parametrizations, from
    coverage data), so that shares count what pytest runs; without them, ``estimate``
    gives such counts from the test files' text, asked for only when the selection looks
    like most of the suite.
    """
    suite = _Suite.of(index, instances or {})
    changed = sorted(set(changed_paths))
    everything = _ubiquitous(changed, symbols, suite, module_changes)
    picks = _Picks()
    _pick_conftests(changed, suite, picks)
    for item in symbols:
        _pick_symbol(item, imports, suite, picks)
    for path, kind in sorted(module_changes.items()):
        _pick_module(path, kind, imports, suite, picks)
    for path in sorted(set(changed_tests)):
        picks.add(path, "the PR adds or edits this test file")
    for path in sorted(set(tests_changed_since) - set(changed_tests)):
        picks.add(path, "changed since the coverage data was measured: it cannot know "
                        "what this file runs")
    targets = _collapsed(picks)
    # The PR's own tests run whatever else is chosen: the question is how far the change
    # reaches.
    own = set(changed_tests) | set(tests_changed_since)
    reached = [t.target for t in targets if t.target not in own]
    share = suite.share(reached)
    if everything_share is not None and share > everything_share and not instances \
            and estimate is not None:
        share = _Suite.of(index, estimate()).share(reached)
    if everything is None and everything_share is not None and share > everything_share:
        everything = (f"the change reaches {share:.0%} of the suite's tests: running the "
                      "rest costs little and leaves no path the graph cannot see untested")
    if everything is not None:
        return TestSelection(tuple(SelectedTest(root, (everything,))
                                   for root in test_roots(suite.files)), everything)
    return TestSelection(tuple(targets))


def _ubiquitous(changed: Sequence[str], symbols: Sequence[SymbolTests], suite: _Suite,
                module_changes: Mapping[str, ModuleChange]) -> str | None:
    for path, kind in sorted(module_changes.items()):
        if kind == "code" and PurePosixPath(path).name == "__init__.py":
            return (f"{path} changed at module level: a package's __init__ runs whenever "
                    "anything of the package is imported")
    for path in changed:
        if TEST_CONFIGURATION.search(path):
            return f"{path} changed: it configures how every test runs or what it runs with"
        if PurePosixPath(path).name == "conftest.py" and suite.within(
                posixpath.dirname(path)) == suite.files:
            return f"{path} changed: its fixtures and hooks serve every test"
    wide = next((s for s in symbols if s.reach is not None and s.reach.wide
                 and not _covered(s) and not s.inert), None)
    if wide is not None:
        return (f"{wide.symbol} ({wide.path}) is reached from nearly everywhere: its "
                "callers lead to more code than one review walks")
    return None


def _pick_conftests(changed: Sequence[str], suite: _Suite, picks: _Picks) -> None:
    """A changed conftest's directory: every test file under it."""
    for path in changed:
        if PurePosixPath(path).name == "conftest.py":
            for test in sorted(suite.within(posixpath.dirname(path))):
                picks.add(test, f"{path} changed: its fixtures and hooks serve this file")


def _covered(item: SymbolTests) -> bool:
    return item.covered is not None and item.covered.status != "not_measured"


def _pick_symbol(item: SymbolTests, imports: ImportGraph, suite: _Suite,
                 picks: _Picks) -> None:
    if item.inert:
        return
    if item.covered is not None and _covered(item):
        for test in item.covered.tests:
            picks.add(test, f"ran {item.symbol} ({item.coverage_label})")
        return
    reach = item.reach
    if reach is None:
        return
    for reached in sorted(reach.tests, key=lambda r: (r.path, r.line)):
        target = node_id(reached.test) if reached.test and reached.how != "module" \
            and reached.path.endswith(".py") else reached.path
        picks.add(target, f"calls {item.symbol}" if reached.hops == 1
                  else f"reaches {item.symbol} in {reached.hops} calls")
    runs_at_import = sorted(reach.imported)
    for path, chain in imports.closure(runs_at_import).items():
        if path in suite.files:
            picks.add(path, f"imports {chain[-1]}, which runs {item.symbol} at import")
    if not reach.tests and not reach.imported and not reach.unreferenced:
        for path, chain in imports.closure([item.path]).items():
            if path in suite.files:
                picks.add(path, f"imports {item.path} (through {len(chain) - 1} file(s)); "
                                f"no call path from a test to {item.symbol} is known")


def _pick_module(path: str, kind: ModuleChange, imports: ImportGraph, suite: _Suite,
                 picks: _Picks) -> None:
    closure = {p: chain for p, chain in imports.closure([path]).items() if p in suite.files}
    if kind == "imports":
        # An import that fails fails every test importing the module alike: one of them
        # catches it, and a test already selected may be one.
        picked = {t.split("::", 1)[0] for t in picks.reasons}
        if picked & set(closure):
            return
        nearest = min((len(chain) for chain in closure.values()), default=0)
        for test, chain in closure.items():
            if len(chain) == nearest:
                picks.add(test, f"imports {path} (through {len(chain) - 2} other file(s)), "
                                "whose imports changed: one importer catches a failing import")
        return
    for test, chain in closure.items():
        if test in suite.files:
            picks.add(test, f"imports {path} (through {len(chain) - 1} file(s)), whose "
                            "module-level code changed: it runs at import")


def _collapsed(picks: _Picks) -> list[SelectedTest]:
    """Node ids under a file that is selected whole are that file."""
    whole = {t for t in picks.reasons if "::" not in t}
    merged: dict[str, list[str]] = {}
    for target, reasons in picks.reasons.items():
        key = target.split("::", 1)[0] if target.split("::", 1)[0] in whole else target
        bucket = merged.setdefault(key, [])
        bucket.extend(r for r in reasons if r and r not in bucket)
    return [SelectedTest(t, tuple(r[:_MAX_REASONS])) for t, r in merged.items()]


@dataclass(frozen=True)
class _Suite:
    """The head's test files and how many tests each holds: its test functions, each
    counted as the tests coverage data saw it run (its parametrizations) or as one; a file
    without test functions the parser knows counts as one."""

    files: frozenset[str]
    tests: Mapping[str, int]  # file -> tests
    instances: Mapping[str, int]  # test function node id -> tests (default 1)

    @staticmethod
    def of(index: LinkIndex, instances: Mapping[str, int]) -> _Suite:
        files = frozenset(p for p, r in index.roles.items() if r == _TEST_ROLE)
        counts = {p: max(1, sum(instances.get(node_id(d), 1)
                                for d in index.test_defs.get(p, ()) if is_test(d)))
                  for p in files}
        return _Suite(files, counts, instances)

    def within(self, directory: str) -> frozenset[str]:
        return frozenset(p for p in self.files
                         if not directory or p.startswith(directory + "/"))

    def share(self, targets: Iterable[str]) -> float:
        total = sum(self.tests.values())
        if not total:
            return 0.0
        chosen = set(targets)
        files = {t for t in chosen if "::" not in t}
        picked = sum(self.tests.get(t, 0) for t in files) + sum(
            1 if "[" in t else self.instances.get(t, 1)  # one parametrization, or all
            for t in chosen if "::" in t and t.split("::", 1)[0] not in files)
        return min(picked / total, 1.0)


def test_roots(test_files: Iterable[str]) -> list[str]:
    """The top-level directories holding the test files (files at the root, themselves):
    given to a test runner, they run every test."""
    return sorted({p.split("/", 1)[0] if "/" in p else p for p in test_files})
