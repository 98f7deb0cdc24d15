"""The class-level source lines of Python classes, read back from their header chunks.

The index keeps a class body only as ``class_header`` chunks: the class's lines with each
member reduced to its signature (decorators and the comments above it dropped), split
into parts that repeat the ``class`` declaration when the class is long. The graph wants
the lines between the members with their numbers (``registry = Registry()``,
``name: str``, an enum's ``RED = 1``), so a header's lines are walked beside the line
numbers: a line outside every member's lines is the class's own; inside a member's lines
(its chunks' lines, a nested class's span) the header holds only the signature, found
where a ``def`` or ``class`` line of the member's verbatim text equals the header's
next line, and read in step with it up to the member's body (the lines that equal the
header's). Nothing here reads the index.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any, Protocol

__all__ = ["class_level_lines"]

_SIGNATURE_LINE = re.compile(r"\s*(?:async\s+)?(?:def|class)\s")
_CLASS_LINE = re.compile(r"\s*class\s")
_BRACKETS = {"(": 1, "[": 1, "{": 1, ")": -1, "]": -1, "}": -1}
Rows = Sequence[tuple[Any, ...]]


class _Definition(Protocol):
    """What this module reads of a definition (graph.tables.Def)."""

    @property
    def path(self) -> str: ...

    @property
    def qualified_name(self) -> str: ...

    @property
    def parent(self) -> str | None: ...

    @property
    def start_line(self) -> int: ...

    @property
    def end_line(self) -> int: ...


def class_level_lines(verbatim: Mapping[str, Mapping[int, str]], chunks: Rows, headers: Rows,
                      definitions: Sequence[_Definition]) -> dict[str, dict[int, str]]:
    """path -> line number -> text of the class-level lines of its Python classes.

    ``verbatim`` holds the lines the definition and module chunks give as they are;
    ``chunks`` are (path, start, end, text, symbol) and ``headers`` (symbol, text,
    language, path, start, end) rows, in file order; ``definitions`` are all of them,
    redefinitions included (``if ...: class C`` ``else: class C``).
    """
    known = {path: dict(rows) for path, rows in verbatim.items()}
    spans: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
    for d in definitions:
        spans[(d.path, d.qualified_name)].append((d.start_line, d.end_line))
    first_parts: dict[tuple[str, str, int], tuple[int, list[str]]] = {}
    parts = []
    for symbol, text, language, path, start, end in headers:
        if language != "python":
            continue
        # the class this part belongs to: the (re)definition whose lines hold it
        span = next((s for s in spans.get((path, symbol), ()) if s[0] <= end and start <= s[1]),
                    (start, end))
        key = (path, symbol, span[0])
        own = text.split("\n")
        if key not in first_parts:
            first_parts[key] = (start, own)
            known.setdefault(path, {}).update(
                zip(range(start, start + _declaration_lines(own)), own, strict=False))
        else:  # a later part repeats the declaration first (not what is above it)
            first = first_parts[key][1]
            own = own[_declaration_lines(first) - _above_declaration(first):]
        parts.append((symbol, path, start, end, own))
    regions = _member_regions(chunks, first_parts, definitions)
    found: dict[str, dict[int, str]] = defaultdict(dict)
    for symbol, path, start, end, own in parts:
        found[path].update(_class_rows(start, end, own, regions.get(symbol, frozenset()),
                                       known.get(path, {})))
    return dict(found)


def _member_regions(chunks: Rows, first_parts: Mapping[tuple[str, str, int],
                                                      tuple[int, list[str]]],
                    definitions: Sequence[_Definition]) -> dict[str, frozenset[int]]:
    """class -> the lines its members take: their chunks' lines (comments and decorators
    included), and each nested class from its header's first line to its end."""
    parents = {d.qualified_name: d.parent for d in definitions}
    regions: dict[str, set[int]] = defaultdict(set)
    for _path, start, end, _text, symbol in chunks:
        parent = parents.get(symbol or "")
        if parent is not None:
            regions[parent].update(range(start, end + 1))
    ends = {(d.path, d.qualified_name, d.start_line): d.end_line for d in definitions}
    for (path, symbol, span_start), (start, _text) in first_parts.items():
        parent = parents.get(symbol)
        if parent is not None:
            regions[parent].update(range(start, ends.get((path, symbol, span_start), start) + 1))
    return {cls: frozenset(lines) for cls, lines in regions.items()}


def _class_rows(start: int, end: int, text: list[str], region: frozenset[int],
                known: Mapping[int, str]) -> dict[int, str]:
    """Line number -> text of one header part's own lines."""
    rows: dict[int, str] = {}
    index, row = 0, start
    while row <= end and index < len(text):
        if row not in region:
            rows[row] = text[index]
            index, row = index + 1, row + 1
        elif known.get(row) == text[index] and _SIGNATURE_LINE.match(text[index]):
            stop = _after_signature(text, index)
            row, index = row + stop - index, stop  # the signature's lines, in step
            # and the lines up to the body (blank ones), which the header keeps too
            while row <= end and index < len(text) and row in region and (
                    known.get(row) == text[index]):
                row, index = row + 1, index + 1
        else:
            row += 1  # a member's decorator, comment or body line: not in the header
    return rows


def _after_signature(text: list[str], index: int) -> int:
    """The index past the signature starting at ``text[index]``: lines up to the first
    one that closes every bracket opened since (``def f(a,\\n      b):``)."""
    depth = 0
    while index < len(text):
        depth += sum(_BRACKETS.get(c, 0) for c in text[index].partition("#")[0])
        index += 1
        if depth <= 0:
            break
    return index


def _declaration_lines(text: list[str]) -> int:
    """How many lines of a class header's first part reach the end of its ``class``
    declaration (comments and decorators above it included)."""
    first = _above_declaration(text)
    return 0 if first >= len(text) else _after_signature(text, first)


def _above_declaration(text: list[str]) -> int:
    """How many lines (comments, decorators) come before the ``class`` line."""
    return next((i for i, line in enumerate(text) if _CLASS_LINE.match(line)), len(text))
