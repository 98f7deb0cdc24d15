"""Where Python's syntax calls a dunder method: ``a in b`` runs ``b.__contains__``.

A dunder method is rarely called by its name: the interpreter calls it for an operator,
a statement or a builtin. :func:`syntax_uses` finds those places in a Python file with
Python's own parser (``ast``) and says, for each, which operand is asked for which
method, in the order Python falls back (``str(x)`` runs ``__str__``, else ``__repr__``;
``x in s`` ``__contains__``, else ``__iter__``). Found when a file is indexed (the
``syntax_uses`` table), so that no process parses every file again; which class an
operand holds, and so which method runs, is the graph's question
(:mod:`pr_context.graph.syntax`). Pure: takes text, reads nothing.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterator

from pr_context.models import SyntaxUse
from pr_context.variables import parse_python

__all__ = ["BUILTIN_CALLS", "STANDARD_CALLS", "Names", "is_dunder", "syntax_uses"]

Names = tuple[str, ...]  # the methods Python tries, in order: the first the class has runs
_EQ, _NE = ("__eq__",), ("__ne__", "__eq__")  # object.__ne__ inverts __eq__
_TRUTH: Names = ("__bool__", "__len__")
_ITER: Names = ("__iter__", "__getitem__")
_TEXT: Names = ("__str__", "__repr__")  # object.__str__ calls repr()
_FORMAT: Names = ("__format__", "__str__", "__repr__")  # object.__format__ calls str()
_HASH: Names = ("__hash__",)
# operator -> (left operand's method, right operand's reflected one)
_COMPARISONS: dict[type[ast.cmpop], tuple[Names, Names]] = {
    ast.Eq: (_EQ, _EQ), ast.NotEq: (_NE, _NE),
    ast.Lt: (("__lt__",), ("__gt__",)), ast.Gt: (("__gt__",), ("__lt__",)),
    ast.LtE: (("__le__",), ("__ge__",)), ast.GtE: (("__ge__",), ("__le__",)),
}
_OPERATORS: dict[type[ast.operator], str] = {
    ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.MatMult: "matmul",
    ast.Div: "truediv", ast.FloorDiv: "floordiv", ast.Mod: "mod", ast.Pow: "pow",
    ast.LShift: "lshift", ast.RShift: "rshift", ast.BitOr: "or", ast.BitXor: "xor",
    ast.BitAnd: "and",
}
_UNARY: dict[type[ast.unaryop], Names] = {
    ast.USub: ("__neg__",), ast.UAdd: ("__pos__",), ast.Invert: ("__invert__",),
    ast.Not: _TRUTH,
}
# builtin -> what it runs on each positional argument
BUILTIN_CALLS: dict[str, Names] = {
    "len": ("__len__",), "iter": _ITER, "next": ("__next__",), "aiter": ("__aiter__",),
    "anext": ("__anext__",), "reversed": ("__reversed__", "__len__"), "str": _TEXT,
    "repr": ("__repr__",), "ascii": ("__repr__",), "format": _FORMAT, "print": _TEXT,
    "hash": _HASH, "bool": _TRUTH, "abs": ("__abs__",), "int": ("__int__", "__index__"),
    "float": ("__float__", "__index__"), "complex": ("__complex__", "__float__"),
    "bytes": ("__bytes__", "__iter__"), "round": ("__round__",), "dir": ("__dir__",),
    "divmod": ("__divmod__",), "list": _ITER, "tuple": _ITER, "set": _ITER,
    "frozenset": _ITER, "sorted": _ITER, "sum": _ITER, "min": _ITER, "max": _ITER,
    "any": _ITER, "all": _ITER, "enumerate": _ITER, "zip": _ITER, "dict": _ITER,
}
# standard-library functions (by the dotted name they bind to) -> what they run
STANDARD_CALLS: dict[str, Names] = {
    "copy.copy": ("__copy__", "__reduce_ex__", "__reduce__"),
    "copy.deepcopy": ("__deepcopy__", "__reduce_ex__", "__reduce__"),
    "pickle.dumps": ("__reduce_ex__", "__reduce__", "__getstate__"),
    "pickle.dump": ("__reduce_ex__", "__reduce__", "__getstate__"),
    "operator.index": ("__index__",), "math.floor": ("__floor__",),
    "math.ceil": ("__ceil__",), "math.trunc": ("__trunc__",),
}
_EVERY_ARGUMENT = frozenset({"print", "zip"})
_LITERALS = (ast.Constant, ast.JoinedStr, ast.Lambda, ast.List, ast.Tuple, ast.Dict, ast.Set,
             ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_CONVERSIONS = {ord("r"): ("__repr__",), ord("a"): ("__repr__",), ord("s"): _TEXT}


def is_dunder(name: str) -> bool:
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def syntax_uses(text: str) -> tuple[SyntaxUse, ...]:
    """Every place in ``text`` (Python source) where syntax calls a dunder method of an
    operand; nothing when the text does not parse."""
    tree = parse_python(text)
    if tree is None:
        return ()
    finder = _Finder(text)
    handlers = {name[len("visit_"):]: getattr(finder, name) for name in dir(finder)
                if name.startswith("visit_")}
    for node in _walk(tree):
        handler = handlers.get(type(node).__name__)
        if handler is not None:
            handler(node)
    return tuple(finder.found)


# Nodes that are leaves to the walk: no handler, and nothing with one inside them (a
# name's context, an operator). A table of constants is most of some files.
_LEAVES = (ast.Constant, ast.Name, ast.expr_context, ast.operator, ast.cmpop, ast.unaryop,
           ast.boolop)
# Every other class of node, looked up by a value's exact class (ast.parse makes no
# subclasses): cheaper than two isinstance calls per value of a few hundred thousand.
_INNER = frozenset(kind for kind in vars(ast).values() if isinstance(kind, type)
                   and issubclass(kind, ast.AST) and not issubclass(kind, _LEAVES))


def _walk(tree: ast.AST) -> Iterator[ast.AST]:
    """``ast.walk``'s nodes in its order (breadth first), leaving out ``_LEAVES``."""
    todo = deque([tree])
    while todo:
        node = todo.popleft()
        for field in node._fields:
            value = getattr(node, field, None)
            if type(value) is list:
                todo.extend([v for v in value if type(v) in _INNER])
            elif type(value) in _INNER:
                todo.append(value)  # type: ignore[arg-type]  # an AST node: in _INNER
        yield node


