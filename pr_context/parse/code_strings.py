"""String literals and format templates in code: the messages a program prints or raises.

A pasted error message is often the only thing a user has, and the code that produced it
holds it as a literal or a template: ``f"Invalid value {v!r}"`` (Python), ``"bad %s" %
x``, ``"{0} is {name}".format(...)``, ``"a" + str(b) + "c"``, JavaScript's template
literals (``${x}``), Go's ``fmt.Errorf("bad %s: %w", ...)``, Java's ``"bad " + x`` and
``String.format``, Rust's ``format!("bad {}")``. Each becomes a ``MessageTemplate``: its
literal text, with every interpolated value, format field (``{}``, ``{name!r}``) and
printf conversion (``%s``, ``%(key)d``, ``%v``) replaced by ``PLACEHOLDER``, which search
matches as a wildcard.

Kept: literals with at least ``MIN_WORDS`` words apart (a message, not a key such as
``"invalid_utf8"``, a path or a format code) and ``MIN_LITERAL_CHARS`` characters of
literal text. A module- or class-level constant's name is kept with it, so the code
using the constant is found too. Left out: docstrings and
other bare string statements (Python, JavaScript directives), and literals over
``MAX_LITERAL_CHARS`` (embedded documents). Pure; reads the parsed tree only.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from functools import cache
from typing import TYPE_CHECKING

from tree_sitter import Query, QueryCursor
from tree_sitter_language_pack import get_language

from pr_context.models import MessageTemplate

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["MAX_LITERAL_CHARS", "MIN_LITERAL_CHARS", "MIN_WORDS", "PLACEHOLDER",
           "message_templates"]

PLACEHOLDER = "\ufffc"  # an interpolated value: U+FFFC (object replacement) is no text
MIN_WORDS = 2
MIN_LITERAL_CHARS = 10
MAX_LITERAL_CHARS = 1_000
MAX_TEMPLATES_PER_FILE = 5_000  # a generated table of strings is no list of messages

_STRINGS: dict[str, frozenset[str]] = {
    "python": frozenset({"string"}),
    "javascript": frozenset({"string", "template_string"}),
    "typescript": frozenset({"string", "template_string"}),
    "tsx": frozenset({"string", "template_string"}),
    "go": frozenset({"interpreted_string_literal", "raw_string_literal"}),
    "java": frozenset({"string_literal"}),
    "rust": frozenset({"string_literal", "raw_string_literal"}),
}
_CONCATENATIONS = frozenset({"binary_operator", "binary_expression", "concatenated_string"})
_CONTENT = frozenset({"string_content", "string_fragment", "interpreted_string_literal_content",
                      "raw_string_literal_content", "multiline_string_fragment"})
_INTERPOLATIONS = frozenset({"interpolation", "template_substitution"})
# Nodes that give a value a name, with the field holding the name.
_ASSIGNMENTS = {"assignment": "left", "variable_declarator": "name", "const_spec": "name",
                "var_spec": "name", "const_item": "name", "static_item": "name"}
_FUNCTIONS = frozenset({"function_definition", "function_declaration", "method_definition",
                        "method_declaration", "function_item", "arrow_function",
                        "function_expression", "constructor_declaration", "func_literal",
                        "lambda", "closure_expression", "generator_function_declaration"})
_ESCAPES = {"n": " ", "t": " ", "r": " ", "'": "'", '"': '"', "\\": "\\", "`": "`"}
# Format fields and printf conversions: {}, {0}, {name!r:>10}, %s, %(key)d, %-5.2f, %v.
_FIELDS = re.compile(r"\{[^{}\s]*\}|%(?:\([\w.]+\))?[-+#0]*(?:\d+|\*)?(?:\.(?:\d+|\*))?"
                     r"[sdifgGeExXoucrqvwTtp]")
_WORD = re.compile(r"[A-Za-z]{2,}")


def message_templates(root: Node, src: bytes, language: str) -> list[MessageTemplate]:
    """The message templates of one file, in source order."""
    strings = _STRINGS.get(language)
    if not strings:
        return []
    found = []
    joins: dict[int, bool] = {}  # shared, so that a long chain of ``+`` is read once
    for node in _message_nodes(root, strings, joins, _string_starts(root, language)):
        template = _template(node, src, strings, joins)
        if template is not None:
            found.append(MessageTemplate(node.start_point[0] + 1, template,
                                         _constant_name(node, src)))
            if len(found) >= MAX_TEMPLATES_PER_FILE:
                break
    return found


def _message_nodes(root: Node, strings: frozenset[str], joins: dict[int, bool],
                   starts: Sequence[int]) -> Iterator[Node]:
    """Outermost string literals and concatenations holding one, in source order.

    Only subtrees holding a string literal (one of ``starts``, sorted) are entered: no
    other can hold a message, and most of a file's nodes are in them.
    """
    stack = [root]
    while stack:
        node = stack.pop()
        if node.type in strings or (node.type in _CONCATENATIONS and _concatenates(
                node, strings, joins)):
            if not _bare_statement(node):
                yield node
            continue
        stack.extend(child for child in reversed(node.children)
                     if _holds(starts, child.start_byte, child.end_byte))


def _holds(starts: Sequence[int], start: int, end: int) -> bool:
    """Whether one of ``starts`` (sorted) is in ``start..end - 1``."""
    index = bisect_left(starts, start)
    return index < len(starts) and starts[index] < end


def _string_starts(root: Node, language: str) -> list[int]:
    """Where the string literals of the tree start, sorted: found in tree-sitter's own
    code, whose query holds one node at a time (a pattern of nested nodes made it
    quadratic in the depth of ``1 + 1 + ...``)."""
    found = QueryCursor(_strings_query(language)).captures(root).get("string", [])
    return sorted(node.start_byte for node in found)


@cache
def _strings_query(language: str) -> Query:
    grammar = get_language(language)  # type: ignore[arg-type]
    kinds = sorted(k for k in _STRINGS[language] if grammar.id_for_node_kind(k, True))
    return Query(grammar, " ".join(f"({kind}) @string" for kind in kinds))


def _concatenates(node: Node, strings: frozenset[str], joins: dict[int, bool]) -> bool:
    """Whether ``node`` joins a string literal with ``+``, at any depth of ``+``s; the
    answer for it and every ``+`` under it goes into ``joins`` (by node id).

    Without recursion: ``1 + 1 + ...`` a hundred thousand times over is valid code."""
    todo = [(node, False)]
    while todo:
        current, children_known = todo.pop()
        if current.id in joins:
            continue
        if current.type == "concatenated_string":
            joins[current.id] = True
            continue
        operator = current.child_by_field_name("operator")
        if operator is None or operator.type != "+":
            joins[current.id] = False
            continue
        inner = [c for c in current.named_children
                 if c.type not in strings and c.type in _CONCATENATIONS]
        if not children_known:
            todo.append((current, True))
            todo.extend((c, False) for c in inner)
            continue
        joins[current.id] = any(c.type in strings or joins.get(c.id, False)
                                for c in current.named_children)
    return joins[node.id]


def _bare_statement(node: Node) -> bool:
    """A docstring or a directive (``"use strict"``): a string standing as a statement."""
    parent = node.parent
    if parent is None:
        return False
    if parent.type == "expression_statement":
        return parent.named_child_count == 1
    return parent.type in ("block", "module")  # Python states a docstring bare


def _constant_name(node: Node, src: bytes) -> str | None:
    """The name a module- or class-level constant gives the message, if any.

    ``MISSING = "value is missing"`` is raised wherever ``MISSING`` is used; a local
    variable is not named: the message stands in the function using it.
    """
    holder = node.parent
    if holder is not None and holder.type == "expression_list":  # Go: const X = "..."
        holder = holder.parent
    if holder is None or holder.type not in _ASSIGNMENTS:
        return None
    name = holder.child_by_field_name(_ASSIGNMENTS[holder.type])
    value = holder.child_by_field_name("right" if holder.type == "assignment" else "value")
    if name is None or name.type != "identifier" or (value is not None and value.id != node.id
                                                      and value.type != "expression_list"):
        return None
    ancestor = holder.parent
    while ancestor is not None:
        if ancestor.type in _FUNCTIONS:
            return None
        ancestor = ancestor.parent
    return src[name.start_byte:name.end_byte].decode("utf-8", "replace")


def _template(node: Node, src: bytes, strings: frozenset[str], joins: dict[int, bool]
              ) -> str | None:
    if node.end_byte - node.start_byte > MAX_LITERAL_CHARS * 2:
        return None
    text = " ".join("".join(_pieces(node, src, strings, joins)).split())
    text = _FIELDS.sub(PLACEHOLDER, text.replace("{{", "{").replace("}}", "}"))
    text = re.sub(f"{PLACEHOLDER}+", PLACEHOLDER, text).replace("%%", "%")
    literal = text.replace(PLACEHOLDER, " ")
    words = [w for w in literal.split() if _WORD.search(w)]
    if len(literal.strip()) < MIN_LITERAL_CHARS or len(words) < MIN_WORDS:
        return None
    return text[:MAX_LITERAL_CHARS]


def _pieces(node: Node, src: bytes, strings: frozenset[str], joins: dict[int, bool]
            ) -> Iterator[str]:
    """The literal text of a string or concatenation, values as placeholders."""
    if node.type in strings:
        contents = [c for c in node.children if c.type in _CONTENT | _INTERPOLATIONS
                    or c.type == "escape_sequence"]
        for child in contents:
            yield _piece(child, src)
        return
    for child in node.named_children:
        if child.type in strings or (child.type in _CONCATENATIONS and _concatenates(
                child, strings, joins)):
            yield from _pieces(child, src, strings, joins)
        elif child.type not in ("comment", "line_comment", "block_comment"):
            yield PLACEHOLDER


def _piece(node: Node, src: bytes) -> str:
    if node.type in _INTERPOLATIONS:
        return PLACEHOLDER
    text = src[node.start_byte:node.end_byte].decode("utf-8", "replace")
    if node.type == "escape_sequence":
        return _ESCAPES.get(text[1:2], "")
    return text
