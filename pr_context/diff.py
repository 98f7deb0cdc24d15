"""Unified diff text -> which lines each file lost and gained (pure; no I/O).

Reads the output of ``git diff -M`` with :mod:`unidiff`. With ``-U0`` every line a hunk
lists is a changed line, so the line sets below are exact; with more context they still
hold only the ``-``/``+`` lines, never the context lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchedFile, PatchSet

from pr_context.errors import GitError

__all__ = ["DiffStatus", "FileDiff", "parse_patch"]

DiffStatus = Literal["added", "modified", "deleted", "renamed"]

_SIDE_PREFIXES = ("a/", "b/")
_NO_FILE = "/dev/null"


@dataclass(frozen=True)
class FileDiff:
    """The changed lines of one file: removed at base, added at head (1-based)."""

    path: str  # the head path; the base path for a deleted file
    old_path: str | None  # the base path when git reports a rename, else None
    status: DiffStatus
    removed_lines: frozenset[int]  # base line numbers
    added_lines: frozenset[int]  # head line numbers
    binary: bool = False

    @property
    def base_path(self) -> str:
        """Where the file lives at base."""
        return self.old_path or self.path


def parse_patch(patch_text: str) -> list[FileDiff]:
    """One FileDiff per file in ``patch_text``, in the patch's order.

    :raises GitError: the text is not a unified diff (git output is expected here).
    """
    if not patch_text.strip():
        return []
    try:
        patch = PatchSet(patch_text)
    except UnidiffParseError as exc:
        raise GitError(f"cannot read the unified diff: {exc}") from exc
    return [_file_diff(patched) for patched in patch]


def _file_diff(patched: PatchedFile) -> FileDiff:
    lines = [line for hunk in patched for line in hunk]
    return FileDiff(
        path=_strip_side(patched.source_file if _status(patched) == "deleted"
                         else patched.target_file),
        old_path=_strip_side(patched.source_file) if patched.is_rename else None,
        status=_status(patched),
        removed_lines=frozenset(ln.source_line_no for ln in lines
                                if ln.is_removed and ln.source_line_no is not None),
        added_lines=frozenset(ln.target_line_no for ln in lines
                              if ln.is_added and ln.target_line_no is not None),
        binary=patched.is_binary_file,
    )


def _status(patched: PatchedFile) -> DiffStatus:
    # By the /dev/null side, not unidiff's is_added_file/is_removed_file: with -U0 those
    # take a hunk that empties the top of a file ("@@ -1,9 +0,0 @@") for a deletion.
    if patched.source_file.rstrip("\t") == _NO_FILE:
        return "added"
    if patched.target_file.rstrip("\t") == _NO_FILE:
        return "deleted"
    return "renamed" if patched.is_rename else "modified"


def _strip_side(name: str) -> str:
    """``a/pkg/x.py`` -> ``pkg/x.py``; git may leave a tab after names with spaces."""
    name = name.rstrip("\t")
    if name != _NO_FILE and name.startswith(_SIDE_PREFIXES):
        return name[2:]
    return name
