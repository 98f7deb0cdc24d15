"""Which names a scope binds, to tell a local read as a value from a reference (Python).

The query tags scope nodes (``@scope``: functions, classes, lambdas, comprehensions) and
the names they bind (``@local``: parameters, assignment, loop, ``with`` and walrus
targets). A name bound anywhere in a function, lambda or comprehension is local to all of
it and to the functions nested in it; a name bound in a class body is local to that body
only (methods do not see it). ``def`` and ``import`` names are not locals here: the
symbol graph resolves them. Nothing here resolves what a non-local name denotes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pr_context.parse.code_defs import node_text

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["Scopes"]

_CLASS_SCOPE = "class_definition"


class Scopes:
    """Names bound per scope, asked in one sweep of increasing byte offsets."""

    def __init__(self, scopes: list[Node], bound: list[Node], src: bytes) -> None:
        unique = {(node.start_byte, node.end_byte): node for node in scopes}
        self._scopes = [unique[key] for key in sorted(unique, key=lambda k: (k[0], -k[1]))]
        self._names: list[set[str]] = [set() for _ in self._scopes]
        binding = _Sweep(self._scopes)
        for node in sorted(bound, key=lambda n: n.start_byte):
            around = binding.at(node.start_byte)
            if around:
                self._names[around[-1]].add(node_text(node, src))
        self._sweep = _Sweep(self._scopes)

    def is_local(self, name: str, offset: int) -> bool:
        """Whether ``name`` read at ``offset`` names a local of a scope around it.

        Offsets must not decrease from one call to the next.
        """
        around = self._sweep.at(offset)
        for depth, index in enumerate(reversed(around)):
            if depth and self._scopes[index].type == _CLASS_SCOPE:
                continue  # a class body's names are invisible to the code nested in it
            if name in self._names[index]:
                return True
        return False


class _Sweep:
    """The scopes open at increasing byte offsets, innermost last (indexes into ``nodes``)."""

    def __init__(self, nodes: list[Node]) -> None:
        self._nodes = nodes  # sorted by start byte, outer first
        self._next = 0
        self._open: list[int] = []

    def at(self, offset: int) -> list[int]:
        nodes = self._nodes
        while self._next < len(nodes) and nodes[self._next].start_byte <= offset:
            self._close(nodes[self._next].start_byte)
            self._open.append(self._next)
            self._next += 1
        self._close(offset)
        return self._open

    def _close(self, offset: int) -> None:
        while self._open and self._nodes[self._open[-1]].end_byte <= offset:
            self._open.pop()
