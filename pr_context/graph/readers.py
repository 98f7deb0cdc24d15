"""Who reads a Python module-level variable: its own module and the files importing it.

A constant is no definition the graph resolves calls to, and most of its uses sit inside
expressions (``n or DEFAULT_ITERATIONS``, ``x > LIMIT``). So the files that can name it
are read from the import table (its module's files; ``from mod import NAME [as n]``;
``import mod [as m]`` then ``m.NAME``), and each is parsed with Python's own parser (never
run) for the loads of those spellings. A function that binds the name itself (an
assignment or a parameter, without ``global``) reads its own, not the module's.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pr_context.graph.callers import GRAPH_CONFIDENCE, Caller
from pr_context.graph.tables import Tables
from pr_context.parse.code_paths import absolute_module
from pr_context.variables import parsed_python

__all__ = ["MAX_READER_FILES", "readers_of"]

# A module imported everywhere would have every importer parsed; past this many files
# the rest are left out (in path order), as the review budget would be spent anyway.
MAX_READER_FILES = 200

_Scope = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda


@dataclass(frozen=True)
class _Spellings:
    """How one file names the variable: bare names, or ``receiver.NAME``."""

    bare: frozenset[str]
    receivers: frozenset[str]
    how: str  # a clause for reasons


def readers_of(tables: Tables, qualified_name: str,
               read_text: Callable[[str], str | None]) -> list[Caller]:
    """Sites that read the module-level variable ``qualified_name``, by path and line.

    ``read_text(path)`` gives a file's text at the revision of ``tables`` (None: unreadable).
    """
    module, _, name = qualified_name.rpartition(".")
    found: list[Caller] = []
    for path, spellings in sorted(_files_naming(tables, module, name).items())[
            :MAX_READER_FILES]:
        text = read_text(path)
        tree = parsed_python(text) if text is not None else None
        if tree is not None:
            found += _reads(tree, path, tables.file_module.get(path, ""), name, spellings)
    return sorted(found, key=lambda c: (c.path, c.line, c.column))


def _files_naming(tables: Tables, module: str, name: str) -> dict[str, _Spellings]:
    files = {path: _Spellings(frozenset({name}), frozenset(), "defined in the same module")
             for path in tables.modules.get(module, ())
             if tables.file_language.get(path) == "python"}
    for path, imports in tables.imports.items():
        if tables.file_language.get(path) != "python" or path in files:
            continue
        bare, receivers, lines = set(), set(), []
        for imp, source in zip(imports, _sources(tables, path), strict=True):
            if imp.name == name and source == module:
                bare.add(imp.alias or name)
            elif imp.name is None and source == module:
                receivers.add(imp.alias or source)
            elif imp.name is not None and f"{source}.{imp.name}".strip(".") == module:
                receivers.add(imp.alias or imp.name)
            else:
                continue
            lines.append(imp.line)
        if bare or receivers:
            files[path] = _Spellings(frozenset(bare), frozenset(receivers),
                                     f"imported from {module} (line {min(lines)})")
    return files


def _sources(tables: Tables, path: str) -> tuple[str, ...]:
    """The absolute module of each import of ``path``, worked out once per tables: every
    variable's readers go through every file's imports."""
    if path not in tables.import_sources:
        tables.import_sources[path] = tuple(
            absolute_module(path, imp.module, imp.level, "python")
            for imp in tables.imports.get(path, ()))
    return tables.import_sources[path]


def _reads(tree: ast.Module, path: str, module: str, name: str,
           spellings: _Spellings) -> Iterator[Caller]:
    own: dict[int, frozenset[str]] = {}  # per scope, walked once

    def shadowed(scope: _Scope, name: str) -> bool:
        if id(scope) not in own:
            own[id(scope)] = _own_names(scope)
        return name in own[id(scope)]

    for node, scopes in _loads(tree, ()):
        if isinstance(node, ast.Name):
            if node.id not in spellings.bare or any(shadowed(s, node.id) for s in scopes):
                continue
            text = node.id
        elif node.attr == name and _dotted(node.value) in spellings.receivers:
            text = f"{_dotted(node.value)}.{name}"
        else:
            continue
        named = [s.name for s in scopes if not isinstance(s, ast.Lambda)]
        enclosing = ".".join([module, *named]) if named else None
        yield Caller(path, node.lineno, node.col_offset, enclosing, "graph", GRAPH_CONFIDENCE,
                     f"reads {text}, {spellings.how}", kind="read")


def _loads(node: ast.AST, scopes: tuple[_Scope, ...]
           ) -> Iterator[tuple[ast.Name | ast.Attribute, tuple[_Scope, ...]]]:
    """Every loaded name and attribute under ``node``, with its enclosing scopes."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.Name | ast.Attribute) and isinstance(child.ctx, ast.Load):
            yield child, scopes
        inner = (*scopes, child) if isinstance(child, _Scope) else scopes
        yield from _loads(child, inner)


def _own_names(scope: _Scope) -> frozenset[str]:
    """Names a function (or class body) binds itself: its parameters and assignments."""
    if isinstance(scope, ast.ClassDef):
        return frozenset()  # a class body's names are not seen by its methods
    bound = {a.arg for a in (*scope.args.posonlyargs, *scope.args.args,
                              *scope.args.kwonlyargs, scope.args.vararg, scope.args.kwarg)
             if a is not None}
    declared: set[str] = set()
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            declared.update(node.names)
    return frozenset(bound - declared)


def _dotted(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else ""
    return ""
