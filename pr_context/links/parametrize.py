"""How many tests pytest makes of each test function: its parametrizations (pure).

``@pytest.mark.parametrize("x", [1, 2, 3])`` runs the function three times, and stacked
decorators (on the function and on its class) multiply. The values are counted where
their number follows from the text: a list, tuple, set or dict written out; a module
name bound to one (``VERSIONS = [...]``); ``+``, ``*`` and slices of those; a
comprehension over them (its ``if`` clauses as keeping everything); ``range`` of
constants; and the ``itertools`` and built-ins that combine iterables (``product``,
``chain``, ``chain.from_iterable``, ``zip``, ``enumerate``, ``list``, ``sorted``...). A
slice whose bounds are computed at run time counts as half (an estimate); anything else
counts as one. Read with Python's own parser, never run.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping

from pr_context.variables import parsed_python

__all__ = ["parametrized_counts"]

# Calls that give as many items as their one iterable argument.
_SAME_SIZE = frozenset({"list", "tuple", "set", "frozenset", "sorted", "reversed",
                        "enumerate", "iter"})
# Names bound to other names or expressions, followed this deep.
_MAX_DEPTH = 12
_Names = Mapping[str, ast.expr]
# The attribute a counted decorator calls; an identifier spelled otherwise can only
# become it through Unicode normalization, which ASCII text cannot hold.
_PARAMETRIZE = "parametrize"


def parametrized_counts(text: str) -> dict[str, int]:
    """Dotted name within the file (``test_a``, ``TestA.test_b``) -> tests made of it, for
    the functions with parametrize decorators; {} for unparsable text."""
    if _PARAMETRIZE not in text and text.isascii():
        return {}  # most test files: no decorator can name it (spares parsing them)
    tree = parsed_python(text)
    if tree is None:
        return {}
    names = _module_names(tree)
    found: dict[str, int] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            outer = _product(node.decorator_list, names)
            for member in node.body:
                if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                    count = outer * _product(member.decorator_list, names)
                    if count > 1:
                        found[f"{node.name}.{member.name}"] = count
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            count = _product(node.decorator_list, names)
            if count > 1:
                found[node.name] = count
    return found


def _module_names(tree: ast.Module) -> dict[str, ast.expr]:
    """Names the module binds once, to the expression they are bound to."""
    bound: dict[str, ast.expr] = {}
    seen: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 \
                and isinstance(node.targets[0], ast.Name):
            name, value = node.targets[0].id, node.value
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and node.value is not None:
            name, value = node.target.id, node.value
        else:
            continue
        if name in seen:
            bound.pop(name, None)  # bound twice: which value a test sees is unknown
        else:
            bound[name] = value
        seen.add(name)
    return bound


def _product(decorators: list[ast.expr], names: _Names) -> int:
    count = 1
    for decorator in decorators:
        count *= _values(decorator, names)
    return count


def _values(decorator: ast.expr, names: _Names) -> int:
    """The number of values a ``parametrize`` decorator gives (1 when unknown)."""
    if not (isinstance(decorator, ast.Call) and isinstance(decorator.func, ast.Attribute)
            and decorator.func.attr == _PARAMETRIZE):
        return 1
    values = decorator.args[1] if len(decorator.args) > 1 else next(
        (k.value for k in decorator.keywords if k.arg == "argvalues"), None)
    size = _size(values, names, 0) if values is not None else None
    return max(size or 1, 1)


def _size(node: ast.expr, names: _Names, depth: int) -> int | None:
    """How many items iterating ``node`` gives, when the text says; None otherwise."""
    if depth > _MAX_DEPTH:
        return None
    measure = _MEASURES.get(type(node))
    return measure(node, names, depth + 1) if measure is not None else None


def _literal_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    assert isinstance(node, ast.List | ast.Tuple | ast.Set)
    sizes = [_size(e.value, names, depth) if isinstance(e, ast.Starred) else 1
             for e in node.elts]
    return None if None in sizes else sum(s for s in sizes if s is not None)


def _dict_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    assert isinstance(node, ast.Dict)
    return None if None in node.keys else len(node.keys)  # ** unpacking: unknown


def _name_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    assert isinstance(node, ast.Name)
    bound = names.get(node.id)
    return _size(bound, names, depth) if bound is not None else None


def _operation_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    assert isinstance(node, ast.BinOp)
    left, right = _size(node.left, names, depth), _size(node.right, names, depth)
    if isinstance(node.op, ast.Add) and left is not None and right is not None:
        return left + right
    if isinstance(node.op, ast.Mult):
        factor = _constant_int(node.right) if left is not None else _constant_int(node.left)
        size = left if left is not None else right
        return size * factor if size is not None and factor is not None else None
    return None


def _comprehension_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    assert isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp)
    sizes = [_size(g.iter, names, depth) for g in node.generators]
    return None if None in sizes else math.prod(s for s in sizes if s is not None)


def _call_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    assert isinstance(node, ast.Call)
    func = node.func
    name = func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")
    if name == "range":
        return _range_size(node.args)
    if name in ("items", "keys", "values") and isinstance(func, ast.Attribute) \
            and not node.args:
        return _size(func.value, names, depth)
    if name == "from_iterable" and len(node.args) == 1:
        return _flattened_size(node.args[0], names, depth)
    sizes = [_size(a, names, depth) for a in node.args]
    if not sizes or None in sizes or node.keywords:
        return None
    known = [s for s in sizes if s is not None]
    combine = _COMBINE.get(name)
    if combine is not None:
        return combine(known)
    return known[0] if name in _SAME_SIZE and len(known) == 1 else None


def _flattened_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    """How many items iterating each item of ``node`` gives in all (``chain.from_iterable``):
    a written-out list of iterables, or a comprehension making one iterable per item."""
    if isinstance(node, ast.ListComp | ast.GeneratorExp):
        outer, inner = _comprehension_size(node, names, depth), _size(node.elt, names, depth)
        return outer * inner if outer is not None and inner is not None else None
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _flattened_size(node.left, names, depth + 1)
        right = _flattened_size(node.right, names, depth + 1)
        return left + right if left is not None and right is not None else None
    parts = _elements(node, names, depth)
    sizes = [_size(p, names, depth) for p in parts] if parts is not None else [None]
    return None if None in sizes else sum(s for s in sizes if s is not None)


def _subscript_size(node: ast.expr, names: _Names, depth: int) -> int | None:
    """A slice of a sequence of known size: exact for constant bounds, else half of it
    (``VERSIONS[i + 1:]`` in a comprehension over ``enumerate(VERSIONS)``: from all of it
    down to nothing)."""
    assert isinstance(node, ast.Subscript)
    whole = _size(node.value, names, depth)
    if whole is None or not isinstance(node.slice, ast.Slice):
        return None
    parts = (node.slice.lower, node.slice.upper, node.slice.step)
    bounds = [None if p is None else _constant_int(p) for p in parts]
    if any(p is not None and b is None for p, b in zip(parts, bounds, strict=True)) \
            or bounds[2] == 0:
        return whole // 2  # bounds computed at run time: half of it on average
    return len(range(whole)[slice(*bounds)])


def _elements(node: ast.expr, names: _Names, depth: int) -> list[ast.expr] | None:
    """The items of a literal list or tuple (or a ``+`` of them, or a name bound to one),
    as expressions: ``chain.from_iterable`` iterates each."""
    if depth > _MAX_DEPTH:
        return None
    if isinstance(node, ast.List | ast.Tuple) and not any(
            isinstance(e, ast.Starred) for e in node.elts):
        return list(node.elts)
    if isinstance(node, ast.Name) and node.id in names:
        return _elements(names[node.id], names, depth + 1)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left = _elements(node.left, names, depth + 1)
        right = _elements(node.right, names, depth + 1)
        return left + right if left is not None and right is not None else None
    return None


def _range_size(args: list[ast.expr]) -> int | None:
    bounds = [_constant_int(a) for a in args]
    if not 1 <= len(bounds) <= 3 or None in bounds or bounds[2:] == [0]:
        return None
    return len(range(*[b for b in bounds if b is not None]))


def _constant_int(node: ast.expr) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


_Measure = Callable[[ast.expr, _Names, int], int | None]
_MEASURES: dict[type[ast.expr], _Measure] = {
    ast.List: _literal_size, ast.Tuple: _literal_size, ast.Set: _literal_size,
    ast.Dict: _dict_size, ast.Name: _name_size, ast.BinOp: _operation_size,
    ast.ListComp: _comprehension_size, ast.SetComp: _comprehension_size,
    ast.GeneratorExp: _comprehension_size, ast.DictComp: _comprehension_size,
    ast.Call: _call_size, ast.Subscript: _subscript_size,
}
# itertools and built-ins whose items combine their iterables' items
_COMBINE: dict[str, Callable[[list[int]], int]] = {
    "product": math.prod, "chain": sum, "zip": min, "zip_longest": max,
}
