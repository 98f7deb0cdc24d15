"""What each MCP tool does, over the library: search, symbols, callers, tests, docs,
change impact, file ranges and the index's status.

Every function takes a :class:`View` (the index with the working tree overlaid) and
returns a schema model before the budget is applied; ``server.py`` adds the budget,
the deadline and the transport. Nothing here writes a file of the repository.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import PurePosixPath
from typing import get_args

from pr_context.errors import BadInputError
from pr_context.mcp.bounds import Deadline, cap_line, snippet_of
from pr_context.mcp.paths import is_secret_path
from pr_context.mcp.schemas import WORKTREE, Item, Omitted, ToolResult
from pr_context.mcp.workspace import View
from pr_context.models import Role
from pr_context.pipeline import Searcher
from pr_context.report import EvidenceItem, SymbolReport
from pr_context.retrieve import SearchHit
from pr_context.review import analyse_definitions
from pr_context.symbols import NamedDefinition, definitions_named, first_line

__all__ = [
    "MAX_DEFINITIONS",
    "answer",
    "find_callers",
    "find_docs",
    "find_symbol",
    "find_tests",
    "search_code",
    "snippet",
]

MAX_DEFINITIONS = 5  # definitions answered for an ambiguous bare name
_ROLES = frozenset(get_args(Role))
_REASON_SIGNALS = 3  # signals named in a search hit's reason
# Scores of a definition found by name: the whole qualified name, its dotted tail, or
# only the short name (which other definitions may share).
_NAME_SCORES = {"qualified": 1.0, "suffix": 0.9, "name": 0.8}
_Part = Callable[[SymbolReport], Sequence[EvidenceItem]]


def answer(view: View, items: Sequence[Item], notes: Iterable[str] = ()) -> ToolResult:
    """A result of ``items`` (secret-looking files left out) with the view's state."""
    kept = [item for item in items if not is_secret_path(item.path)]
    return ToolResult(items=kept, truncated=False, omitted=Omitted(), rendering="full",
                      revision=view.revision, stale=view.stale,
                      notes=[*view.notes, *notes])


def search_code(view: View, searcher: Searcher, query: str, limit: int,
                path_prefix: str | None, role: str | None) -> ToolResult:
    """Hybrid search over the overlaid index, optionally within a folder or a role."""
    if not query.strip():
        raise BadInputError("query is empty: say what to look for")
    if role is not None and role not in _ROLES:
        raise BadInputError(f"unknown role {role!r}: one of {', '.join(sorted(_ROLES))}")
    prefix = _prefix(path_prefix)
    corpus = view.corpus
    filtered = prefix is not None or role is not None
    # Filters apply after ranking, so a filtered search ranks more candidates first.
    wanted = min(len(corpus.chunks), limit * 20 if filtered else limit) or 1
    outcome = searcher.search(corpus, query, wanted)
    hits = [h for h in outcome.hits if _within(h.path, prefix) and role in (None, h.role)]
    notes = [outcome.message] if outcome.message else []
    return answer(view, [_hit_item(view, h) for h in hits[:limit]], notes)


def find_symbol(view: View, name: str, limit: int) -> ToolResult:
    """Definitions by qualified or short name, with signature and docstring summary."""
    definitions = _named(view, name)
    items = [Item(path=d.path, start_line=d.start_line, end_line=d.end_line,
                  revision=view.revision_of(d.path), symbol=d.qualified_name, role=d.role,
                  score=_NAME_SCORES[_match(d, name)], reason=_match_reason(d, name),
                  kind=d.kind, signature=cap_line(d.signature, 400),
                  doc=first_line(d.docstring),
                  snippet=snippet(view, d.path, d.start_line, d.end_line))
             for d in definitions[:limit]]
    notes = [] if len(definitions) <= limit else [
        f"{len(definitions)} definitions match {name!r}; the first {limit} are listed"]
    return answer(view, items, notes)


def find_callers(view: View, symbol: str, limit: int, deadline: Deadline) -> ToolResult:
    """Call sites of the definitions ``symbol`` names, resolved through the graph."""
    return _evidence(view, symbol, limit, deadline, lambda r: r.callers)


def find_tests(view: View, symbol: str, limit: int, deadline: Deadline) -> ToolResult:
    """Tests linked to the definitions ``symbol`` names."""
    return _evidence(view, symbol, limit, deadline, lambda r: r.tests)


def find_docs(view: View, symbol: str, limit: int, deadline: Deadline) -> ToolResult:
    """Documentation that mentions the definitions ``symbol`` names."""
    return _evidence(view, symbol, limit, deadline, lambda r: r.docs)


