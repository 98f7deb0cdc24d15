"""Per-language tables for :mod:`pr_context.parse.code`: node types and tag queries.

The tag queries live in ``pr_context/queries/*.scm`` and are data: a language's query is
the concatenation of the files named in its :class:`LanguageSpec`. Each pattern has one
role, read from its captures:

- ``@definition.<kind>`` on a definition node with ``@name.definition.<kind>`` on its name;
- ``@name.reference.<kind>`` on a used identifier, with ``@receiver`` on the text left of it;
- ``@wrapper`` on a node that may only wrap the ``@wrapped`` definition (decorators, export);
- ``@import`` on an import statement; ``@skip`` on identifiers that are no references;
- ``@scope`` on a node that opens a naming scope and ``@local`` on a name a scope binds
  (Python), so a local read as a value is not taken for a reference.

Everything here is read-only and cached; nothing parses source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Literal

from tree_sitter import Query
from tree_sitter_language_pack import get_language

__all__ = ["LANGUAGE_SPECS", "LanguageSpec", "PatternKind", "PatternRole", "TagQuery", "tag_query"]

_QUERY_PACKAGE = "pr_context"
_QUERY_DIR = "queries"
_CAPTURE = re.compile(r"@([\w.]+)")
# A pattern's byte range runs up to the next pattern, so it can hold comments.
_COMMENT = re.compile(r";[^\n]*")
_DEFINITION = "definition."
_REFERENCE = "name.reference."

PatternKind = Literal[
    "definition", "reference", "wrapper", "import", "skip", "scope", "local", "none"]
_PLAIN_ROLES: tuple[PatternKind, ...] = ("import", "skip", "scope", "local")


@dataclass(frozen=True)
class LanguageSpec:
    """What the generic extraction code needs to know about one grammar."""

    query_files: tuple[str, ...]
    comments: frozenset[str]
    # Skipped at the start of a signature; Java annotations sit inside ``modifiers``. A
    # wrapper (query capture ``@wrapper``) may hold these besides its definition.
    decorators: frozenset[str] = frozenset()
    # Items preceded by sibling attribute nodes (Rust ``#[derive]``) start there.
    attributes: frozenset[str] = frozenset()
    # Python: the body is an indented block and the docstring its first statement.
    indented: bool = False


_ECMA_DECORATORS = frozenset({"decorator", "comment"})

LANGUAGE_SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        query_files=("python",),
        comments=frozenset({"comment"}),
        decorators=frozenset({"decorator", "comment"}),
        indented=True,
    ),
    "javascript": LanguageSpec(
        query_files=("ecmascript", "javascript", "jsx"),
        comments=frozenset({"comment"}),
        decorators=_ECMA_DECORATORS,
    ),
    "typescript": LanguageSpec(
        query_files=("ecmascript", "typescript"),
        comments=frozenset({"comment"}),
        decorators=_ECMA_DECORATORS,
    ),
    "tsx": LanguageSpec(
        query_files=("ecmascript", "typescript", "jsx"),
        comments=frozenset({"comment"}),
        decorators=_ECMA_DECORATORS,
    ),
    "go": LanguageSpec(
        query_files=("go",),
        comments=frozenset({"comment"}),
    ),
    "java": LanguageSpec(
        query_files=("java",),
        comments=frozenset({"line_comment", "block_comment"}),
        decorators=frozenset({"annotation", "marker_annotation", "line_comment", "block_comment"}),
    ),
    "rust": LanguageSpec(
        query_files=("rust",),
        comments=frozenset({"line_comment", "block_comment"}),
        decorators=frozenset({"attribute_item", "line_comment", "block_comment"}),
        attributes=frozenset({"attribute_item"}),
    ),
}


@dataclass(frozen=True)
class PatternRole:
    """What one query pattern tags, read once from its captures."""

    role: PatternKind
    kind: str  # definitions: ``function``, ``class``, ...; references: ``call``, ``type``, ...
    capture: str  # the capture holding the tagged node
    name_capture: str = ""  # definitions: the name; wrappers: the wrapped definition


@dataclass(frozen=True)
class TagQuery:
    """A compiled tag query and the role of each of its patterns, by pattern index."""

    query: Query
    patterns: tuple[PatternRole, ...]


@cache
def tag_query(language: str) -> TagQuery:
    """The compiled tag query for ``language``.

    :raises KeyError: for a language without a spec.
    """
    spec = LANGUAGE_SPECS[language]
    folder = files(_QUERY_PACKAGE) / _QUERY_DIR
    source = "\n".join((folder / f"{name}.scm").read_text("utf-8") for name in spec.query_files)
    query = Query(get_language(language), source)  # type: ignore[arg-type]
    encoded = source.encode("utf-8")
    roles = tuple(
        _pattern_role(
            encoded[query.start_byte_for_pattern(index) : query.end_byte_for_pattern(index)]
        )
        for index in range(query.pattern_count)
    )
    return TagQuery(query, roles)


def _pattern_role(pattern: bytes) -> PatternRole:
    captures = _CAPTURE.findall(_COMMENT.sub("", pattern.decode("utf-8")))
    for capture in captures:
        if capture.startswith(_DEFINITION):
            kind = capture[len(_DEFINITION) :]
            return PatternRole("definition", kind, capture, "name." + capture)
    for capture in captures:
        if capture.startswith(_REFERENCE):
            return PatternRole("reference", capture[len(_REFERENCE) :], capture)
    if "wrapper" in captures:
        return PatternRole("wrapper", "", "wrapper", "wrapped")
    for role in _PLAIN_ROLES:
        if role in captures:
            return PatternRole(role, "", role)
    return PatternRole("none", "", "")
