"""The tests half of ``review``: coverage evidence, and what the test selection is told.

- :func:`measure_changes`: with ``--coverage``, the bodies of the changed symbols that
  exist at the base (Python's own parser finds them in the base text) looked up in the
  user's coverage data.
- :func:`module_changes`: what each changed Python file's top level (outside functions
  and classes) had changed, on either side.

Reads file text through the caller's ``read_text`` (git blobs); runs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from pr_context.changes import ChangedSymbol
from pr_context.coverage import (
    CoverageInput,
    MeasuredCoverage,
    Wanted,
    body_lines,
    measure_symbols,
)
from pr_context.git import Repository, resolve_revision
from pr_context.index.store import IndexStore
from pr_context.links import module_level_change
from pr_context.links.module_code import ModuleChange
from pr_context.models import Sha
from pr_context.parse.code_paths import module_path

__all__ = ["coverage_key", "measure_changes", "module_changes"]

ReadText = Callable[[str, str], str | None]  # (sha, path) -> text, None when unreadable
_AT_BASE = frozenset({"modified", "removed", "renamed", "signature_changed"})


def coverage_key(change: ChangedSymbol) -> str:
    """The key a changed symbol's coverage is filed under."""
    return f"{change.old_path or change.path}::{change.old_qualified_name or change.qualified_name}"


def measure_changes(repo: Repository, given: CoverageInput, base: Sha, base_db: Path,
                    changes: Sequence[ChangedSymbol], roles: Mapping[str, str],
                    read_text: ReadText) -> MeasuredCoverage:
    """What the coverage data says of every changed symbol that exists at the base.

    :raises UnknownRevisionError: ``given.revision`` names no commit.
    :raises CoverageFileError: the data cannot be read or placed (see pr_context.coverage).
    """
    measured_rev = resolve_revision(repo, given.revision) if given.revision else base
    spans = _base_spans(base_db)
    wanted = [w for c in changes if (w := _wanted(c, spans, base, read_text)) is not None]
    tests = {p: module_path(p, "python") for p, r in roles.items()
             if r == "test" and p.endswith(".py")}
    return measure_symbols(repo, given, measured_rev, base, wanted, tests)


def _base_spans(db: Path) -> dict[tuple[str, str], tuple[int, int]]:
    with IndexStore.open_existing(db) as store:
        rows = store.query("SELECT path, qualified_name, start_line, end_line FROM definitions "
                           "ORDER BY path, ordinal")
    spans: dict[tuple[str, str], tuple[int, int]] = {}
    for path, name, start, end in rows:
        spans.setdefault((path, name), (int(start), int(end)))
    return spans


def _wanted(change: ChangedSymbol, spans: Mapping[tuple[str, str], tuple[int, int]],
            base: Sha, read_text: ReadText) -> Wanted | None:
    path = change.old_path or change.path
    name = change.old_qualified_name or change.qualified_name
    span = spans.get((path, name))
    if change.change not in _AT_BASE or span is None or not path.endswith(".py"):
        return None
    text = read_text(base, path)
    lines = body_lines(text, *span) if text is not None else frozenset()
    return Wanted(coverage_key(change), path, lines) if lines else None


def module_changes(added: Mapping[str, Iterable[int]], removed: Mapping[str, Iterable[int]],
                   roles: Mapping[str, str], base: Sha, head: Sha,
                   read_text: ReadText) -> dict[str, ModuleChange]:
    """Per changed Python file other than a test file or a conftest (their tests are
    selected whole): "code" or "imports" changed at its top level, at head (added lines)
    or at base (removed lines)."""
    found: dict[str, ModuleChange] = {}
    for sha, lines_by_path in ((head, added), (base, removed)):
        for path, lines in lines_by_path.items():
            if not path.endswith(".py") or roles.get(path) == "test" \
                    or path.endswith("conftest.py"):
                continue
            text = read_text(sha, path)
            kind = module_level_change(text, set(lines)) if text is not None else None
            if kind is not None and found.get(path) != "code":
                found[path] = kind
    return found
