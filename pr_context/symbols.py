"""Definitions designated by a name: qualified, a dotted suffix of one, or short.

One lookup serves ``explain`` (the review of one symbol) and the MCP server's symbol
tools, so a name means the same definitions everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass

from pr_context.index.store import IndexStore

__all__ = ["NamedDefinition", "definitions_named", "first_line"]


@dataclass(frozen=True)
class NamedDefinition:
    """A definition row with its file's role."""

    path: str
    name: str
    qualified_name: str
    kind: str
    signature: str
    docstring: str | None
    start_line: int
    end_line: int
    role: str


def definitions_named(store: IndexStore, name: str) -> list[NamedDefinition]:
    """Definitions ``name`` designates, best first.

    A qualified name that matches exactly designates only its own definitions; otherwise
    every definition whose qualified name ends with ``.name`` or whose short name is
    ``name``. Production code comes first, then the shorter path, then the earlier line.
    """
    name = name.strip()
    if not name:
        return []
    rows = store.query(
        "SELECT d.path, d.name, d.qualified_name, d.kind, d.signature, d.docstring, "
        "d.start_line, d.end_line, coalesce(f.role, 'production') "
        "FROM definitions d JOIN files f USING (path) "
        "WHERE d.qualified_name = ? OR d.qualified_name LIKE ? ESCAPE '\\' OR d.name = ?",
        [name, "%." + name.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_"),
         name])
    found = [NamedDefinition(*row) for row in rows]
    exact = [d for d in found if d.qualified_name == name]
    return sorted(exact or found, key=lambda d: (d.role != "production", len(d.path),
                                                  d.path, d.start_line))


def first_line(docstring: str | None) -> str | None:
    """The summary line of a docstring: its first non-blank line."""
    for line in (docstring or "").splitlines():
        if line.strip():
            return line.strip()
    return None
