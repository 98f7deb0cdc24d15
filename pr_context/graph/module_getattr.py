"""Who calls a module's ``__getattr__`` (PEP 562): reads of the names it serves.

Python calls a module-level ``def __getattr__(name)`` when code reads a name the module
does not define: ``module.OrderedMultiDict`` or ``from module import OrderedMultiDict``
(a deprecated name kept alive, a lazy import). No site names ``__getattr__`` itself, so
its callers are the reads of the names its body compares its parameter with
(``name == "X"``, ``name in ("X", "Y")``), on the module: attribute reads whose receiver
is the module, and imports of those names from it (they run at the import line). Pure:
reads the tables and the function's source lines.
"""

from __future__ import annotations

import ast
import textwrap
from collections.abc import Iterator

from pr_context.graph.names import import_target, resolve_in
from pr_context.graph.tables import Def, Site, Tables
from pr_context.variables import parse_python

__all__ = ["is_module_getattr", "served_by", "served_names", "served_reads"]


def is_module_getattr(d: Def) -> bool:
    """A Python module's own ``__getattr__`` (not a class's)."""
    return d.language == "python" and d.name == "__getattr__" and d.parent is None \
        and d.kind == "function"


def served_by(tables: Tables, d: Def) -> frozenset[str]:
    """The names a module's ``__getattr__`` serves, from its source lines in ``tables``."""
    lines = tables.lines.get(d.path, {})
    return served_names("\n".join(lines.get(n, "") for n in range(d.start_line,
                                                                  d.end_line + 1)))


def served_names(source: str) -> frozenset[str]:
    """The names a ``__getattr__(name)`` function's source compares its parameter with;
    empty when it compares with none (it serves names it computes: nothing to match)."""
    tree = parse_python(textwrap.dedent(source))
    function = next((n for n in tree.body
                     if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)),
                    None) if tree is not None else None
    if function is None or not function.args.args:
        return frozenset()
    parameter = function.args.args[0].arg
    return frozenset(name for node in ast.walk(function) if isinstance(node, ast.Compare)
                     for name in _compared(node, parameter))


def _compared(node: ast.Compare, parameter: str) -> Iterator[str]:
    """The string constants ``parameter == "X"`` or ``parameter in ("X", ...)`` names."""
    if not (isinstance(node.left, ast.Name) and node.left.id == parameter):
        return
    for op, right in zip(node.ops, node.comparators, strict=False):
        values = right.elts if isinstance(op, ast.In) and isinstance(
            right, ast.Tuple | ast.List | ast.Set) else [right] if isinstance(op, ast.Eq) else []
        yield from (v.value for v in values
                    if isinstance(v, ast.Constant) and isinstance(v.value, str))


def served_reads(tables: Tables, d: Def, served: frozenset[str]) -> list[Site]:
    """Where the names ``served`` are read from ``d``'s module, as sites in path and line
    order: attribute reads on the module, and import lines (inside the function that
    imports, or at module level)."""
    module = tables.file_module.get(d.path, "")
    # a name the module defines is found without __getattr__
    served = frozenset(n for n in served if f"{module}.{n}" not in tables.definitions)
    if not module or not served:
        return []
    found = [s for s in tables.sites
             if s.name in served and s.receiver is not None and s.language == "python"
             and resolve_in(tables, s.path, s.enclosing, s.receiver) == module]
    for path, imports in tables.imports.items():
        found += [Site(path, "python", imp.name, "attribute", None, imp.line, 0,
                       _innermost(tables, path, imp.line))
                  for imp in imports
                  if imp.name in served and tables.file_language.get(path) == "python"
                  and import_target(tables, path, imp) == f"{module}.{imp.name}"]
    return sorted(found, key=lambda s: (s.path, s.line, s.column))


def _innermost(tables: Tables, path: str, line: int) -> str | None:
    """The innermost definition of ``path`` whose lines hold ``line`` (None: module)."""
    around = [d for d in tables.definitions.values()
              if d.path == path and d.start_line <= line <= d.end_line]
    return min(around, key=lambda d: d.end_line - d.start_line).qualified_name \
        if around else None