class _Finder:
    """Collects :class:`SyntaxUse` items while walking a module's tree."""

    def __init__(self, text: str) -> None:
        # ast's offsets count UTF-8 bytes; ast.get_source_segment splits the whole text
        # on every call, so the lines are split once here
        self.lines = [line.encode() for line in text.splitlines(keepends=True)]
        self.found: list[SyntaxUse] = []

    def segment(self, node: ast.expr) -> str | None:
        """The source text of ``node``."""
        end_line, end_column = node.end_lineno, node.end_col_offset
        if end_line is None or end_column is None or end_line > len(self.lines):
            return None
        first, last = node.lineno - 1, end_line - 1
        if first == last:
            return self.lines[first][node.col_offset:end_column].decode(errors="replace")
        parts = [self.lines[first][node.col_offset:], *self.lines[first + 1:last],
                 self.lines[last][:end_column]]
        return b"".join(parts).decode(errors="replace")

    def use(self, node: ast.expr, names: Names, syntax: str, callee: str | None = None
            ) -> None:
        if isinstance(node, _LITERALS):
            return  # a literal's class is a builtin's
        operand = self.segment(node)
        if operand:
            self.found.append(SyntaxUse(node.lineno, node.col_offset, operand, names,
                                        syntax, callee))

    def truth(self, node: ast.expr, syntax: str) -> None:
        """``node`` is tested for truth; an ``and``, ``or`` or ``not`` tests its parts."""
        if isinstance(node, ast.BoolOp):
            return  # visit_BoolOp tests each value
        if not isinstance(node, ast.Compare) and not (
                isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not)):
            self.use(node, _TRUTH, syntax)

    def visit_Compare(self, node: ast.Compare) -> None:
        left = node.left
        for op, right in zip(node.ops, node.comparators, strict=True):
            symbol = _symbol(op)
            if isinstance(op, ast.In | ast.NotIn):
                self.use(right, ("__contains__", *_ITER), f"`{symbol}`")
                self.use(left, _EQ, f"`{symbol}`")  # the container compares its items
                self.use(left, _HASH, f"`{symbol}`")  # a set or dict hashes it first
            elif type(op) in _COMPARISONS:
                own, reflected = _COMPARISONS[type(op)]
                self.use(left, own, f"`{symbol}`")
                self.use(right, reflected, f"`{symbol}`")
            left = right

    def visit_Subscript(self, node: ast.Subscript) -> None:
        name = {ast.Store: "__setitem__", ast.Del: "__delitem__"}.get(
            type(node.ctx), "__getitem__")
        self.use(node.value, (name,), "`[]`")
        if not isinstance(node.slice, ast.Slice | ast.Tuple):
            self.use(node.slice, _HASH, "`[]`")  # a dict's key

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) \
                and isinstance(node.left.value, str):
            for value in _formatted(node.right):
                self.use(value, _TEXT, "`%` formatting")
        else:
            name = _OPERATORS[type(node.op)]
            self.use(node.left, (f"__{name}__",), f"`{_symbol(node.op)}`")
            self.use(node.right, (f"__r{name}__",), f"`{_symbol(node.op)}`")

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        name = _OPERATORS[type(node.op)]
        symbol = f"`{_symbol(node.op)}=`"
        target = node.target
        self.use(target, (f"__i{name}__", f"__{name}__"), symbol)
        self.use(node.value, (f"__r{name}__",), symbol)
        if isinstance(target, ast.Subscript):  # x[k] += 1 reads the item, then sets it
            self.use(target.value, ("__getitem__",), "`[]`")

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        self.use(node.operand, _UNARY[type(node.op)], f"`{_symbol(node.op)}`")

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        for value in node.values:
            self.truth(value, f"`{_symbol(node.op)}`")

    def visit_If(self, node: ast.If) -> None:
        self.truth(node.test, "`if`")

    def visit_While(self, node: ast.While) -> None:
        self.truth(node.test, "`while`")

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self.truth(node.test, "`if`")

    def visit_Assert(self, node: ast.Assert) -> None:
        self.truth(node.test, "`assert`")

    def visit_For(self, node: ast.For) -> None:
        self.use(node.iter, _ITER, "`for`")
        self.unpacked(node.target, node.iter)

    def visit_AsyncFor(self, node: ast.AsyncFor) -> None:
        self.use(node.iter, ("__aiter__",), "`async for`")

    def visit_comprehension(self, node: ast.comprehension) -> None:
        self.use(node.iter, ("__aiter__",) if node.is_async else _ITER, "comprehension")
        for test in node.ifs:
            self.truth(test, "comprehension")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            self.unpacked(target, node.value)

    def unpacked(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Tuple | ast.List):
            self.use(value, _ITER, "unpacking")

    def visit_Starred(self, node: ast.Starred) -> None:
        if isinstance(node.ctx, ast.Load):
            self.use(node.value, _ITER, "`*`")

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            self.use(item.context_expr, ("__enter__",), "`with`")
            self.use(item.context_expr, ("__exit__",), "`with`")

    def visit_AsyncWith(self, node: ast.AsyncWith) -> None:
        for item in node.items:
            self.use(item.context_expr, ("__aenter__",), "`async with`")
            self.use(item.context_expr, ("__aexit__",), "`async with`")

    def visit_Await(self, node: ast.Await) -> None:
        self.use(node.value, ("__await__",), "`await`")

    def visit_FormattedValue(self, node: ast.FormattedValue) -> None:
        self.use(node.value, _CONVERSIONS.get(node.conversion, _FORMAT), "f-string")

    def visit_Set(self, node: ast.Set) -> None:
        for item in node.elts:
            self.use(item, _HASH, "a set display")

    def visit_Dict(self, node: ast.Dict) -> None:
        for key in node.keys:
            if key is not None:
                self.use(key, _HASH, "a dict display")

    def visit_Call(self, node: ast.Call) -> None:
        self.use(node.func, ("__call__",), "a call")  # an instance called like a function
        if isinstance(node.func, ast.Attribute) and node.func.attr == "format" and \
                isinstance(node.func.value, ast.Constant):
            for arg in node.args:
                self.use(arg, _FORMAT, "str.format()")
        callee = self.segment(node.func)
        if callee and isinstance(node.func, ast.Name | ast.Attribute):
            arguments = [a for a in node.args if not isinstance(a, ast.Starred)]
            # print and zip use every argument alike; the others (len, str, copy.copy)
            # the first: min(a, b) compares, format(x, spec) formats x
            for arg in arguments if callee in _EVERY_ARGUMENT else arguments[:1]:
                self.use(arg, (), f"{callee}()", callee)


def _formatted(right: ast.expr) -> list[ast.expr]:
    """The values a ``%`` format string receives."""
    if isinstance(right, ast.Tuple):
        return list(right.elts)
    if isinstance(right, ast.Dict):
        return [v for v in right.values if v is not None]
    return [right]


_SYMBOLS: dict[type[ast.AST], str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
    ast.In: "in", ast.NotIn: "not in", ast.Add: "+", ast.Sub: "-", ast.Mult: "*",
    ast.MatMult: "@", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%", ast.Pow: "**",
    ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitXor: "^", ast.BitAnd: "&",
    ast.USub: "-", ast.UAdd: "+", ast.Invert: "~", ast.Not: "not", ast.And: "and",
    ast.Or: "or",
}


def _symbol(op: ast.AST) -> str:
    return _SYMBOLS.get(type(op), type(op).__name__)
