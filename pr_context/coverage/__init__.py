"""Which tests executed a changed symbol, from the user's own coverage data (``--coverage``).

A coverage.py data file with per-test contexts (``pytest --cov --cov-context=test``, or
coverage.py's ``dynamic_context = test_function``), saved by the user's CI at some commit
of the default branch, is placed in the repository (:mod:`.placing`) and read (:mod:`.data`)
for the bodies of the changed symbols at the base:

1. Its paths become repository paths at the commit it was measured at (``revision``; the
   base when not given) by their common tail.
2. Each file it is asked about must *fit* that commit: a line it records as executed
   that is blank, a comment or past the end there proves it was measured elsewhere, and
   is refused with a message saying to pass the commit it was measured at.
3. When that commit is not the base, the base's lines are mapped back through the diff
   from it to the base; lines changed since have no measurement, and a symbol with none
   left is ``not_measured``. The test files changed between the two are what the data
   cannot see, like the PR's own tests.

Nothing here runs the repository's code; the file is only read.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pr_context.coverage.data import CoverageReader
from pr_context.coverage.placing import (
    SuiteFiles,
    body_lines,
    context_node_id,
    line_map,
    match_paths,
    misfit,
    suite_files,
)
from pr_context.diff import parse_patch
from pr_context.errors import CoverageFileError
from pr_context.git import Repository, changed_paths, list_files, read_file_at, unified_diff
from pr_context.models import Sha

__all__ = ["CoverageInput", "MeasuredCoverage", "SymbolCoverage", "Wanted", "body_lines",
           "measure_symbols"]

CoverageStatus = Literal["executed", "not_executed", "not_measured"]


@dataclass(frozen=True)
class CoverageInput:
    """A coverage data file and the commit its tests ran at (None: the base)."""

    path: Path
    revision: str | None = None


@dataclass(frozen=True)
class Wanted:
    """The lines of one changed symbol's body at the base, to look up."""

    key: str
    path: str  # at the base
    lines: frozenset[int]


@dataclass(frozen=True)
class SymbolCoverage:
    """What the data says of one symbol: the tests (pytest node ids) that ran its body."""

    status: CoverageStatus
    tests: tuple[str, ...] = ()
    reason: str = ""  # why it is not measured


@dataclass(frozen=True)
class MeasuredCoverage:
    """The coverage evidence of one review."""

    source: str  # the file, for reasons ("coverage of .coverage at 1a2b3c")
    revision: Sha  # the commit the tests ran at
    symbols: Mapping[str, SymbolCoverage]  # Wanted.key -> what the data says
    # test files added or changed between that commit and the base: the data cannot
    # know what they execute
    tests_changed_since: tuple[str, ...] = ()
    # test function (node id without parameters) -> how many tests of it the data holds
    instances: Mapping[str, int] = field(default_factory=dict)

    @property
    def test_files(self) -> frozenset[str]:
        """The test files the data saw running (some of) the measured code."""
        return frozenset(t.split("::", 1)[0] for t in self.instances)

    @property
    def label(self) -> str:
        return f"coverage of {self.source} at {self.revision[:12]}"


@dataclass(frozen=True)
class _Placement:
    """Where the base's files and lines are in the measured data."""

    measured_rev: Sha
    base: Sha
    files: Mapping[str, str]  # path at the measured commit -> measured path
    renamed: Mapping[str, str]  # base path -> its path at the measured commit
    changed_tests: tuple[str, ...]


def measure_symbols(repo: Repository, given: CoverageInput, measured_rev: Sha, base: Sha,
                    wanted: Sequence[Wanted], tests: Mapping[str, str]) -> MeasuredCoverage:
    """What the data says of each wanted symbol; ``tests`` maps the base's test files to
    their dotted modules.

    :raises CoverageFileError: the file is unreadable, holds no per-test contexts, names
        no file of the repository, or does not fit ``measured_rev``.
    """
    with CoverageReader(given.path) as reader:
        node_ids = _node_ids(reader, suite_files(tests), given.path)
        placement = _place(repo, reader, measured_rev, base, given.path, tests)
        lookup = _Lookup(reader, repo, placement, node_ids)
        symbols = {w.key: lookup.symbol(w) for w in wanted}
    instances: dict[str, int] = {}
    for node in set(node_ids.values()):
        function = node.split("[", 1)[0]
        instances[function] = instances.get(function, 0) + 1
    return MeasuredCoverage(given.path.name, measured_rev, symbols, placement.changed_tests,
                            instances)


