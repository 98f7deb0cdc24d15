"""Dunder methods that Python's syntax calls: ``a in b`` runs ``b.__contains__``.

A dunder method is rarely called by its name: the interpreter calls it for an operator,
a statement or a builtin. :func:`~pr_context.parse.code_syntax.syntax_uses` finds
those places in a Python file when it is indexed (the ``syntax_uses`` table, read into
:attr:`Tables.syntax`) and says, for each, which operand's class is asked for which
method, in the order Python falls back (``str(x)`` runs ``__str__``, else ``__repr__``;
``x in s`` ``__contains__``, else ``__iter__``). :func:`syntax_callers`
keeps the places whose operand evidently holds an instance of an index class
(:func:`pr_context.graph.infer.infer`, as for ``x.m()``) and resolves the method through
its bases: ``b = Box(); 1 in b`` calls ``Box.__contains__``. An operand of unknown
class gives nothing: every ``==`` in a codebase would otherwise call every ``__eq__``.

What is covered: comparisons (both sides: a reflected method runs when the left one
declines), membership, subscripts (get, set, delete, and a key's ``__hash__``), binary,
augmented and unary operators, truth tests (``if x``, ``not x``, ``and``/``or``,
``assert``), iteration (``for``, comprehensions, unpacking, ``*x``), ``with`` and
``async with``, ``await``, calling an instance, string formatting (f-strings,
``str.format``, ``%``), hashing (set and dict displays), and the builtins and standard
functions that call one (``len``, ``iter``, ``str``, ``repr``, ``hash``, ``bool``,
``copy.copy``, ``copy.deepcopy``, ``pickle.dumps``...). Not covered: what a builtin
container does with its items (``sorted(xs)`` comparing them), descriptors and
``__getattr__`` (attribute reads, resolved by the graph itself), metaclass hooks.
Pure: takes tables (and, for tables read without their syntax uses, file text), reads
nothing.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from pr_context.graph.callers import GRAPH_CONFIDENCE, Caller
from pr_context.graph.infer import infer, is_local
from pr_context.graph.names import bind_name, method_in
from pr_context.graph.tables import Def, Tables
from pr_context.models import SyntaxUse
from pr_context.parse.code_syntax import (
    BUILTIN_CALLS,
    STANDARD_CALLS,
    Names,
    is_dunder,
    syntax_uses,
)

__all__ = ["SyntaxCallers", "SyntaxUse", "is_dunder", "syntax_callers", "syntax_uses"]


# -- resolution -----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Placed:
    """A use with where it is: its file, its innermost definition, the names it may run."""

    path: str
    scope: Def | None
    use: SyntaxUse
    names: Names


@dataclass
class SyntaxCallers:
    """The places whose syntax calls a dunder method on an operand that evidently holds an
    instance of its class (or of a subclass inheriting it), each a resolved
    :class:`Caller` of kind ``syntax``.

    The uses come from ``tables.syntax`` (stored by the index); for tables made without
    them, ``read_text(path)`` gives a file's text (None: unreadable) and every Python file
    is parsed on the first question. Each use's operand is inferred only when a method it
    may run is asked for.
    """

    tables: Tables
    read_text: Callable[[str], str | None]
    _by_name: dict[str, list[_Placed]] | None = None
    _by_path: dict[str, list[_Placed]] | None = None
    _resolved: dict[int, tuple[str, Caller] | None] = field(default_factory=dict)

    def of(self, qualified_name: str) -> tuple[Caller, ...]:
        """The syntax calling the method ``qualified_name`` (none for any other name)."""
        d = self.tables.definitions.get(qualified_name)
        if d is None or d.kind != "method" or not is_dunder(d.name):
            return ()
        found = (self._resolve(placed) for placed in self._uses().get(d.name, ()))
        return tuple(hit[1] for hit in found if hit is not None and hit[0] == qualified_name)

    def names_in(self, path: str) -> dict[str | None, frozenset[str]]:
        """innermost definition (None: module level) -> the dunder names the syntax in
        its own code may call, whatever the operands' classes."""
        found: dict[str | None, set[str]] = defaultdict(set)
        for placed in self._uses_by_path().get(path, ()):
            found[placed.scope.qualified_name if placed.scope else None].update(placed.names)
        return {scope: frozenset(names) for scope, names in found.items()}

    def _uses(self) -> dict[str, list[_Placed]]:
        if self._by_name is None:
            self._by_name = _uses_by_name(self.tables, self.read_text)
        return self._by_name

    def _uses_by_path(self) -> dict[str, list[_Placed]]:
        if self._by_path is None:
            grouped: dict[str, dict[int, _Placed]] = defaultdict(dict)
            for placed in (p for uses in self._uses().values() for p in uses):
                grouped[placed.path][id(placed)] = placed
            self._by_path = {path: list(uses.values()) for path, uses in grouped.items()}
        return self._by_path

    def _resolve(self, placed: _Placed) -> tuple[str, Caller] | None:
        key = id(placed)  # one use is listed under each name it may run
        if key not in self._resolved:
            self._resolved[key] = _resolved(self.tables, placed)
        return self._resolved[key]


