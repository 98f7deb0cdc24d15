"""``read_range`` and ``index_status``: numbered lines of one file, the index's state."""

from __future__ import annotations

from pr_context.errors import BadInputError
from pr_context.git import read_file_at, resolve_revision
from pr_context.mcp.bounds import cap_line
from pr_context.mcp.paths import PathRefusedError, confine
from pr_context.mcp.schemas import (
    WORKTREE,
    DirtyFile,
    IndexStatusResult,
    Line,
    Omitted,
    RangeResult,
)
from pr_context.mcp.workspace import View, Workspace
from pr_context.policy import decode_text, skip_reason_for_content, skip_reason_for_path
from pr_context.roles import classify_path
from pr_context.secrets import redact_secrets

__all__ = ["MAX_RANGE_LINES", "MAX_RANGE_LINE_CHARS", "index_status", "read_range"]

MAX_RANGE_LINES = 400
MAX_RANGE_LINE_CHARS = 500  # longer lines (minified code, data) are cut with an ellipsis
MAX_LISTED_DIRTY = 100  # dirty files named in index_status; the rest are counted


def read_range(workspace: Workspace, view: View, path: str, start_line: int, end_line: int,
               revision: str | None) -> RangeResult:
    """Lines ``start_line``..``end_line`` of ``path``, numbered, secrets redacted.

    :raises PathRefusedError: the path is outside the repository, outside the index's
        path policy, or a secret-looking file.
    :raises BadInputError: the file or the revision does not exist, or the range is empty.
    """
    relative = confine(workspace.repo.path, path)
    if start_line < 1 or end_line < start_line:
        raise BadInputError(f"lines {start_line}..{end_line}: give 1 <= start_line <= "
                            "end_line")
    label, data = _content(workspace, view, relative, revision)
    policy = workspace.policy(view.revision)
    refused = (skip_reason_for_path(policy, relative, len(data))
               or skip_reason_for_content(policy, relative, data))
    if refused:
        raise PathRefusedError(f"{relative} is outside the index's path policy ({refused})")
    lines = redact_secrets(decode_text(data)[0]).splitlines()
    if start_line > len(lines):
        raise BadInputError(f"{relative} has {len(lines)} lines; start_line {start_line} is "
                            "past its end")
    last = min(end_line, len(lines), start_line + MAX_RANGE_LINES - 1)
    numbered = [Line(number=n, text=cap_line(lines[n - 1], MAX_RANGE_LINE_CHARS))
                for n in range(start_line, last + 1)]
    cut = sum(1 for n in range(start_line, last + 1) if len(lines[n - 1]) > MAX_RANGE_LINE_CHARS)
    notes = [f"at most {MAX_RANGE_LINES} lines per call"] if last < min(end_line, len(lines)) \
        else []
    if cut:
        notes.append(f"{cut} lines longer than {MAX_RANGE_LINE_CHARS} characters were cut")
    return RangeResult(
        path=relative, start_line=start_line, end_line=last, revision=label,
        symbol=_enclosing(view, relative, start_line) if label == view.revision_of(relative)
        else None, role=classify_path(relative, ""), score=1.0,
        reason=f"lines {start_line}-{last} of {relative} as requested", total_lines=len(lines),
        lines=numbered, truncated=bool(notes), omitted=Omitted(details=cut), notes=notes)


def index_status(workspace: Workspace, view: View) -> IndexStatusResult:
    with view.store() as store:
        counts = store.counts()
    changes = view.overlay.changes
    return IndexStatusResult(
        repository=str(workspace.repo.path), index_path=str(workspace.db),
        indexed_commit=view.revision, head=view.head,
        dirty_files=[DirtyFile(path=c.path, status=c.status)
                     for c in changes[:MAX_LISTED_DIRTY]],
        dirty_count=len(changes), stale=view.stale,
        overlaid=len(view.overlay.overlaid) + sum(c.status == "deleted" for c in changes)
        if (changes and not view.overlay.stale) or view.overlay.overlaid else 0,
        counts=counts, embedding_model=view.manifest.embedding_model,
        model_loaded=workspace.model_loaded,
        notes=list(view.notes) + ([f"{len(changes) - MAX_LISTED_DIRTY} more dirty files"]
                                  if len(changes) > MAX_LISTED_DIRTY else []))


def _content(workspace: Workspace, view: View, path: str,
             revision: str | None) -> tuple[str, bytes]:
    """(revision label, bytes) of ``path``: at a commit, or the working tree's file."""
    if revision is not None and revision.strip().upper() != WORKTREE:
        sha = resolve_revision(workspace.repo, revision)
        data = read_file_at(workspace.repo, sha, path)
        if data is None:
            raise BadInputError(f"no file {path} at {revision}")
        return sha, data
    try:
        data = (workspace.repo.path / path).read_bytes()
    except FileNotFoundError:
        raise BadInputError(f"no file {path} in the working tree") from None
    except OSError as exc:
        raise BadInputError(f"cannot read {path}: {exc.strerror}") from None
    return (WORKTREE if path in view.overlay.hidden else view.revision), data


def _enclosing(view: View, path: str, line: int) -> str | None:
    with view.store() as store:
        rows = store.query(
            "SELECT qualified_name FROM definitions WHERE path = ? AND start_line <= ? "
            "AND end_line >= ? ORDER BY start_line DESC, end_line LIMIT 1", [path, line, line])
    return rows[0][0] if rows else None

