"""Per-language tables for :mod:`pr_context.parse.code`: node types and tag queries.

The tag queries live in ``pr_context/queries/*.scm`` and are data: a language's query is
the concatenation of the files named in its :class:`LanguageSpec`. Everything here is
read-only and cached; nothing parses source.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Literal

from tree_sitter import Query
from tree_sitter_language_pack import get_language

__all__ = ["LANGUAGE_SPECS", "LanguageSpec", "PatternRole", "TagQuery", "tag_query"]

_QUERY_PACKAGE = "pr_context"
_QUERY_DIR = "queries"
_CAPTURE = re.compile(r"@([\w.]+)")
_DEFINITION = "definition."
_REFERENCE = "name.reference."

PatternKind = Literal["definition", "reference", "import", "skip", "none"]
_PLAIN_ROLES: tuple[PatternKind, ...] = ("import", "skip")


@dataclass(frozen=True)
class LanguageSpec:
    """What the generic extraction code needs to know about one grammar."""

    query_files: tuple[str, ...]
    # Nodes that only wrap a definition (``export``, decorators, ``const`` around an
    # arrow function): the definition's lines and chunk grow to include them.
    wrappers: frozenset[str]
    comments: frozenset[str]
    # Skipped at the start of a signature; Java annotations sit inside ``modifiers``.
    decorators: frozenset[str] = frozenset()
    # Items preceded by sibling attribute nodes (Rust ``#[derive]``) start there.
    attributes: frozenset[str] = frozenset()
    # Python: the body is an indented block and the docstring its first statement.
    indented: bool = False


_ECMA_WRAPPERS = frozenset(
    {"export_statement", "lexical_declaration", "variable_declaration", "ambient_declaration",
     "expression_statement"}
)
_ECMA_DECORATORS = frozenset({"decorator", "comment"})

LANGUAGE_SPECS: dict[str, LanguageSpec] = {
    "python": LanguageSpec(
        query_files=("python",),
        wrappers=frozenset({"decorated_definition"}),
        comments=frozenset({"comment"}),
        decorators=frozenset({"decorator", "comment"}),
        indented=True,
    ),
    "javascript": LanguageSpec(
        query_files=("ecmascript", "javascript", "jsx"),
        wrappers=_ECMA_WRAPPERS,
        comments=frozenset({"comment"}),
        decorators=_ECMA_DECORATORS,
    ),
    "typescript": LanguageSpec(
        query_files=("ecmascript", "typescript"),
        wrappers=_ECMA_WRAPPERS,
        comments=frozenset({"comment"}),
        decorators=_ECMA_DECORATORS,
    ),
    "tsx": LanguageSpec(
        query_files=("ecmascript", "typescript", "jsx"),
        wrappers=_ECMA_WRAPPERS,
        comments=frozenset({"comment"}),
        decorators=_ECMA_DECORATORS,
    ),
    "go": LanguageSpec(
        query_files=("go",),
        wrappers=frozenset({"type_declaration"}),
        comments=frozenset({"comment"}),
    ),
    "java": LanguageSpec(
        query_files=("java",),
        wrappers=frozenset(),
        comments=frozenset({"line_comment", "block_comment"}),
        decorators=frozenset({"annotation", "marker_annotation", "line_comment", "block_comment"}),
    ),
    "rust": LanguageSpec(
        query_files=("rust",),
        wrappers=frozenset(),
        comments=frozenset({"line_comment", "block_comment"}),
        decorators=frozenset({"attribute_item", "line_comment", "block_comment"}),
        attributes=frozenset({"attribute_item"}),
    ),
}


@dataclass(frozen=True)
class PatternRole:
    """What one query pattern tags, read once from its captures."""

    role: PatternKind
    kind: str  # ``function``, ``class``, ... for definitions; ``call``, ``type``, ... for references
    capture: str  # the capture holding the tagged node
    name_capture: str = ""  # definitions: the capture holding the name


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
    captures = _CAPTURE.findall(pattern.decode("utf-8"))
    for capture in captures:
        if capture.startswith(_DEFINITION):
            return PatternRole("definition", capture[len(_DEFINITION) :], capture, "name." + capture)
    for capture in captures:
        if capture.startswith(_REFERENCE):
            return PatternRole("reference", capture[len(_REFERENCE) :], capture)
    for role in _PLAIN_ROLES:
        if role in captures:
            return PatternRole(role, "", role)
    return PatternRole("none", "", "")