def syntax_callers(tables: Tables, read_text: Callable[[str], str | None]
                   ) -> dict[str, tuple[Caller, ...]]:
    """Every dunder method of ``tables`` with the syntax calling it (see
    :class:`SyntaxCallers`, which answers one method at a time)."""
    found = SyntaxCallers(tables, read_text)
    methods = [q for q, d in tables.definitions.items()
               if d.kind == "method" and d.language == "python" and is_dunder(d.name)]
    return {q: callers for q in methods if (callers := found.of(q))}


def _uses_by_name(tables: Tables, read_text: Callable[[str], str | None]
                  ) -> dict[str, list[_Placed]]:
    """name -> the uses of every Python file that may run a method of that name, for the
    dunder names some class of the index defines (no file is read when none does)."""
    wanted = frozenset(d.name for d in tables.definitions.values()
                       if d.kind == "method" and d.language == "python" and is_dunder(d.name))
    defs: dict[str, list[Def]] = defaultdict(list)
    for d in [*tables.definitions.values(), *tables.shadowed]:
        defs[d.path].append(d)
    by_name: dict[str, list[_Placed]] = defaultdict(list)
    for path in sorted(p for p, lang in tables.file_language.items() if lang == "python"):
        scopes = _Scopes.of(defs.get(path, []))
        for use in _file_uses(tables, path, read_text) if wanted else ():
            scope = scopes.at(use.line)
            names = use.names or _called_names(
                tables, path, scope.qualified_name if scope else None, use.callee or "")
            placed = _Placed(path, scope, use, names)
            for name in wanted.intersection(names):
                by_name[name].append(placed)
    return dict(by_name)


def _file_uses(tables: Tables, path: str, read_text: Callable[[str], str | None]
               ) -> tuple[SyntaxUse, ...]:
    """The uses the index stored for ``path``, or those its text has when the tables were
    made without them."""
    if tables.syntax is not None:
        return tables.syntax.get(path, ())
    text = read_text(path)
    return syntax_uses(text) if text is not None else ()


def _resolved(tables: Tables, placed: _Placed) -> tuple[str, Caller] | None:
    """(the method the use runs, its caller), when the operand's class is evident."""
    path, scope, use = placed.path, placed.scope, placed.use
    held = infer(tables, path, scope, use.line, use.operand)
    if held is None or held.kind != "instance":
        return None
    method = next((m for name in placed.names if (m := method_in(tables, held.target, name))),
                  None)
    if method is None:
        return None
    reason = f"{use.syntax} on {_short(use.operand)}, {held.how}, runs {method}"
    return method, Caller(path, use.line, use.column, scope.qualified_name if scope else None,
                          "graph", GRAPH_CONFIDENCE, reason, kind="syntax")


def _called_names(tables: Tables, path: str, enclosing: str | None, callee: str) -> Names:
    """What a call of ``callee`` runs on its argument: a builtin nothing rebinds, or a
    standard function by the name its import binds (``copy.copy``, ``deepcopy``)."""
    head, _, rest = callee.partition(".")
    binding = bind_name(tables, path, enclosing, head)
    if binding is None:
        local = is_local(tables, enclosing, head)
        return BUILTIN_CALLS.get(callee, ()) if not rest and not local else ()
    return STANDARD_CALLS.get(".".join(p for p in (binding.target, rest) if p), ())


def _short(text: str, limit: int = 40) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


@dataclass(frozen=True)
class _Scopes:
    """The innermost definition around each line of one file."""

    by_line: Mapping[int, Def]

    @staticmethod
    def of(definitions: Iterable[Def]) -> _Scopes:
        defs = sorted(definitions, key=lambda d: (d.start_line, -d.end_line))
        by_line: dict[int, Def] = {}
        for d in defs:  # an inner definition starts later and overwrites its lines
            by_line.update(dict.fromkeys(range(d.start_line, d.end_line + 1), d))
        return _Scopes(by_line)

    def at(self, line: int) -> Def | None:
        return self.by_line.get(line)

