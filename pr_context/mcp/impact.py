"""``change_impact``: the review of the working tree's changes, or of two revisions.

The working tree is reviewed as a snapshot commit (``git.snapshot_worktree``) so that
``review`` runs unchanged: the same changed symbols, callers, tests and docs as a pull
request gets. The review works on a private copy of the index, never on the server's
own file.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pr_context.errors import IndexFileError
from pr_context.git import resolve_revision, snapshot_worktree
from pr_context.mcp.bounds import Deadline
from pr_context.mcp.schemas import WORKTREE, ChangeImpactResult, Item
from pr_context.mcp.tools import answer, evidence_item
from pr_context.mcp.workspace import View, Workspace
from pr_context.models import Sha
from pr_context.progress import SilentProgress
from pr_context.report import Report, SymbolReport
from pr_context.review import ReviewOptions, review
from pr_context.roles import classify_path

__all__ = ["change_impact"]

_BASE_COPY = "base-index.duckdb"
MAX_TEST_SELECTION = 200  # test files listed; a sweep past this is counted in a note


def change_impact(workspace: Workspace, view: View, base: str, head: str,
                  limit_per_symbol: int, deadline: Deadline) -> ChangeImpactResult:
    """Changed symbols from ``base`` to ``head`` (WORKTREE: the working tree as it is),
    each with callers (those left on a broken signature first), tests and docs."""
    base_sha = resolve_revision(workspace.repo, base)
    worktree = head.strip().upper() == WORKTREE
    head_sha = (snapshot_worktree(workspace.repo, resolve_revision(workspace.repo, "HEAD"))
                if worktree else resolve_revision(workspace.repo, head))
    report = _review(workspace, view, base_sha, head_sha, limit_per_symbol, deadline)

    def label(revision: str, path: str) -> str:
        if revision != head_sha or not worktree:
            return revision
        return WORKTREE if path in view.overlay.hidden else view.head

    items: list[Item] = []
    for symbol in report.symbols:
        items.append(_changed_item(symbol, label(head_sha, symbol.path)))
        for category, found in (("caller", symbol.callers), ("test", symbol.tests),
                                ("doc", symbol.docs)):
            for e in found[:limit_per_symbol]:
                item = evidence_item(view, e, symbol.qualified_name)
                items.append(item.model_copy(update={
                    "category": category, "revision": label(e.revision, e.path)}))
    selection = list(report.test_selection)
    notes = list(report.notes)
    if report.run_everything is not None:
        notes.append(f"run every test ({' '.join(selection)}): {report.run_everything}")
    if len(selection) > MAX_TEST_SELECTION:
        notes.append(f"{len(selection) - MAX_TEST_SELECTION} more tests to run are not "
                     "listed: run the whole suite")
    result = answer(view, items, notes)
    return ChangeImpactResult(**result.model_dump(), base=base_sha,
                              head=WORKTREE if worktree else head_sha,
                              test_selection=selection[:MAX_TEST_SELECTION])


def _review(workspace: Workspace, view: View, base_sha: Sha, head_sha: Sha,
            limit_per_symbol: int, deadline: Deadline) -> Report:
    """The review of ``base_sha`` to ``head_sha``; the last one again when asked about the
    same commits (a snapshot of an unchanged working tree is the same commit) over the
    same index build, and it analysed every symbol."""
    key = (base_sha, head_sha, limit_per_symbol, view.manifest.build_id)
    if workspace.last_review is not None and workspace.last_review[0] == key:
        return workspace.last_review[1]
    scratch = workspace.scratch()
    db = _base_copy(workspace.db, scratch)
    options = ReviewOptions(top_k=limit_per_symbol, budget_s=deadline.remaining(),
                            index_options=workspace.settings.index_options)
    report = review(workspace.repo, base_sha, head_sha, db, scratch / "review",
                    workspace.embedder(view.manifest), SilentProgress(), options)
    if all(symbol.analysed for symbol in report.symbols):
        workspace.last_review = (key, report)
    return report


def _changed_item(symbol: SymbolReport, revision: str) -> Item:
    said = symbol.change.replace("_", " ")
    details = "; ".join(symbol.parameter_changes)
    reason = f"{symbol.kind} {said}" + (f": {details}" if details else "")
    if symbol.old_qualified_name:
        reason += f" (was {symbol.old_qualified_name})"
    if symbol.callers_not_updated:
        reason += f"; {symbol.callers_not_updated} callers not updated"
    return Item(path=symbol.path, start_line=symbol.start_line, end_line=symbol.end_line,
                revision=revision, symbol=symbol.qualified_name,
                role=classify_path(symbol.path, ""), score=1.0, reason=reason,
                kind=symbol.kind, category="changed", change=symbol.change,
                of=symbol.qualified_name)


def _base_copy(db: Path, scratch: Path) -> Path:
    """A copy of the index for the review to bring to the base revision."""
    target = scratch / _BASE_COPY
    if not target.exists():
        try:
            shutil.copyfile(db, target)
        except OSError as exc:
            raise IndexFileError(f"cannot copy index {db} to {target}: {exc}") from exc
    return target