def snippet(view: View, path: str, start: int, end: int, revision: str | None = None
            ) -> str | None:
    """The first lines of ``path`` from ``start`` (bounded), secrets redacted."""
    lines = view.lines(path, revision or view.revision_of(path))
    if not lines or start < 1:
        return None
    return snippet_of(lines[start - 1:end])


def evidence_item(view: View, e: EvidenceItem, of: str | None) -> Item:
    """A review's evidence item as a tool item, WORKTREE where the overlay holds it."""
    revision = view.revision_of(e.path) if e.revision == view.revision else e.revision
    how = next(iter(e.signals), None) if e.line is not None else None
    return Item(path=e.path, start_line=e.start_line, end_line=e.end_line,
                revision=revision, symbol=e.symbol, role=e.role, score=round(e.score, 4),
                reason=e.reason, line=e.line, how=how, of=of,
                needs_update=e.needs_update or None,
                snippet=snippet(view, e.path, e.line or e.start_line, e.end_line, revision))


def _evidence(view: View, symbol: str, limit: int, deadline: Deadline,
              part: _Part) -> ToolResult:
    definitions = _named(view, symbol)
    chosen = definitions[:MAX_DEFINITIONS]
    reports = analyse_definitions(view.repo, view.side, chosen, deadline.remaining())
    items = [evidence_item(view, e, r.qualified_name)
             for r in reports for e in part(r)[:limit]]
    return answer(view, items, _ambiguity(symbol, definitions, reports))


def _named(view: View, name: str) -> list[NamedDefinition]:
    """The definitions ``name`` designates. :raises BadInputError: none."""
    with view.store() as store:
        found = definitions_named(store, name)
    if not found:
        raise BadInputError(f"no function, method or class named {name!r} in the index of "
                            f"{view.revision[:12]} or the working tree")
    return found


def _ambiguity(name: str, definitions: Sequence[NamedDefinition],
               reports: Sequence[SymbolReport]) -> list[str]:
    notes = []
    if len(definitions) > 1:
        answered = ", ".join(d.qualified_name for d in definitions[:MAX_DEFINITIONS])
        notes.append(f"{name!r} names {len(definitions)} definitions; answered for each of "
                     f"{answered} (each item's 'of' says which)")
    skipped = [r.qualified_name for r in reports if not r.analysed]
    if skipped:
        notes.append(f"the deadline ran out before {', '.join(skipped)} was analysed")
    return notes


def _match(d: NamedDefinition, name: str) -> str:
    name = name.strip()
    if d.qualified_name == name:
        return "qualified"
    return "suffix" if "." in name and d.qualified_name.endswith("." + name) else "name"


def _match_reason(d: NamedDefinition, name: str) -> str:
    match = _match(d, name)
    if match == "qualified":
        return f"{d.kind} whose qualified name is {name}"
    if match == "suffix":
        return f"{d.kind} whose qualified name ends with {name}"
    return f"{d.kind} named {d.name}"


def _hit_item(view: View, hit: SearchHit) -> Item:
    revision = view.revision_of(hit.path)
    return Item(path=hit.path, start_line=hit.start_line, end_line=hit.end_line,
                revision=revision, symbol=hit.symbol, role=hit.role,
                score=round(hit.score, 4), reason=_hit_reason(hit), kind=hit.kind,
                snippet=snippet(view, hit.path, hit.start_line, hit.end_line, revision))


def _hit_reason(hit: SearchHit) -> str:
    parts = sorted(((v, k) for k, v in hit.components.items() if k != "cosine" and v > 0),
                   reverse=True)[:_REASON_SIGNALS]
    said = ", ".join(f"{name} {value:.3f}" for value, name in parts) or "fused rank"
    cosine = hit.components.get("cosine")
    similar = f"; similarity {cosine:.2f}" if cosine is not None else ""
    where = "; from the working tree" if hit.revision == WORKTREE else ""
    return f"{hit.kind} matched by {said}{similar}{where}"


def _prefix(path_prefix: str | None) -> str | None:
    if path_prefix is None or path_prefix.strip() in ("", ".", "./"):
        return None
    pure = PurePosixPath(path_prefix.strip().replace("\\", "/"))
    if pure.is_absolute() or ".." in pure.parts:
        raise BadInputError(f"path_prefix {path_prefix!r} must be a relative folder or "
                            "file inside the repository")
    return pure.as_posix()


def _within(path: str, prefix: str | None) -> bool:
    return prefix is None or path == prefix or path.startswith(prefix.rstrip("/") + "/")
