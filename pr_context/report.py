"""The review report: frozen dataclasses, and their evidence.json form (DESIGN contract).

``evidence_json`` is pure: it turns a :class:`Report` into the JSON-ready mapping that
``review`` writes as ``evidence.json``. Keys beyond the contract are additive.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pr_context.coverage import SymbolCoverage
from pr_context.links.selection import SelectedTest

__all__ = [
    "EVIDENCE_SCHEMA_VERSION",
    "EvidenceItem",
    "IndexInfo",
    "Report",
    "SymbolReport",
    "evidence_json",
]

EVIDENCE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class EvidenceItem:
    """One ranked caller, test or doc of a changed symbol (the contract's EVIDENCE)."""

    rank: int  # 1-based within its category
    path: str
    symbol: str | None
    role: str
    start_line: int
    end_line: int
    revision: str
    score: float
    signals: Mapping[str, float]
    reason: str
    touched_in_pr: bool
    line: int | None = None  # callers: the call site (start/end span its definition)
    updated_in_pr: bool | None = None  # callers: the PR edited the call site
    needs_update: bool = False  # callers: a breaking change the PR left this caller on
    status: str | None = None  # docs: "stale" or "updated"
    node_ids: tuple[str, ...] = ()  # tests: pytest node ids

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "rank": self.rank, "path": self.path, "symbol": self.symbol, "role": self.role,
            "start_line": self.start_line, "end_line": self.end_line,
            "revision": self.revision, "score": self.score,
            "signals": dict(sorted(self.signals.items())), "reason": self.reason,
            "touched_in_pr": self.touched_in_pr,
        }
        if self.line is not None:
            data["line"] = self.line
        if self.updated_in_pr is not None:
            data["updated_in_pr"] = self.updated_in_pr
            data["needs_update"] = self.needs_update
        if self.status is not None:
            data["status"] = self.status
        if self.node_ids:
            data["node_ids"] = list(self.node_ids)
        return data


@dataclass(frozen=True)
class SymbolReport:
    """A changed symbol with its evidence; lines at head (at base for a removed one)."""

    path: str
    symbol: str
    qualified_name: str
    kind: str
    change: str  # added | modified | removed | renamed | signature_changed
    start_line: int
    end_line: int
    callers: tuple[EvidenceItem, ...]
    tests: tuple[EvidenceItem, ...]
    docs: tuple[EvidenceItem, ...]
    old_path: str | None = None
    old_qualified_name: str | None = None
    old_signature: str | None = None
    new_signature: str | None = None
    parameter_changes: tuple[str, ...] = ()
    cosmetic: bool = False
    analysed: bool = True  # False: listed after the time budget ran out
    # nested definitions (closures, local helpers) the change was in; see changes.py
    changed_inside: tuple[str, ...] = ()
    coverage: SymbolCoverage | None = None  # what the user's coverage data says, if given

    @property
    def no_test_runs(self) -> bool:
        """The coverage data saw no test run this symbol's body."""
        return self.coverage is not None and self.coverage.status == "not_executed"

    @property
    def callers_not_updated(self) -> int:
        return sum(1 for c in self.callers if c.needs_update)

    @property
    def stale_docs(self) -> int:
        return sum(1 for d in self.docs if d.status != "updated")

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path, "symbol": self.symbol, "qualified_name": self.qualified_name,
            "kind": self.kind, "change": self.change, "start_line": self.start_line,
            "end_line": self.end_line,
            "callers": [c.to_json() for c in self.callers],
            "tests": [t.to_json() for t in self.tests],
            "docs": [d.to_json() for d in self.docs],
            "old_path": self.old_path, "old_qualified_name": self.old_qualified_name,
            "old_signature": self.old_signature, "new_signature": self.new_signature,
            "parameter_changes": list(self.parameter_changes), "cosmetic": self.cosmetic,
            "analysed": self.analysed, "changed_inside": list(self.changed_inside),
            "coverage": None if self.coverage is None else {
                "status": self.coverage.status, "tests": list(self.coverage.tests),
                "reason": self.coverage.reason},
        }


@dataclass(frozen=True)
class IndexInfo:
    """The head index the evidence came from (the contract's ``index`` object)."""

    build_id: str
    revision: str
    base_revision: str
    parser_version: str
    embedding_model: str
    path_policy: Mapping[str, Any]
    incremental: bool
    files: int
    chunks: int
    base_build_id: str = ""
    embedded: int = 0  # chunks embedded for the head (only the changed ones)
    reused: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "build_id": self.build_id, "revision": self.revision,
            "base_revision": self.base_revision, "parser_version": self.parser_version,
            "embedding_model": self.embedding_model, "path_policy": dict(self.path_policy),
            "incremental": self.incremental, "files": self.files, "chunks": self.chunks,
            "base_build_id": self.base_build_id, "embedded": self.embedded,
            "reused": self.reused,
        }


@dataclass(frozen=True)
class Report:
    """Everything ``review`` found; rendered by ``render`` and serialised here."""

    repository: str
    base: str
    head: str
    index: IndexInfo
    symbols: tuple[SymbolReport, ...]
    test_selection: tuple[str, ...]
    timings_ms: Mapping[str, int] = field(default_factory=dict)
    excluded_files: tuple[str, ...] = ()  # changed generated/vendored files, not analysed
    skipped_files: tuple[str, ...] = ()  # changed code files not parsed (see notes)
    notes: tuple[str, ...] = ()  # what was skipped and why, for people
    top_k: int = 5  # items per category shown in the comment
    link_base: str | None = None  # e.g. https://github.com/owner/name; None: plain paths
    selection_details: tuple[SelectedTest, ...] = ()  # test_selection, each with its reasons
    run_everything: str | None = None  # why the whole suite should run; None: the selection
    coverage: Mapping[str, Any] | None = None  # the coverage data used: file, revision, counts
    coverage_problem: str | None = None  # why coverage data given was not used

    @property
    def callers_not_updated(self) -> int:
        return sum(s.callers_not_updated for s in self.symbols)

    @property
    def stale_docs(self) -> int:
        return sum(s.stale_docs for s in self.symbols)

    @property
    def no_test_runs(self) -> int:
        return sum(s.no_test_runs for s in self.symbols)


def evidence_json(report: Report) -> dict[str, Any]:
    """The evidence.json object of ``report``: contract keys first, then additive ones."""
    return {
        "schema_version": EVIDENCE_SCHEMA_VERSION,
        "repository": report.repository,
        "base": report.base,
        "head": report.head,
        "index": report.index.to_json(),
        "changed_symbols": [s.to_json() for s in report.symbols],
        "test_selection": list(report.test_selection),
        "timings_ms": dict(report.timings_ms),
        "summary": {
            "changed_symbols": len(report.symbols),
            "callers_not_updated": report.callers_not_updated,
            "stale_docs": report.stale_docs,
            "tests_to_run": len(report.test_selection),
            "no_test_runs": report.no_test_runs,
        },
        "run_everything": report.run_everything is not None,
        "run_everything_reason": report.run_everything,
        "test_selection_details": [{"target": i.target, "reasons": list(i.reasons)}
                                   for i in report.selection_details],
        "coverage": dict(report.coverage) if report.coverage is not None else None,
        "excluded_files": list(report.excluded_files),
        "skipped_files": list(report.skipped_files),
        "notes": list(report.notes),
    }
