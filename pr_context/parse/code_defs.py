"""Definitions from tag-query matches: nesting, qualified names, signatures, docstrings.

A :class:`Site` is any node the query tagged ``@definition.<capture>``: the definitions of
:data:`~pr_context.models.DefKind`, plus Rust ``impl`` and ``mod`` blocks and TypeScript
namespaces, which only qualify the names inside them (``capture`` ``impl``/``module``).
A ``function`` whose nearest enclosing site is class-like is a method; Go methods are
qualified by their receiver type, Rust ``impl`` methods by the implemented type.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pr_context.models import Definition, DefKind

if TYPE_CHECKING:
    from tree_sitter import Node

    from pr_context.parse.code_lang import LanguageSpec

__all__ = ["DefinitionTag", "Site", "collect_sites", "end_row", "first_named_child", "node_text"]

# (pattern index, capture kind, definition node, name node) from one query match.
DefinitionTag = tuple[int, str, "Node", "Node"]
# Sites a ``function`` is a method of.
_CLASS_LIKE = frozenset({"class", "struct", "interface", "trait", "enum", "type", "impl"})
_SCOPES = frozenset({"impl", "module"})
_KINDS: dict[str, DefKind] = {
    "function": "function", "method": "method", "class": "class", "struct": "struct",
    "interface": "interface", "trait": "trait", "enum": "enum", "type": "type",
}
# Definitions whose function (or class) is a child node: ``const f = () => {}``.
_VALUE_FIELDS = {
    "variable_declarator": "value",
    "public_field_definition": "value",
    "field_definition": "value",
    "assignment_expression": "right",
}
# Expressions a JavaScript/TypeScript function may sit in, as the value of a definition.
_FUNCTION_HOLDERS = frozenset(
    {"parenthesized_expression", "as_expression", "satisfies_expression", "call_expression"})
_FUNCTION_TYPES = frozenset({"arrow_function", "function_expression", "generator_function"})
_UNWRAPPED_HOLDERS = _FUNCTION_HOLDERS - {"call_expression"}  # a call's own arguments stop
_PARAMETER_NAMES = frozenset(
    {"identifier", "shorthand_property_identifier_pattern", "property_identifier"}
)
_NOT_PARAMETERS = frozenset(
    {"self_parameter", "this", "comment", "line_comment", "block_comment", "keyword_separator",
     "positional_separator", "receiver_parameter", "variadic_parameter"}
)
# Parameters named by their last named child: ``*args``, ``...rest``, ``String... rest``.
_REST_PARAMETERS = frozenset(
    {"list_splat_pattern", "dictionary_splat_pattern", "rest_pattern", "spread_parameter"}
)
_SELF_NAMES = frozenset({"self", "cls"})
_TYPE_NAMES = frozenset({"type_identifier", "identifier", "primitive_type", "field_identifier"})
# Comments that document the file or the enclosing item, never the next definition.
_INNER_DOC_PREFIXES = ("//!", "/*!")
_SIGNATURE_TRAILERS = " \t:;{"
_COMMENT_TYPES = frozenset({"comment", "line_comment", "block_comment"})
_COMMENT_MARKERS = (b"#", b"//", b"/*")  # without one, a signature has no comment to drop
_QUOTES = "\"'`"


@dataclass(eq=False)
class Site:
    """A definition or naming scope found in the tree, in source order."""

    node: Node
    capture: str  # function, method, class, ..., impl, module
    name: str
    name_byte: int  # where the name is written; -1 for ``impl`` (its name is a type use)
    outer: Node  # ``node`` plus wrappers: decorators, ``export``, ``const x =``
    body: Node | None
    start_row: int  # 0-based; includes decorators, annotations and Rust attributes
    chunk_row: int  # 0-based; also includes the comments right above
    end_row: int
    signature_byte: int  # where the declaration starts after decorators and annotations
    signature_row: int
    signature_end_row: int  # last row before the body
    parent: Site | None = None
    qualified: str = ""
    signature: str = ""
    definition: Definition | None = None
    children: list[Site] = field(default_factory=list)

    @property
    def is_container(self) -> bool:
        """Whether the site holds members (class-like or a scope) rather than code."""
        return self.capture in _CLASS_LIKE or self.capture == "module"


def node_text(node: Node, src: bytes) -> str:
    """The source text of ``node``."""
    return src[node.start_byte : node.end_byte].decode("utf-8", "replace")


def first_named_child(node: Node | None) -> Node | None:
    """The first named child, or None (``Node.named_child`` raises when there is none)."""
    return node.named_child(0) if node is not None and node.named_child_count else None


def end_row(node: Node) -> int:
    """The last row ``node`` has text on (a node ending at column 0 ends the row before)."""
    row, column = node.end_point
    return row - 1 if column == 0 and row > node.start_point.row else row


def collect_sites(
    tags: list[DefinitionTag],
    wrappers: dict[int, Node],
    src: bytes,
    spec: LanguageSpec,
    module: str,
) -> list[Site]:
    """Sites from definition tags, nested, qualified and turned into Definitions.

    ``wrappers`` maps a node's ``id`` to the node the query tagged as wrapping it.
    """
    sites = _unique_sites(tags, wrappers, src, spec)
    _nest(sites)
    for site in sites:
        _describe(site, src, spec, module)
    return sites


def _unique_sites(
    tags: list[DefinitionTag], wrappers: dict[int, Node], src: bytes, spec: LanguageSpec
) -> list[Site]:
    """One site per node: where patterns overlap (Go ``type_spec``) the first pattern wins."""
    best: dict[int, DefinitionTag] = {}
    for tag in tags:
        node_id = tag[2].id
        if node_id not in best or tag[0] < best[node_id][0]:
            best[node_id] = tag
    ordered = sorted(best.values(), key=lambda tag: (tag[2].start_byte, -tag[2].end_byte))
    return [_site(node, kind, name, wrappers, src, spec) for _, kind, node, name in ordered]


def _site(
    node: Node, capture: str, name: Node, wrappers: dict[int, Node], src: bytes, spec: LanguageSpec
) -> Site:
    outer = _outer(node, wrappers, spec)
    start_row, chunk_row = _leading_rows(outer, spec)
    body = _body(node)
    signature_start = _signature_start(outer, spec)
    signature_row = signature_start.start_point.row
    last_row = end_row(outer)
    return Site(
        node=node,
        capture=capture,
        name=_site_name(capture, name, src),
        name_byte=-1 if capture == "impl" else name.start_byte,
        outer=outer,
        body=body,
        start_row=start_row,
        chunk_row=chunk_row,
        end_row=last_row,
        signature_byte=signature_start.start_byte,
        signature_row=signature_row,
        signature_end_row=_signature_end_row(signature_row, body, last_row, spec),
    )


def _site_name(capture: str, name: Node, src: bytes) -> str:
    if capture == "impl":
        return _base_type_name(name, src)
    text = node_text(name, src)
    return text.strip(_QUOTES) if capture == "module" else text  # ``declare module 'x'``


def _outer(node: Node, wrappers: dict[int, Node], spec: LanguageSpec) -> Node:
    """Climb through wrappers that hold nothing but this definition (and decorators).

    The query tags wrappers because ``Node.parent`` searches down from the root.
    """
    outer = node
    wrapper = wrappers.get(outer.id)
    while wrapper is not None:
        if any(c.id != outer.id and c.type not in spec.decorators for c in wrapper.named_children):
            break
        outer = wrapper
        wrapper = wrappers.get(outer.id)
    return outer


def _leading_rows(outer: Node, spec: LanguageSpec) -> tuple[int, int]:
    """(start row with attributes, chunk row with the comments directly above too)."""
    start = chunk = outer.start_point.row
    leading = spec.attributes | spec.comments
    sibling = outer.prev_sibling
    while sibling is not None and sibling.type in leading:
        if end_row(sibling) < chunk - 1 or _trails_code(sibling):
            break
        chunk = sibling.start_point.row
        if sibling.type in spec.attributes:
            start = chunk
        sibling = sibling.prev_sibling
    return start, chunk


def _trails_code(comment: Node) -> bool:
    """Whether ``comment`` ends a line of code (``x = 1  // why``) rather than leads one."""
    previous = comment.prev_sibling
    return previous is not None and end_row(previous) == comment.start_point.row


def _leading_comments(site: Site, src: bytes, spec: LanguageSpec) -> list[str]:
    comments: list[str] = []
    sibling = site.outer.prev_sibling
    while sibling is not None and sibling.start_point.row >= site.chunk_row:
        if sibling.type in spec.comments:
            comments.append(node_text(sibling, src))
        sibling = sibling.prev_sibling
    return comments[::-1]


def _body(node: Node) -> Node | None:
    return _function(node).child_by_field_name("body")


def _function(node: Node) -> Node:
    """The function or class node a definition node holds (itself, mostly)."""
    field_name = _VALUE_FIELDS.get(node.type)
    value = node.child_by_field_name(field_name) if field_name is not None else None
    while value is not None and value.type in _FUNCTION_HOLDERS:
        value = _held_function(value)
    return node if value is None else value


def _held_function(holder: Node) -> Node | None:
    """``(f) as F``, ``forwardRef(f)``: the function inside, or the next wrapper of it
    (the tag query matched only such values)."""
    inner = (holder.child_by_field_name("arguments") if holder.type == "call_expression"
             else holder)
    children = inner.named_children if inner is not None else []
    return next((c for c in children if c.type in _FUNCTION_TYPES
                 or c.type in _UNWRAPPED_HOLDERS), None)


def _signature_start(outer: Node, spec: LanguageSpec) -> Node:
    """The first node of the declaration after decorators and annotations."""
    for child in outer.children:
        if child.type in spec.decorators:
            continue
        if child.type != "modifiers":
            return child
        for modifier in child.children:
            if modifier.type not in spec.decorators:
                return modifier
    return outer


def _signature_end_row(start: int, body: Node | None, last: int, spec: LanguageSpec) -> int:
    if body is None:
        return last
    row = body.start_point.row
    return max(start, row - 1) if spec.indented else row


def _nest(sites: list[Site]) -> None:
    """Set each site's parent: sites are sorted by start, so a stack of open ones does it."""
    stack: list[Site] = []
    for site in sites:
        while stack and stack[-1].node.end_byte <= site.node.start_byte:
            stack.pop()
        if stack:
            site.parent = stack[-1]
            stack[-1].children.append(site)
        stack.append(site)


def _describe(site: Site, src: bytes, spec: LanguageSpec, module: str) -> None:
    """Fill in the qualified name, signature and Definition of one site."""
    owner = site.parent.qualified if site.parent is not None else module
    if site.capture == "method" and site.parent is None:
        owner = _join(module, _receiver_type(site.node, src))
    site.qualified = _join(owner, site.name)
    site.signature = _signature(site, src)
    if site.capture in _SCOPES:
        return
    is_method = site.parent is not None and site.parent.capture in _CLASS_LIKE
    kind = "method" if site.capture == "function" and is_method else _KINDS[site.capture]
    function_like = kind in {"function", "method"}
    has_owner = site.parent is not None or site.capture == "method"
    site.definition = Definition(
        name=site.name,
        qualified_name=site.qualified,
        kind=kind,
        signature=site.signature,
        parameters=_parameters(site.node, src, spec) if function_like else (),
        docstring=_docstring(site, src, spec),
        start_line=site.start_row + 1,
        end_line=site.end_row + 1,
        parent=(owner or None) if has_owner else None,
    )


def _join(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _receiver_type(node: Node, src: bytes) -> str:
    receiver = node.child_by_field_name("receiver")
    parameter = first_named_child(receiver)
    kind = parameter.child_by_field_name("type") if parameter is not None else None
    return _base_type_name(kind, src) if kind is not None else ""


def _base_type_name(node: Node, src: bytes) -> str:
    """``Point`` for ``Point<T>``, ``*Store[K, V]``, ``&'a mut geo::Point``."""
    current: Node | None = node
    while current is not None and current.type not in _TYPE_NAMES:
        current = (
            current.child_by_field_name("name")
            or current.child_by_field_name("type")
            or first_named_child(current)
        )
    return node_text(current if current is not None else node, src)


def _signature(site: Site, src: bytes) -> str:
    """Declaration text from after the decorators up to the body, whitespace collapsed.

    Comments inside it (``**kwargs: Any,  # noqa: B902``) are left out: once the lines
    are joined, a comment would swallow the rest of the signature.
    """
    start = site.signature_byte
    body = site.body
    end = body.start_byte if body is not None and body.start_byte > start else site.outer.end_byte
    pieces, cursor = [], start
    has_comment = any(marker in src[start:end] for marker in _COMMENT_MARKERS)
    for comment_start, comment_end in (_comment_spans(site.outer, start, end)
                                       if has_comment else ()):
        pieces.append(src[cursor:comment_start])
        cursor = comment_end
    pieces.append(src[cursor:end])
    text = " ".join(b" ".join(pieces).decode("utf-8", "replace").split())
    if body is None and "{" in text:
        text = text[: text.index("{")]
    return text.rstrip(_SIGNATURE_TRAILERS)


def _comment_spans(node: Node, start: int, end: int) -> list[tuple[int, int]]:
    """Byte spans of the comment nodes under ``node`` that lie within [start, end)."""
    spans, stack = [], [node]
    while stack:
        current = stack.pop()
        if current.end_byte <= start or current.start_byte >= end:
            continue
        if current.type in _COMMENT_TYPES:
            spans.append((max(current.start_byte, start), min(current.end_byte, end)))
        else:
            stack.extend(current.children)
    return sorted(spans)


def _parameters(node: Node, src: bytes, spec: LanguageSpec) -> tuple[str, ...]:
    function = _function(node)
    holder = function.child_by_field_name("parameters") or function.child_by_field_name("parameter")
    if holder is None:
        return ()
    nodes = holder.named_children if holder.type not in _PARAMETER_NAMES else [holder]
    names = [name for child in nodes for name in _parameter_names(child, src)]
    if spec.indented and names and names[0] in _SELF_NAMES:
        names = names[1:]
    return tuple(names)


def _parameter_names(node: Node, src: bytes) -> list[str]:
    """Names bound by one parameter; a destructuring pattern is named by its text."""
    if node.type in _PARAMETER_NAMES:
        return [node_text(node, src)]
    if node.type in _NOT_PARAMETERS:
        return []
    names = node.children_by_field_name("name")
    if names:
        return [name for child in names for name in _parameter_names(child, src)]
    inner = node.child_by_field_name("pattern") or node.child_by_field_name("left")
    if inner is None and node.type in _REST_PARAMETERS and node.named_child_count:
        inner = node.named_child(node.named_child_count - 1)
    if inner is None and node.type == "typed_parameter":
        inner = first_named_child(node)
    if inner is not None:
        return _parameter_names(inner, src)
    if node.child_by_field_name("type") is not None:
        return []  # an unnamed parameter: Go ``func(int)``
    return [" ".join(node_text(node, src).split())]


def _docstring(site: Site, src: bytes, spec: LanguageSpec) -> str | None:
    if spec.indented:
        return _python_docstring(site.body, src)
    lines = [line for raw in _leading_comments(site, src, spec) for line in _comment_lines(raw)]
    return "\n".join(lines).strip() or None


def _python_docstring(body: Node | None, src: bytes) -> str | None:
    string = first_named_child(body)
    if string is not None and string.type == "expression_statement":
        string = first_named_child(string)
    if string is None or string.type != "string":
        return None
    raw = node_text(string, src).lstrip("rRbBuUfF")
    for quote in ('"""', "'''", '"', "'"):
        if len(raw) >= 2 * len(quote) and raw.startswith(quote) and raw.endswith(quote):
            return inspect.cleandoc(raw[len(quote) : -len(quote)]) or None
    return None


def _comment_lines(raw: str) -> list[str]:
    """A comment's text without ``//``, ``///``, ``/** */`` markers and leading ``*``."""
    if raw.startswith(_INNER_DOC_PREFIXES):
        return []
    if raw.startswith("/*"):
        inner = raw[2:-2] if raw.endswith("*/") else raw[2:]
        return [line.strip().removeprefix("*").strip() for line in inner.lstrip("*").split("\n")]
    return [raw.lstrip("/#").strip()]
