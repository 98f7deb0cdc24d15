"""What a change did at a Python module's top level, outside its functions and classes.

Code there runs when the module is imported, before any test, so no call path leads to
it and coverage records it under no test: the test selection falls back on the files
that import the module. Pure: parses the text with Python's own parser, never runs it.
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from typing import Literal

from pr_context.variables import parsed_python

__all__ = ["ModuleChange", "module_level_change"]

ModuleChange = Literal["imports", "code"]
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_ASSIGNMENTS = (ast.Assign, ast.AnnAssign, ast.AugAssign)


def module_level_change(text: str, lines: Collection[int]) -> ModuleChange | None:
    """``"code"`` when a changed line is in a top-level statement other than a definition,
    an import, a docstring or an assignment to a name (a variable with its own readers);
    ``"imports"`` when only imports changed there; None when nothing at top level did (or
    only inside ``if TYPE_CHECKING:``, which never runs).

    Unparsable text is ``"code"``: nothing can be ruled out.
    """
    if not lines:
        return None
    tree = parsed_python(text)
    if tree is None:
        return "code"
    return _statements_change(tree.body, set(lines), top=True)


def _statements_change(body: list[ast.stmt], lines: set[int],
                       top: bool = False) -> ModuleChange | None:
    found: ModuleChange | None = None
    for index, stmt in enumerate(body):
        first = min([stmt.lineno, *(d.lineno for d in getattr(stmt, "decorator_list", ()))])
        if not any(first <= line <= (stmt.end_lineno or stmt.lineno) for line in lines):
            continue
        if _type_checking(stmt):  # its body never runs; an else branch does
            kind = _statements_change(getattr(stmt, "orelse", []), lines)
        else:
            kind = _kind(stmt, index if top else -1)
        if kind == "code":
            return "code"
        found = found or kind
    return found


def _kind(stmt: ast.stmt, index: int) -> ModuleChange | None:
    if isinstance(stmt, _DEFINITIONS):
        return None
    if isinstance(stmt, ast.Import | ast.ImportFrom):
        return "imports"
    if index == 0 and isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) \
            and isinstance(stmt.value.value, str):
        return None  # the module docstring
    if isinstance(stmt, _ASSIGNMENTS) and all(isinstance(t, ast.Name) for t in _targets(stmt)):
        return None
    return "code"


def _targets(stmt: ast.Assign | ast.AnnAssign | ast.AugAssign) -> list[ast.expr]:
    return list(stmt.targets) if isinstance(stmt, ast.Assign) else [stmt.target]


def _type_checking(stmt: ast.stmt) -> bool:
    """``if TYPE_CHECKING:`` (or ``typing.TYPE_CHECKING``): false whenever code runs."""
    if not isinstance(stmt, ast.If):
        return False
    test = stmt.test
    name = test.id if isinstance(test, ast.Name) else (
        test.attr if isinstance(test, ast.Attribute) else "")
    return name == "TYPE_CHECKING"
