"""How many tests pytest makes of each test function: its parametrizations (pure).

``@pytest.mark.parametrize("x", [1, 2, 3])`` runs the function three times, and stacked
decorators (on the function and on its class) multiply. The values are counted where
they are written out as a list or tuple literal; anything else (a name, a call) counts
as one, so the estimate errs low. Read with Python's own parser, never run.
"""

from __future__ import annotations

import ast

from pr_context.variables import parse_python

__all__ = ["parametrized_counts"]


def parametrized_counts(text: str) -> dict[str, int]:
    """Dotted name within the file (``test_a``, ``TestA.test_b``) -> tests made of it, for
    the functions with parametrize decorators; {} for unparsable text."""
    tree = parse_python(text)
    if tree is None:
        return {}
    found: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            outer = _product(node.decorator_list)
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    count = outer * _product(member.decorator_list)
                    if count > 1:
                        found[f"{node.name}.{member.name}"] = count
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            count = _product(node.decorator_list)
            if count > 1:
                found[node.name] = count
    return found


def _product(decorators: list[ast.expr]) -> int:
    count = 1
    for decorator in decorators:
        count *= _values(decorator)
    return count


def _values(decorator: ast.expr) -> int:
    """The number of values a ``parametrize`` decorator lists (1 when unknown)."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == "parametrize"):
        return 1
    values = decorator.args[1] if len(decorator.args) > 1 else next(
        (k.value for k in decorator.keywords if k.arg == "argvalues"), None)
    if isinstance(values, ast.List | ast.Tuple | ast.Set):
        return max(len(values.elts), 1)
    return 1
