"""References from tag-query matches, each with its innermost enclosing definition.

The query may tag one identifier more than once (``b`` in ``a.b()`` is both a call and
an attribute): the kind in :data:`_PRIORITY` order wins, then the match that has a
receiver. Identifiers tagged ``@skip`` (declared type parameters, qualifiers of a dotted
type), the ``require`` of ``require('m')`` and definition names are not references; the
queries tag no node types that occur inside import statements. A ``value`` tag (Python: a
bare name passed, assigned, returned or collected) is stored as an ``attribute`` use, a
read without a call, unless a scope around it binds the name (a local, see
:mod:`pr_context.parse.code_scopes`). Columns are
tree-sitter's: 0-based **bytes** into the UTF-8 line.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pr_context.models import Reference, RefKind
from pr_context.parse.code_defs import Site, node_text
from pr_context.parse.code_scopes import Scopes

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["MAX_RECEIVER_CHARS", "ReferenceTag", "collect_references"]

# (kind, name node, receiver node) from one query match.
ReferenceTag = tuple[str, "Node", "Node | None"]

# Lower wins when one identifier is tagged twice: a called attribute is a call.
_PRIORITY: dict[str, int] = {
    "call": 0, "instantiation": 1, "type": 2, "attribute": 3, "value": 4,
}
_KINDS: dict[str, RefKind] = {
    "call": "call", "instantiation": "instantiation", "type": "type", "attribute": "attribute",
    "value": "attribute",
}
# Receivers longer than this are chained expressions no resolver can use.
MAX_RECEIVER_CHARS = 200


def collect_references(
    tags: list[ReferenceTag], skipped: set[int], src: bytes, sites: list[Site], scopes: Scopes
) -> list[Reference]:
    """References in source order; ``skipped`` are start bytes of identifiers to leave out,
    ``scopes`` tells which names read as values are locals."""
    best = _best_tags(tags)
    skipped = skipped | {site.name_byte for site in sites}
    enclosing = _Enclosing(sites)
    references: list[Reference] = []
    for start in sorted(best):
        if start in skipped:
            continue
        kind, name, receiver = best[start]
        row, column = name.start_point
        receiver_text = None if receiver is None else _receiver_text(receiver, src)
        text = node_text(name, src)
        if kind == "value" and scopes.is_local(text, start):
            continue
        # Positional arguments: this loop runs for every tagged identifier of the file.
        references.append(
            Reference(text, _KINDS[kind], receiver_text, row + 1, column, enclosing.at(start))
        )
    return references


def _best_tags(tags: list[ReferenceTag]) -> dict[int, ReferenceTag]:
    """The winning tag per identifier, keyed by start byte: by kind, then with a receiver."""
    best: dict[int, ReferenceTag] = {}
    ranks: dict[int, tuple[int, bool]] = {}
    for tag in tags:
        kind, name, receiver = tag
        start = name.start_byte
        rank = (_PRIORITY[kind], receiver is None)
        if start not in ranks or rank < ranks[start]:
            ranks[start] = rank
            best[start] = tag
    return best


def _receiver_text(receiver: Node, src: bytes) -> str:
    text = node_text(receiver, src)
    if "\n" in text:
        text = " ".join(text.split())
    return text[:MAX_RECEIVER_CHARS]


class _Enclosing:
    """Innermost enclosing site for increasing byte offsets, in one sweep."""

    def __init__(self, sites: list[Site]) -> None:
        self._sites = sites  # sorted by start byte
        self._next = 0
        self._open: list[Site] = []

    def at(self, offset: int) -> str | None:
        while self._next < len(self._sites) and self._sites[self._next].node.start_byte <= offset:
            self._push(self._sites[self._next])
            self._next += 1
        while self._open and self._open[-1].node.end_byte <= offset:
            self._open.pop()
        return self._open[-1].qualified if self._open else None

    def _push(self, site: Site) -> None:
        while self._open and self._open[-1].node.end_byte <= site.node.start_byte:
            self._open.pop()
        self._open.append(site)
