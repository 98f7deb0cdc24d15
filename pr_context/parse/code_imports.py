"""Imports from the import nodes the tag query found, one :class:`Import` per name.

Modules are kept as written, without quotes: ``os.path``, ``./util``, ``fmt``, and for
Rust ``std::collections`` (``::`` kept). JavaScript default imports have name
``default``; namespace and wildcard imports have name ``*``; side-effect imports, Go
imports, ``require()`` bound to one variable and Rust ``extern crate`` have name None.
Re-exports with a source (``export {a} from './b'``) count as imports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from pr_context.models import Import
from pr_context.parse.code_defs import first_named_child, node_text

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = ["imports_from"]

_QUOTES = "\"'`"
_RUST_PATHS = frozenset({"identifier", "scoped_identifier", "crate", "self", "super"})


def imports_from(node: Node, src: bytes, language: str) -> list[Import]:
    """The imports one import statement (or ``require()`` call) makes."""
    return list(_READERS[language](node, src, node.start_point.row + 1))


def _text(node: Node | None, src: bytes) -> str | None:
    return None if node is None else node_text(node, src)


def _python(node: Node, src: bytes, line: int) -> Iterator[Import]:
    if node.type == "import_statement":
        for name in node.children_by_field_name("name"):
            module, alias = _python_alias(name, src)
            yield Import(module, None, alias, 0, line)
        return
    module, level = _python_from(node.child_by_field_name("module_name"), src)
    for name in node.children_by_field_name("name"):
        imported, alias = _python_alias(name, src)
        yield Import(module, imported, alias, level, line)
    if any(child.type == "wildcard_import" for child in node.named_children):
        yield Import(module, "*", None, level, line)


def _python_alias(node: Node, src: bytes) -> tuple[str, str | None]:
    if node.type == "aliased_import":
        name = node.child_by_field_name("name") or node
        return node_text(name, src), _text(node.child_by_field_name("alias"), src)
    return node_text(node, src), None


def _python_from(module: Node | None, src: bytes) -> tuple[str, int]:
    """(module without dots, number of dots); ``__future__`` has no module field."""
    if module is None:
        return "__future__", 0
    if module.type != "relative_import":
        return node_text(module, src), 0
    prefix = next((c for c in module.children if c.type == "import_prefix"), None)
    dotted = next((c for c in module.named_children if c.type == "dotted_name"), None)
    level = node_text(prefix, src).count(".") if prefix is not None else 0
    return _text(dotted, src) or "", level


def _ecma(node: Node, src: bytes, line: int) -> Iterator[Import]:
    if node.type == "call_expression":
        yield from _ecma_call(node, src, line)
        return
    source = _unquote(_ecma_source(node), src)
    bindings = list(_ecma_bindings(node, src))
    if not bindings:
        yield Import(source, None, None, 0, line)
    for name, alias in bindings:
        yield Import(source, name, alias, 0, line)


def _ecma_source(node: Node) -> Node | None:
    """The module string; TypeScript's ``import x = require('m')`` keeps it in the clause."""
    source = node.child_by_field_name("source")
    for child in node.named_children if source is None else ():
        if child.type == "import_require_clause":
            source = child.child_by_field_name("source")
    return source


def _ecma_bindings(node: Node, src: bytes) -> Iterator[tuple[str | None, str | None]]:
    """(name, alias) pairs of an import or re-export clause."""
    for child in node.named_children:
        if child.type in {"import_clause", "export_clause", "named_imports"}:
            yield from _ecma_bindings(child, src)
        elif child.type in {"import_specifier", "export_specifier"}:
            name = node_text(child.child_by_field_name("name") or child, src)
            yield name, _text(child.child_by_field_name("alias"), src)
        elif child.type in {"namespace_import", "namespace_export"}:
            yield "*", _text(first_named_child(child), src)
        elif child.type == "identifier" and node.type == "import_clause":
            yield "default", node_text(child, src)
        elif child.type == "import_require_clause":
            yield None, _text(first_named_child(child), src)
    named = {c.type for c in node.named_children}
    if node.type == "export_statement" and not named & {"export_clause", "namespace_export"}:
        yield "*", None  # ``export * from './m'``: the query only tags exports with a source