def _node_ids(reader: CoverageReader, tests: SuiteFiles, path: Path) -> dict[int, str]:
    labels = reader.contexts
    found = {i: node for i, label in labels.items() if (node := context_node_id(label, tests))}
    if not found:
        sample = next((label for label in labels.values() if label), None)
        shown = f"its contexts name no test of this repository (one is {sample!r})" if sample \
            else "it holds no per-test contexts"
        raise CoverageFileError(f"{path}: {shown}; record it with pytest --cov "
                                "--cov-context=test (or coverage.py's dynamic_context = "
                                "test_function)")
    return found


def _place(repo: Repository, reader: CoverageReader, measured_rev: Sha, base: Sha,
           path: Path, tests: Collection[str]) -> _Placement:
    at_measured = {e.path for e in list_files(repo, measured_rev)}
    matched = match_paths(reader.measured_paths, at_measured)
    if not matched:
        first = reader.measured_paths[0] if reader.measured_paths else "none"
        raise CoverageFileError(f"{path} measured no file of this repository at "
                                f"{measured_rev[:12]} (first measured path: {first})")
    renamed: dict[str, str] = {}
    changed_tests: list[str] = []
    if measured_rev != base:
        for change in changed_paths(repo, measured_rev, base):
            if change.old_path:
                renamed[change.path] = change.old_path
            if change.status != "deleted" and change.path in tests:
                changed_tests.append(change.path)
    return _Placement(measured_rev, base, {repo_path: m for m, repo_path in matched.items()},
                      renamed, tuple(sorted(changed_tests)))


class _Lookup:
    """Symbols looked up in one open data file; each file's text, fit and diff once."""

    def __init__(self, reader: CoverageReader, repo: Repository, placement: _Placement,
                 node_ids: Mapping[int, str]) -> None:
        self.reader, self.repo, self.placement, self.node_ids = (reader, repo, placement,
                                                                  node_ids)
        self._lines: dict[str, dict[int, int] | None] = {}  # base path -> base -> measured

    def symbol(self, want: Wanted) -> SymbolCoverage:
        old_path = self.placement.renamed.get(want.path, want.path)
        measured = self.placement.files.get(old_path)
        if measured is None:
            return SymbolCoverage("not_measured",
                                  reason=f"{want.path} is not in the coverage data")
        back = self._back_map(want.path, old_path, measured)
        lines = want.lines if back is None else frozenset(back[n] for n in want.lines
                                                          if n in back)
        if not lines:
            return SymbolCoverage("not_measured", reason=(
                f"changed since the coverage was measured at "
                f"{self.placement.measured_rev[:12]}"))
        contexts = self.reader.contexts_executing(measured, lines)
        tests = sorted({self.node_ids[c] for c in contexts if c in self.node_ids})
        return SymbolCoverage("executed" if tests else "not_executed", tuple(tests))

    def _back_map(self, path: str, old_path: str, measured: str) -> dict[int, int] | None:
        """base line -> measured line (None: the same lines), after checking the fit."""
        if path not in self._lines:
            revision = self.placement.measured_rev
            data = read_file_at(self.repo, revision, old_path)
            text = data.decode("utf-8", "replace") if data is not None else ""
            _check_fit(self.reader, measured, old_path, text, revision)
            self._lines[path] = None if revision == self.placement.base else _base_to_measured(
                self.repo, self.placement, path, old_path, len(text.splitlines()))
        return self._lines[path]


def _check_fit(reader: CoverageReader, measured: str, path: str, text: str,
               revision: Sha) -> None:
    found = misfit(reader.executed_lines(measured), text)
    if found is not None:
        line, what = found
        raise CoverageFileError(
            f"{reader.path} does not fit {revision[:12]}: it records line {line} of {path} "
            f"as executed, which is {what} there, so it was measured at another commit; "
            "pass the commit its tests ran at (--coverage-rev, or the coverage-revision "
            "input)")


def _base_to_measured(repo: Repository, placement: _Placement, path: str, old_path: str,
                      measured_lines: int) -> dict[int, int]:
    """The base lines the diff from the measured commit left alone, to their old numbers."""
    diffs = parse_patch(unified_diff(repo, placement.measured_rev, placement.base,
                                     [old_path, path], context=0))
    diff = next((d for d in diffs if d.base_path == old_path), None)
    removed = diff.removed_lines if diff else frozenset()
    added = diff.added_lines if diff else frozenset()
    return {new: old for old, new in line_map(removed, added, measured_lines).items()}
