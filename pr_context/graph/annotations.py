"""Python signatures and annotations read as text: parameters, return types, classes named.

An annotation names an index class (``C``, ``"C"``, ``m.C``, ``C | None``,
``Optional[C]``, ``Final[C]``, a generic ``C[int]``) or an iterable of its instances
(``list[C]``, ``Sequence[C]``, ``tuple[C, ...]``, ``Iterator[C]``). Anything else, a union
of two classes included, names nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache

from pr_context.graph.names import resolve_in
from pr_context.graph.tables import CLASS_KINDS, Tables

__all__ = [
    "Annotated", "annotated_type", "class_named", "parameter_names", "parameters",
    "return_annotation", "split_top_level",
]

_SELF_PARAMETERS = frozenset({"self", "cls"})
_OPTIONAL = re.compile(r"Optional\[(.+)\]|(.+?)\s*\|\s*None|None\s*\|\s*(.+)")
# Wrappers that declare how a name is held, not what it holds.
_QUALIFIERS = re.compile(r"(?:[\w.]+\.)?(?:Final|ClassVar|Annotated|Required|NotRequired)"
                         r"\[(.+)\]")
_GENERIC = re.compile(r"([A-Za-z_][\w.]*)\[(.+)\]")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
# Iterating one of these (typing, collections.abc or builtins) yields its first argument.
_ITERABLES = frozenset({
    "list", "List", "set", "Set", "frozenset", "FrozenSet", "tuple", "Tuple", "deque", "Deque",
    "Sequence", "MutableSequence", "AbstractSet", "MutableSet", "Collection", "Iterable",
    "Iterator", "Generator", "Reversible", "KeysView", "ValuesView",
})
_DEPTH = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}


@dataclass(frozen=True)
class Annotated:
    """An annotation's meaning: an instance of ``cls``, or an iterable of them."""

    cls: str
    iterable: bool = False


@cache
def parameters(signature: str) -> tuple[tuple[str, str | None], ...]:
    """(name, annotation) of each parameter in a ``def`` signature, ``self`` left out."""
    return tuple(_parameters(signature))


@cache
def parameter_names(signature: str) -> frozenset[str]:
    """The names of :func:`parameters`: asked of every enclosing function of every name
    inferred."""
    return frozenset(name for name, _ in parameters(signature))


def _parameters(signature: str) -> Iterator[tuple[str, str | None]]:
    inside = signature.partition("(")[2].rpartition(")")[0]
    for part in split_top_level(inside, ","):
        head, _, _default = _partition_top_level(part, "=")
        name, colon, annotation = head.partition(":")
        name = name.strip().lstrip("*")
        if name.isidentifier() and name not in _SELF_PARAMETERS:
            yield name, annotation.strip() if colon else None


def return_annotation(signature: str) -> str | None:
    """The text after ``->`` in a ``def`` signature, if any."""
    head, arrow, returned = signature.rpartition("->")
    return returned.strip().rstrip(":").strip() if arrow and ")" in head else None


def annotated_type(tables: Tables, path: str, scope: str | None,
                   annotation: str | None) -> Annotated | None:
    """What ``annotation`` names in ``path`` inside ``scope`` (None: module level)."""
    if not annotation:
        return None
    text = _unwrap(annotation)
    generic = _GENERIC.fullmatch(text)
    if generic is None:
        cls = class_named(tables, path, scope, text) if _DOTTED.fullmatch(text) else None
        return Annotated(cls) if cls else None
    outer, arguments = generic.groups()
    cls = class_named(tables, path, scope, outer)
    if cls:
        return Annotated(cls)  # a generic class of the index: C[int] is a C
    items = split_top_level(arguments, ",")
    homogeneous = len(items) == 1 or [i.strip() for i in items[1:]] == ["..."]
    if outer.rpartition(".")[2] not in _ITERABLES or not (
            homogeneous or outer.rpartition(".")[2] in {"Iterator", "Generator"}):
        return None
    item = annotated_type(tables, path, scope, items[0])
    return Annotated(item.cls, iterable=True) if item and not item.iterable else None


def class_named(tables: Tables, path: str, scope: str | None, dotted: str) -> str | None:
    """The index class ``dotted`` denotes in ``path`` inside ``scope``, or None."""
    d = tables.definitions.get(resolve_in(tables, path, scope, dotted) or "")
    return d.qualified_name if d and d.kind in CLASS_KINDS else None


def split_top_level(text: str, separator: str) -> list[str]:
    """``text`` split at each ``separator`` outside brackets."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        depth += _DEPTH.get(char, 0)
        if char == separator and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    return [*parts, "".join(current)]


def _unwrap(annotation: str) -> str:
    """``annotation`` without quotes, ``Optional``/``| None`` and qualifiers like ``Final``."""
    text = annotation.strip().strip("'\"").strip()
    while True:
        match = _OPTIONAL.fullmatch(text) or _QUALIFIERS.fullmatch(text)
        if match is None:
            return text
        inner = next(g for g in match.groups() if g)
        # Annotated[C, meta] holds a C; the qualifier's first argument is the type.
        text = split_top_level(inner, ",")[0].strip().strip("'\"").strip()


def _partition_top_level(text: str, separator: str) -> tuple[str, str, str]:
    depth = 0
    for i, char in enumerate(text):
        depth += _DEPTH.get(char, 0)
        if char == separator and depth == 0:
            return text[:i], separator, text[i + 1:]
    return text, "", ""
