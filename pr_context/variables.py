"""Module-level variables of a Python file: the constants and settings a diff can change.

``DEFAULT_ITERATIONS = 600_000`` or ``__all__ = [...]`` is no definition, yet changing
it changes behaviour; ``module_variables`` finds such assignments with Python's own
parser (the text is parsed, never run). Dunder names other than ``__all__``
(``__version__``, ``__author__``) are metadata and left out.
"""

from __future__ import annotations

import ast
import copy
import warnings
from dataclasses import dataclass
from functools import lru_cache

__all__ = ["ModuleVariable", "module_mutations", "module_variables", "parse_python",
           "parsed_python"]

_EXPORTS = "__all__"
# Parsed trees remembered (see parsed_python): more than the ~260 files a review of sphinx
# parses; a tree takes ~0.7 kB per source line.
PARSED_TEXTS = 512


@dataclass(frozen=True)
class ModuleVariable:
    """The assignments of one module-level name: lines 1-based, inclusive."""

    name: str
    start_line: int  # of its first assignment
    end_line: int  # of its last assignment
    lines: frozenset[int]  # every line of every assignment to it
    value: str  # the assigned code as an AST dump: equal when only formatting differs
    # the same without what never runs: its annotation, the type given to typing.cast;
    # equal when only those differ (Dict -> dict in cast(Type[Dict], d))
    runtime: str = ""


def module_variables(text: str) -> dict[str, ModuleVariable] | None:
    """Names assigned at module level (also inside top-level ``if``/``try``/``with``).

    None when ``text`` is not valid Python.
    """
    tree = parsed_python(text)
    if tree is None:
        return None
    spans: dict[str, list[ast.stmt]] = {}
    for statement in _module_statements(tree.body):
        for name in _assigned_names(statement):
            if not name.startswith("__") or name == _EXPORTS:
                spans.setdefault(name, []).append(statement)
    return {name: _variable(name, statements) for name, statements in spans.items()}


def parse_python(text: str) -> ast.Module | None:
    """``text`` parsed (never run) by Python's own parser; None when it is not Python, or
    too deeply nested for the parser (``-`` a hundred thousand times over: MemoryError).

    A new tree, which the caller may change (see :func:`parsed_python`). Python's
    warnings about the text (an invalid escape such as ``"\\d"``) are not shown: the
    text is the repository's, not ours.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@lru_cache(maxsize=PARSED_TEXTS)
def parsed_python(text: str) -> ast.Module | None:
    """:func:`parse_python`, remembered by text and shared: callers only read the tree.

    The walk to the tests, the readers of variables and both sides of a review ask for
    the same files again and again.
    """
    return parse_python(text)


def module_mutations(text: str) -> dict[str, frozenset[int]]:
    """Module-level statements that change a variable in place instead of rebinding it
    (``LOOPS["auto"] = LOOPS["stat"]``, ``SETTINGS.debug = True``): the variable's name ->
    the lines of those statements. Only names the module also assigns (its own variables,
    not an imported module); {} for text that is not valid Python."""
    tree = parsed_python(text)
    if tree is None:
        return {}
    statements = _module_statements(tree.body)
    own = {n for s in statements for n in _assigned_names(s)}
    found: dict[str, set[int]] = {}
    for statement in statements:
        for name in _mutated_names(statement):
            if name in own:
                found.setdefault(name, set()).update(
                    range(statement.lineno, (statement.end_lineno or statement.lineno) + 1))
    return {name: frozenset(lines) for name, lines in found.items()}


def _mutated_names(statement: ast.stmt) -> list[str]:
    targets = statement.targets if isinstance(statement, ast.Assign) else (
        [statement.target] if isinstance(statement, ast.AnnAssign | ast.AugAssign) else [])
    return [root.id for target in targets if isinstance(target, ast.Subscript | ast.Attribute)
            if isinstance(root := _root(target), ast.Name)]


def _root(node: ast.expr) -> ast.expr:
    """``a`` of ``a.b[c].d``."""
    while isinstance(node, ast.Subscript | ast.Attribute):
        node = node.value
    return node


def _module_statements(body: list[ast.stmt]) -> list[ast.stmt]:
    """Statements run at import time, outside functions and classes."""
    found: list[ast.stmt] = []
    for statement in body:
        if isinstance(statement, ast.If | ast.With):
            found += _module_statements(statement.body)
            found += _module_statements(getattr(statement, "orelse", []))
        elif isinstance(statement, ast.Try):
            for block in (statement.body, statement.orelse, statement.finalbody,
                          *(handler.body for handler in statement.handlers)):
                found += _module_statements(block)
        else:
            found.append(statement)
    return found


def _assigned_names(statement: ast.stmt) -> list[str]:
    if isinstance(statement, ast.Assign):
        return [n for target in statement.targets for n in _target_names(target)]
    if isinstance(statement, ast.AnnAssign | ast.AugAssign):
        return _target_names(statement.target)
    return []


def _target_names(target: ast.expr) -> list[str]:
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [n for element in target.elts for n in _target_names(element)]
    return []


def _variable(name: str, statements: list[ast.stmt]) -> ModuleVariable:
    lines = frozenset(line for s in statements
                      for line in range(s.lineno, (s.end_lineno or s.lineno) + 1))
    value = "\n".join(ast.dump(s, include_attributes=False) for s in statements)
    runtime = "\n".join(ast.dump(_TypesDropped().visit(copy.deepcopy(s)),
                                 include_attributes=False) for s in statements)
    return ModuleVariable(name, min(lines), max(lines), lines, value, runtime)


class _TypesDropped(ast.NodeTransformer):
    """Blanks the expressions Python evaluates for type checkers only: a variable's
    annotation and ``cast``'s type (the value is what ``cast`` returns)."""

    def visit_AnnAssign(self, node: ast.AnnAssign) -> ast.AST:
        node.annotation = ast.Constant(None)
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.AST:
        func = node.func
        name = func.id if isinstance(func, ast.Name) else (
            func.attr if isinstance(func, ast.Attribute) else "")
        if name == "cast" and node.args:
            node.args[0] = ast.Constant(None)
        self.generic_visit(node)
        return node