def _ecma_call(node: Node, src: bytes, line: int) -> Iterator[Import]:
    """``require('m')`` and ``import('m')``, with what a declaration binds the result to."""
    arguments = node.child_by_field_name("arguments")
    module = _unquote(first_named_child(arguments), src)
    target = node.parent.child_by_field_name("name") if node.parent is not None else None
    if node.parent is None or node.parent.type != "variable_declarator" or target is None:
        yield Import(module, None, None, 0, line)
    elif target.type == "identifier":
        yield Import(module, None, node_text(target, src), 0, line)
    else:
        for name, alias in _destructured(target, src):
            yield Import(module, name, alias, 0, line)


def _destructured(pattern: Node, src: bytes) -> Iterator[tuple[str, str | None]]:
    for child in pattern.named_children:
        if child.type == "pair_pattern":
            key, value = child.child_by_field_name("key"), child.child_by_field_name("value")
            yield node_text(key or child, src), _text(value, src)
        elif child.type == "shorthand_property_identifier_pattern":
            yield node_text(child, src), None


def _unquote(node: Node | None, src: bytes) -> str:
    return "" if node is None else node_text(node, src).strip(_QUOTES)


def _go(node: Node, src: bytes, line: int) -> Iterator[Import]:
    path = _unquote(node.child_by_field_name("path"), src)
    yield Import(path, None, _text(node.child_by_field_name("name"), src), 0, line)


def _java(node: Node, src: bytes, line: int) -> Iterator[Import]:
    names = (c for c in node.named_children if c.type in {"scoped_identifier", "identifier"})
    path = next((node_text(c, src) for c in names), "")
    if any(child.type == "asterisk" for child in node.children):
        yield Import(path, "*", None, 0, line)
    else:
        module, _, name = path.rpartition(".")
        yield Import(module, name, None, 0, line)


def _rust(node: Node, src: bytes, line: int) -> Iterator[Import]:
    if node.type == "extern_crate_declaration":
        name = _text(node.child_by_field_name("name"), src) or ""
        yield Import(name, None, _text(node.child_by_field_name("alias"), src), 0, line)
        return
    argument = node.child_by_field_name("argument")
    if argument is not None:
        yield from _use_tree(argument, "", src, line)


def _use_tree(node: Node, prefix: str, src: bytes, line: int) -> Iterator[Import]:
    """Flatten ``a::{b, c::d as e, f::*}`` into one Import per leaf."""
    if node.type in _RUST_PATHS:
        yield _rust_path(_join_path(prefix, node_text(node, src)), None, line)
    elif node.type == "use_as_clause":
        path = _join_path(prefix, _text(node.child_by_field_name("path"), src) or "")
        yield _rust_path(path, _text(node.child_by_field_name("alias"), src), line)
    elif node.type == "use_wildcard":
        module = _join_path(prefix, _text(first_named_child(node), src) or "")
        yield Import(module, "*", None, 0, line)
    elif node.type == "scoped_use_list":
        inner = _join_path(prefix, _text(node.child_by_field_name("path"), src) or "")
        listed = node.child_by_field_name("list")
        if listed is not None:
            yield from _use_tree(listed, inner, src, line)
    elif node.type == "use_list":
        for child in node.named_children:
            yield from _use_tree(child, prefix, src, line)


def _join_path(prefix: str, path: str) -> str:
    return f"{prefix}::{path}" if prefix and path else prefix or path


def _rust_path(path: str, alias: str | None, line: int) -> Import:
    module, _, name = path.rpartition("::")
    if not module or name == "self":
        return Import(module or name, None, alias, 0, line)
    return Import(module, name, alias, 0, line)


_READERS: dict[str, Callable[[Node, bytes, int], Iterator[Import]]] = {
    "python": _python,
    "javascript": _ecma,
    "typescript": _ecma,
    "tsx": _ecma,
    "go": _go,
    "java": _java,
    "rust": _rust,
}
