"""The oracle's view of Python source, from the standard library's ``ast`` only.

Independent of pr-context's own parser on purpose: the oracle must not share the
mistakes of what it grades. Pure functions over source text:

- :func:`changed_functions`: the functions and methods of the base text whose own code
  (nested functions left out, docstrings ignored) differs at head or is gone;
- :func:`own_lines`: the lines of a function's body that run when it is called (its
  ``def`` and decorator lines run at import, its nested functions' bodies when those are
  called);
- :func:`module_name` and :func:`imported_modules`: for the import-closure baseline.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import PurePosixPath

__all__ = ["Function", "changed_functions", "functions_of", "imported_modules",
           "module_name", "own_lines"]

_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Function:
    """A function or method: dotted name inside its module, and the lines that run when
    it is called (1-based)."""

    path: str
    qualname: str  # "Class.method", "outer.inner"
    start_line: int  # the def line (decorators excluded)
    end_line: int
    lines: tuple[int, ...]


def functions_of(path: str, text: str) -> dict[str, Function]:
    """Every function and method of ``text`` by qualname (the first of a repeated name)."""
    return {q: Function(path, q, node.lineno, node.end_lineno or node.lineno,
                        tuple(own_lines(node))) for q, node in _function_nodes(text).items()}


def _function_nodes(text: str) -> dict[str, ast.FunctionDef | ast.AsyncFunctionDef]:
    """qualname -> the first function or method of that name; {} for unparsable text."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return {}
    found: dict[str, ast.FunctionDef | ast.AsyncFunctionDef] = {}
    for qualname, node in _walk(tree, ""):
        if isinstance(node, _FUNCTIONS):
            found.setdefault(qualname, node)
    return found


def _walk(node: ast.AST, prefix: str) -> Iterator[tuple[str, ast.AST]]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _SCOPES):
            name = f"{prefix}{child.name}"
            yield name, child
            yield from _walk(child, name + ".")
        else:
            yield from _walk(child, prefix)


def own_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[int]:
    """Lines of ``node``'s body that run when it is called, nested function bodies out."""
    body = _without_docstring(node.body)
    if not body:
        return []
    lines = set(range(body[0].lineno, (node.end_lineno or node.lineno) + 1))
    for inner in ast.walk(node):
        if inner is not node and isinstance(inner, _FUNCTIONS) and inner.body:
            lines -= set(range(inner.body[0].lineno, (inner.end_lineno or 0) + 1))
    return sorted(lines)


def _without_docstring(body: list[ast.stmt]) -> list[ast.stmt]:
    first = body[0] if body else None
    if (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)):
        return body[1:]
    return body


def _fingerprints(text: str) -> dict[str, str]:
    """qualname -> a dump of the function's own code: nested defs by name only, no
    docstrings, no positions (so moving a function or reformatting it is no change)."""
    return {q: _own_dump(node) for q, node in _function_nodes(text).items()}


def _own_dump(node: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    own = _NestedByName().visit(copy.deepcopy(node))
    own.body = _without_docstring(own.body) or [ast.Pass()]
    own.name = ""  # the qualname is the key; a nested def renamed is the outer's change
    return ast.dump(own)


class _NestedByName(ast.NodeTransformer):
    """Nested functions and classes reduced to their names: their code is their own."""

    depth = 0

    def generic_visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, _SCOPES):
            self.depth += 1
            if self.depth > 1:
                self.depth -= 1
                return ast.Expr(ast.Constant(f"<{type(node).__name__} {node.name}>"))
            result = super().generic_visit(node)
            self.depth -= 1
            return result
        return super().generic_visit(node)


def changed_functions(path: str, base_text: str, head_text: str | None) -> list[Function]:
    """Base functions whose own code differs at head, or that head no longer has."""
    before = _fingerprints(base_text)
    after = _fingerprints(head_text) if head_text is not None else {}
    functions = functions_of(path, base_text)
    return [functions[q] for q, fp in before.items()
            if q in functions and after.get(q) != fp]


def module_name(path: str) -> str:
    """``src/pkg/mod.py`` -> ``pkg.mod``; ``pkg/__init__.py`` -> ``pkg``."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if len(parts) > 1 and parts[0] in {"src", "lib"}:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imported_modules(path: str, text: str) -> set[str]:
    """Absolute dotted modules ``text`` imports (``from . import x`` resolved, and both
    ``pkg.x`` and ``pkg`` for ``from pkg import x``: x may be a module)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    package = module_name(path).split(".")
    if PurePosixPath(path).name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            root = package[:len(package) - node.level + 1] if node.level else []
            base = ".".join([*root, *(node.module.split(".") if node.module else [])])
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names if alias.name != "*")
    return {m for m in found if m}
