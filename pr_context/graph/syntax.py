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
from collections.abc import Callable, Iterable, Iterator, Mapping
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

# What a call of a builtin or standard function (``len(x)``, ``copy.copy(x)``) may run:
# a name outside these is never run by such a call.
_CALLED_NAMES = frozenset(name for names in (*BUILTIN_CALLS.values(),
                                             *STANDARD_CALLS.values()) for name in names)


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
    them, ``read_text(path)`` gives a file's text (None: unreadable), parsed when the
    file is first asked about. A use is placed (its definition, the names it may run)
    only when a method it may run is asked for, or its file is; its operand is inferred
    only when a method it may run is asked for.
    """

    tables: Tables
    read_text: Callable[[str], str | None]
    _wanted: frozenset[str] | None = None  # the dunder names some Python class defines
    _files: dict[str, tuple[SyntaxUse, ...]] = field(default_factory=dict)
    _defs: dict[str, list[Def]] | None = None  # path -> its definitions
    _scopes: dict[str, _Scopes] = field(default_factory=dict)
    # (path, the use's position in its file) -> the use placed; None: it may run no
    # wanted name
    _placed: dict[tuple[str, int], _Placed | None] = field(default_factory=dict)
    _resolved: dict[tuple[str, int], tuple[str, Caller] | None] = field(default_factory=dict)
    # dunder name -> (path, position) of the uses that may run it, found on first question
    _by_name: dict[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)

    def of(self, qualified_name: str) -> tuple[Caller, ...]:
        """The syntax calling the method ``qualified_name`` (none for any other name)."""
        d = self.tables.definitions.get(qualified_name)
        if d is None or d.kind != "method" or not is_dunder(d.name) \
                or d.name not in self._wanted_names():
            return ()
        if d.name not in self._by_name:  # every class's method of that name asks again
            self._by_name[d.name] = tuple(self._uses_of(d.name))
        found = (self._resolve(key) for key in self._by_name[d.name])
        return tuple(hit[1] for hit in found if hit is not None and hit[0] == qualified_name)

    def names_in(self, path: str) -> dict[str | None, frozenset[str]]:
        """innermost definition (None: module level) -> the dunder names the syntax in
        its own code may call, whatever the operands' classes."""
        found: dict[str | None, set[str]] = defaultdict(set)
        uses = self._file(path) if self._wanted_names() else ()
        for placed in (self._place((path, i)) for i in range(len(uses))):
            if placed is not None:
                found[placed.scope.qualified_name if placed.scope else None].update(
                    placed.names)
        return {scope: frozenset(names) for scope, names in found.items()}

    def _wanted_names(self) -> frozenset[str]:
        if self._wanted is None:
            self._wanted = frozenset(
                d.name for d in self.tables.definitions.values()
                if d.kind == "method" and d.language == "python" and is_dunder(d.name))
        return self._wanted

    def _uses_of(self, name: str) -> Iterator[tuple[str, int]]:
        """(path, position) of every use that may run a method ``name``, file by file in
        path order, each file's in source order."""
        by_call = name in _CALLED_NAMES  # else no call of a builtin runs it
        for path in sorted(p for p, lang in self.tables.file_language.items()
                           if lang == "python"):
            for i, use in enumerate(self._file(path)):
                if name in use.names or (by_call and not use.names and (
                        placed := self._place((path, i))) and name in placed.names):
                    yield path, i

    def _file(self, path: str) -> tuple[SyntaxUse, ...]:
        if path not in self._files:
            self._files[path] = _file_uses(self.tables, path, self.read_text)
        return self._files[path]

    def _place(self, key: tuple[str, int]) -> _Placed | None:
        if key not in self._placed:
            path, i = key
            if path not in self._scopes:
                self._scopes[path] = _Scopes.of(self._definitions().get(path, []))
            use = self._file(path)[i]
            scope = self._scopes[path].at(use.line)
            names = use.names or _called_names(
                self.tables, path, scope.qualified_name if scope else None, use.callee or "")
            wanted = not self._wanted_names().isdisjoint(names)
            self._placed[key] = _Placed(path, scope, use, names) if wanted else None
        return self._placed[key]

    def _definitions(self) -> dict[str, list[Def]]:
        """path -> its definitions, redefinitions included (made once)."""
        if self._defs is None:
            self._defs = defaultdict(list)
            for d in [*self.tables.definitions.values(), *self.tables.shadowed]:
                self._defs[d.path].append(d)
        return self._defs

    def _resolve(self, key: tuple[str, int]) -> tuple[str, Caller] | None:
        if key not in self._resolved:  # one use may run several names
            placed = self._place(key)
            assert placed is not None  # _uses_of yields placed uses only
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

