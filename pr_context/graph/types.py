"""Classes of local, ``self`` attribute and module-level names where the source makes them
evident (Python).

A name gets a class from a parameter annotation (``def f(x: C)``), an annotated
declaration (``x: C``, ``x: list[C] = []``, which holds for the whole function, as a type
checker reads it), an assignment whose value :func:`~pr_context.graph.infer.infer` can
tell (``x = C(...)``, ``x = make()`` with ``-> C``, ``x = pm.hook``, ``self.x = param``),
a loop over an iterable of known items (``for b in buckets``), or, for a parameter of a
test or fixture, a pytest fixture of that name whose return annotation or returned value
names a class. Any other assignment makes a local unknown from that line on; a ``self``
attribute or a module-level name is known only when all its assignments agree (and no
function rebinds it with ``global``). Values that depend on other names are inferred in
rounds until nothing changes.
"""

from __future__ import annotations

import posixpath
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace

from pr_context.graph.annotations import (
    Annotated,
    annotated_type,
    parameters,
    return_annotation,
    split_top_level,
)
from pr_context.graph.infer import FUNCTION_KINDS, Inferred, infer, is_inferable
from pr_context.graph.names import enclosing_class, is_enum, mro, resolve_in
from pr_context.graph.reads import EVERYTHING, Read, ReadLog, RecordedMap, RecordedMemo
from pr_context.graph.tables import CLASS_KINDS, Assignment, Def, Tables

__all__ = ["bind_types"]

# Each round types the values that depend on names typed in the round before
# (``a = C()``, ``b = a.make()``, ``c = b.part``); chains deeper than this stay unknown.
MAX_ROUNDS = 6
# `x = ...`, `x: T = ...`, `self.x = ...`; not `==`, not keyword arguments (indented
# continuation lines are not told apart, but `f(\n    x=C())` has no space before `=`).
_ASSIGN = re.compile(r"\s*(self\.)?([A-Za-z_]\w*)\s*(?::\s*([^=]+?))?\s+=\s+(\S.*)")
# `x: T` declares without assigning.
_DECLARE = re.compile(r"\s*(self\.)?([A-Za-z_]\w*)\s*:\s*([^=:#\s][^=:#]*?)\s*(?:#.*)?")
_LOOP = re.compile(r"\s*(?:async\s+)?for\s+([A-Za-z_]\w*)\s+in\s+(.+?)\s*:\s*(?:#.*)?")
# `a, b = ...` needs spaces around `=`, like _ASSIGN: `f(\n    A, B, key=C)` binds nothing.
_REBOUND = re.compile(r"\s*(?:async\s+)?(?:for\s+(.+?)\s+in\b|with\b.*\bas\s+(\w+)\s*:)"
                      r"|\s*([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)+)\s+=\s")
# `with A() as a, B(x) as b:` on one line; `async with` enters through __aenter__.
_WITH = re.compile(r"\s*(async\s+)?with\s+(.+?)\s*:\s*(?:#.*)?")
_WITH_ITEM = re.compile(r"(.+?)\s+as\s+([A-Za-z_]\w*)")
_RETURNED = re.compile(r"\s*(?:return|yield)\s+(\S.*)")
_YIELD = re.compile(r"(?:^|[=(]|\s)yield\b")
_FIXTURE = re.compile(r"\s*@(?:pytest\.)?fixture\b")
_TEST_MODULE = re.compile(r"test_.*\.py|.*_test\.py")
_DOTTED_VALUE = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*")
_DEF_LINE = re.compile(r"\s*(?:async\s+)?def\s")
_CALL_HEAD = re.compile(r"(?:await\s+)?([A-Za-z_][\w.]*)\(")
_KEYWORDS = frozenset({"else", "try", "finally", "except", "lambda", "case", "match"})

Key = tuple[str, str]  # (function, local name), (class, attribute) or (path, global name)
_GLOBAL = re.compile(r"\s*global\s+(.+)")


@dataclass
class _Pending:
    """An assignment whose class is inferred from ``value`` once the names in it are known."""

    held: list[Assignment]  # the list the assignment sits in
    index: int
    path: str
    scope: Def | None  # None: at module level
    value: str  # an expression, or (``loop``) the iterable a loop runs over
    loop: bool
    slot: Read  # the binding the assignment belongs to, as the tables' lookups read it
    reads: set[Read] | None = None  # what its last inference read; None: not yet inferred
    round: int = 0  # the round of its last inference


@dataclass
class _Bindings:
    """What bind_types collects before it freezes it into the tables."""

    variables: dict[Key, list[Assignment]]
    declared: dict[Key, list[Assignment]]  # typed annotations: they hold everywhere
    attributes: dict[Key, list[Assignment]]
    globals: dict[Key, list[Assignment]]  # module-level names
    declared_attributes: dict[Key, list[Assignment]]  # annotated in a class body, enum members
    global_names: dict[str, set[str]]  # function -> names it declares ``global``
    pending: list[_Pending]
    returns: dict[str, list[tuple[int, str]]]  # function -> (line, returned value)
    generators: set[str]  # functions that yield
    aliases: dict[Key, list[str]]  # (path, name) -> definitions ``name = Other`` names


def bind_types(tables: Tables, *, every_round: bool = False) -> Tables:
    """``tables`` with the variables and ``self`` attributes whose class is evident.

    ``every_round`` infers every pending value in every round, as if none could be
    skipped: the same tables, slower (tests compare the two).
    """
    bindings = _Bindings(defaultdict(list), defaultdict(list), defaultdict(list),
                         defaultdict(list), defaultdict(list), defaultdict(set), [],
                         defaultdict(list), set(), defaultdict(list))
    for d in _python_functions(tables):
        for name, annotation in parameters(d.signature):
            named = annotated_type(tables, d.path, d.qualified_name, annotation)
            if named:
                held = _typed(d.start_line, named, f"annotated as {named.cls}")
                bindings.variables[(d.qualified_name, name)].append(held)
                bindings.declared[(d.qualified_name, name)].append(held)
    functions: dict[str, list[Def]] = defaultdict(list)
    for d in (*_python_functions(tables), *_python_classes(tables)):
        functions[d.path].append(d)
    for path, lines in tables.lines.items():
        if tables.file_language.get(path) == "python":
            _bind_lines(tables, path, lines, _line_owners(functions.get(path, [])), bindings)
    members = defaultdict(set, {c: set(names) for c, names in tables.members.items()})
    for cls, attribute in bindings.attributes:
        members[cls].add(attribute)
    # Names bound so far were looked up without the aliases: forget them.
    tables = replace(tables, members={c: frozenset(n) for c, n in members.items()},
                     aliases=_agreed_aliases(bindings), file_bindings={})
    fixtures: dict[Key, list[Assignment]] = {}
    rounds = _Rounds(_frozen(tables, bindings, fixtures), bindings, every_round)
    requests = _fixture_requests(tables)
    for number in range(MAX_ROUNDS):
        tables = rounds.tables()
        typed = _fixture_parameters(tables, bindings.variables, requests)
        if not rounds.infer_pending(tables, number) and typed == fixtures:
            break
        rounds.fixtures_changed(fixtures, typed, number)
        fixtures = typed
    return _frozen(tables, bindings, fixtures)


class _Rounds:
    """The tables of each round, and which pending values need inferring again.

    A round infers every pending value from the tables of the round before. A value that
    failed is inferred again only when a binding its inference read (see
    :mod:`pr_context.graph.reads`) has changed since: inferring it again would read the
    same and fail the same. Between rounds only the changed bindings are refrozen.
    """

    def __init__(self, tables: Tables, bindings: _Bindings, every_round: bool) -> None:
        self.every_round = every_round
        self.log = ReadLog()
        self.bindings = bindings
        self.changed: dict[Read, int] = {}  # binding -> the last round that changed it
        # round -> the bindings changed in it or later (``changed`` as sets, kept up to
        # date: a value is tested against the one of its round with one set operation)
        self.changed_since: dict[int, set[Read]] = {}
        self.dirty: set[Read] = set()  # changed since the tables were last made
        self.base = tables
        self.variables = RecordedMap(tables.variables.items(), self.log, "variables")
        self.attributes = RecordedMap(tables.attributes.items(), self.log, "attributes")
        self.globals = RecordedMap(tables.globals.items(), self.log, "globals")
        self.fixtures: Mapping[Key, list[Assignment]] = {}

    def tables(self) -> Tables:
        for tag, key in self.dirty:
            assert isinstance(key, tuple)
            self._refreeze(tag, key)
        self.dirty.clear()
        return replace(self.base, variables=self.variables, attributes=self.attributes,
                       globals=self.globals, returned=RecordedMemo(self.log))

    def _refreeze(self, tag: str, key: Key) -> None:
        """Set the frozen value of one binding as :func:`_frozen` would."""
        b = self.bindings
        if tag == "variables":  # fixtures, else declared types, else assignments
            held = self.fixtures.get(key) or (
                (b.declared.get(key) or b.variables[key]) if key in b.variables else None)
            if held is None:
                self.variables.pop(key, None)
            else:
                self.variables[key] = tuple(sorted(held, key=lambda a: a.line))
            return
        every = (b.declared_attributes[key] if key in b.declared_attributes
                 else b.attributes.get(key)) if tag == "attributes" else b.globals.get(key)
        target = self.attributes if tag == "attributes" else self.globals
        agreed = _agreed({key: every}) if every else {}
        if key in agreed:
            target[key] = agreed[key]
        else:
            target.pop(key, None)

    def infer_pending(self, tables: Tables, number: int) -> bool:
        """Infer what pending assignments hold; True when one became known."""
        still: list[_Pending] = []
        for item in self.bindings.pending:
            if not self._may_change(item):
                still.append(item)
                continue
            assignment = item.held[item.index]
            self.log.start()
            value = infer(tables, item.path, item.scope, assignment.line, item.value)
            item.reads, item.round = self.log.finish(), number
            if value is None or (item.loop and value.kind != "iterable") or (
                    value.kind not in {"instance", "iterable"}):
                still.append(item)
                continue
            iterable = value.kind == "iterable" and not item.loop  # a loop takes one item
            item.held[item.index] = replace(assignment, cls=value.target, iterable=iterable)
            self._change(item.slot, number)
        changed = len(still) < len(self.bindings.pending)
        self.bindings.pending = still
        return changed

    def _may_change(self, item: _Pending) -> bool:
        if self.every_round or item.reads is None or EVERYTHING in item.reads:
            return True
        since = self.changed_since.get(item.round)
        if since is None:
            since = self.changed_since[item.round] = {
                read for read, last in self.changed.items() if last >= item.round}
        return not item.reads.isdisjoint(since)

    def fixtures_changed(self, before: Mapping[Key, list[Assignment]],
                         after: Mapping[Key, list[Assignment]], number: int) -> None:
        self.fixtures = after
        for key in {*before, *after}:
            if before.get(key) != after.get(key):
                self._change(("variables", key), number)

    def _change(self, read: Read, number: int) -> None:
        self.changed[read] = number
        for since, reads in self.changed_since.items():
            if since <= number:
                reads.add(read)
        self.dirty.add(read)


def _agreed_aliases(bindings: _Bindings) -> dict[Key, str]:
    """Module-level names every assignment of which names the same definition."""
    return {key: targets[0] for key, targets in bindings.aliases.items()
            if len(set(targets)) == 1 and len(targets) == len(bindings.globals.get(key, ()))}


def _frozen(tables: Tables, bindings: _Bindings, fixtures: Mapping[Key, list[Assignment]]
            ) -> Tables:
    variables = {key: bindings.declared.get(key) or held
                 for key, held in bindings.variables.items()}
    attributes = {**bindings.attributes, **bindings.declared_attributes}
    returns = {f: tuple(values) for f, values in bindings.returns.items()
               if f not in bindings.generators}
    return replace(tables, variables=_sorted({**variables, **fixtures}),
                   attributes=_agreed(attributes), globals=_agreed(bindings.globals),
                   returns=returns, returned={})


def _python_classes(tables: Tables) -> Iterator[Def]:
    return (d for d in tables.definitions.values()
            if d.language == "python" and d.kind in CLASS_KINDS)


def _python_functions(tables: Tables) -> Iterator[Def]:
    """Every Python function, the bodies of overloads and redefinitions included (they
    share a qualified name, so their locals share one scope)."""
    return (d for d in (*tables.definitions.values(), *tables.shadowed)
            if d.language == "python" and d.kind in FUNCTION_KINDS)


def _bind_lines(tables: Tables, path: str, lines: Mapping[int, str],
                owners: Mapping[int, Def], bindings: _Bindings) -> None:
    """Record each assignment of a local, ``self`` or class attribute or module-level
    name in ``path``'s ``lines``, whose innermost functions and classes ``owners`` gives."""
    for line, text in lines.items():  # a function's lines in order: `global` comes first
        scope = owners.get(line)
        function = scope if scope is not None and scope.kind in FUNCTION_KINDS else None
        if function is not None:
            _bind_return(function.qualified_name, line, text, bindings)
            declared = _GLOBAL.match(text) if "global" in text else None
            if declared:
                bindings.global_names[function.qualified_name].update(
                    re.findall(r"\w+", declared.group(1)))
        if "=" in text or ":" in text or "for" in text:  # what every binding form needs
            for name, annotation, value, loop in _assignments(text):
                _bind_assignment(tables, path, scope, line, (name, annotation, value, loop),
                                 bindings)


def _bind_assignment(tables: Tables, path: str, scope: Def | None, line: int,
                     assigned: tuple[str, str | None, str | None, bool],
                     bindings: _Bindings) -> None:
    name, annotation, value, loop = assigned
    where = scope.qualified_name if scope else None
    named = annotated_type(tables, path, where, annotation) if annotation else None
    held = (_typed(line, named, f"annotated as {annotation} on line {line}")
            if named else Assignment(line, None, _describe(value, loop, line)))
    slot = _binding_slot(tables, path, scope, name, bindings)
    if slot is None:
        return
    target = _slot_list(bindings, slot)
    if scope is None and value and _DOTTED_VALUE.fullmatch(value.partition("#")[0].strip()):
        other = resolve_in(tables, path, None, value.partition("#")[0].strip())
        if other is not None and other in tables.definitions:
            bindings.aliases[(path, name)].append(other)
    in_class = scope is not None and scope.kind in CLASS_KINDS
    if in_class and scope is not None and value and is_enum(tables, scope.qualified_name) \
            and not name.startswith("_"):
        held = Assignment(line, scope.qualified_name, f"a member of the enum {where}")
        bindings.declared_attributes[(scope.qualified_name, name)].append(held)
    elif named and in_class and scope is not None:
        bindings.declared_attributes[(scope.qualified_name, name)].append(held)
    elif named and scope and not name.startswith("self."):
        bindings.declared[(scope.qualified_name, name)].append(held)
    target.append(held)
    if held.cls is None and value and is_inferable(value):
        bindings.pending.append(_Pending(target, len(target) - 1, path, scope, value, loop,
                                         slot))


def _bind_return(function: str, line: int, text: str, bindings: _Bindings) -> None:
    """Record ``return value`` of ``function``'s own body; a ``yield`` makes it a generator."""
    if "yield" in text and _YIELD.search(text):
        bindings.generators.add(function)
        return
    returned = _RETURNED.match(text) if "return" in text else None
    if returned and returned.group(1).split("#")[0].strip() != "None":
        bindings.returns[function].append((line, returned.group(1)))


def _binding_slot(tables: Tables, path: str, scope: Def | None, name: str,
                  bindings: _Bindings) -> tuple[str, Key] | None:
    """Where an assignment of ``name`` goes: a module-level name (at module level, or in a
    function that declares it ``global``), a class attribute (in a class body or to
    ``self.name``), or a local; as (the tables' mapping, key)."""
    if scope is None or name in bindings.global_names.get(scope.qualified_name, ()):
        return None if name.startswith("self.") else ("globals", (path, name))
    if scope.kind in CLASS_KINDS:
        return None if name.startswith("self.") else (
            "attributes", (scope.qualified_name, name))
    if not name.startswith("self."):
        return "variables", (scope.qualified_name, name)
    cls = enclosing_class(tables, scope.qualified_name)
    return ("attributes", (cls, name[5:])) if cls else None


def _slot_list(bindings: _Bindings, slot: tuple[str, Key]) -> list[Assignment]:
    tag, key = slot
    if tag == "variables":
        return bindings.variables[key]
    return bindings.attributes[key] if tag == "attributes" else bindings.globals[key]


def _assignments(text: str) -> Iterator[tuple[str, str | None, str | None, bool]]:
    """(name, annotation, value, is_loop) for each name ``text`` binds."""
    loop = _LOOP.fullmatch(text)
    if loop:
        yield loop.group(1), None, loop.group(2), True
        return
    entered = _WITH.fullmatch(text) if "with" in text and " as " in text else None
    if entered:
        yield from _with_targets(entered.group(2), "__aenter__" if entered.group(1)
                                 else "__enter__")
        return
    rebound = _REBOUND.match(text)
    if rebound:
        targets = rebound.group(1) or rebound.group(2) or rebound.group(3)
        for name in re.findall(r"[A-Za-z_]\w*", targets):
            yield name, None, None, False
        return
    match = _ASSIGN.match(text)
    if match is not None:
        is_self, name, annotation, value = match.groups()
        if value.strip() != "None":  # `x = None` until set: calling on it would fail anyway
            yield ("self." if is_self else "") + name, annotation and annotation.strip(), \
                value, False
        return
    declared = _DECLARE.fullmatch(text)
    if declared and declared.group(2) not in _KEYWORDS:
        is_self, name, annotation = declared.groups()
        yield ("self." if is_self else "") + name, annotation, None, False


def _with_targets(items: str, enter: str) -> Iterator[tuple[str, None, str | None, bool]]:
    """``with C(x) as c``: ``c`` holds what ``C(x).__enter__()`` returns; a target that
    is not one name (``as (a, b)``) holds something unknown."""
    for item in split_top_level(items, ","):
        named = _WITH_ITEM.fullmatch(item.strip())
        if named:
            yield named.group(2), None, f"{named.group(1).strip()}.{enter}()", False
        elif " as " in item:
            for name in re.findall(r"[A-Za-z_]\w*", item.partition(" as ")[2]):
                yield name, None, None, False


def _describe(value: str | None, loop: bool, line: int) -> str:
    if value is None:
        return ""
    if loop:
        return f"an item of {value.strip()} (line {line})"
    entered = value.rpartition(".")
    if entered[2] in {"__enter__()", "__aenter__()"}:
        return f"what `with {entered[0]}` gives on line {line}"
    called = _CALL_HEAD.match(value.strip())
    shown = f"{called.group(1)}(...)" if called else value.partition("#")[0].strip()
    return f"assigned {shown} on line {line}"


def _typed(line: int, named: Annotated, how: str) -> Assignment:
    return Assignment(line, named.cls, how, iterable=named.iterable)


def _line_owners(functions: list[Def]) -> dict[int, Def]:
    """line -> the innermost of one file's ``functions`` whose body holds it."""
    owners: dict[int, Def] = {}
    for d in sorted(functions, key=lambda d: (d.start_line, -d.end_line)):
        # an inner function comes later and overwrites its lines
        for line in range(d.start_line, d.end_line + 1):
            owners[line] = d
    return owners


@dataclass(frozen=True)
class _Requests:
    """The fixtures, and the tests and fixtures with the parameters that request them."""

    fixtures: tuple[Def, ...]
    requesting: tuple[tuple[Def, tuple[tuple[str, str | None], ...]], ...]


def _fixture_requests(tables: Tables) -> _Requests:
    fixtures = [d for d in _python_functions(tables) if _is_fixture(tables, d)]
    is_fixture = set(fixtures)
    return _Requests(tuple(fixtures), tuple(
        (d, tuple(parameters(d.signature))) for d in _python_functions(tables)
        if d.name.startswith("test") or d in is_fixture))


def _fixture_parameters(tables: Tables, variables: Mapping[Key, list[Assignment]],
                        requests: _Requests) -> dict[Key, list[Assignment]]:
    """Parameters of tests and fixtures typed by the fixture of their name.

    A fixture that returns another fixture (``def f(pm): return pm``) is typed in the
    round after. A nearer fixture of unknown class hides a farther typed one.
    """
    by_name: dict[str, list[tuple[Def, Assignment | None]]] = defaultdict(list)
    for d in requests.fixtures:
        by_name[d.name].append((d, _fixture_class(tables, d)))
    typed: dict[Key, list[Assignment]] = {}
    for d, requested in requests.requesting:
        for name, annotation in requested:
            key = (d.qualified_name, name)
            found = None if annotation or key in variables else _visible_fixture(
                tables, d, by_name.get(name, []))
            if found:
                typed[key] = [replace(found, line=d.start_line)]
    return typed


def _is_fixture(tables: Tables, d: Def) -> bool:
    lines = tables.lines.get(d.path, {})
    for line in range(d.start_line, d.end_line + 1):
        text = lines.get(line, "")
        if _DEF_LINE.match(text):
            return False
        if _FIXTURE.match(text):
            return True
    return False


def _fixture_class(tables: Tables, d: Def) -> Assignment | None:
    """The class a fixture returns: its return annotation, else its first returned value."""
    where = f"the fixture {d.name} ({d.path}:{d.start_line}) returning"
    named = annotated_type(tables, d.path, d.qualified_name, return_annotation(d.signature))
    if named and not named.iterable:
        return Assignment(d.start_line, named.cls, f"{where} {named.cls}")
    lines = tables.lines.get(d.path, {})
    for line in range(d.start_line, d.end_line + 1):
        returned = _RETURNED.match(lines.get(line, ""))
        if returned:
            value: Inferred | None = infer(tables, d.path, d, line, returned.group(1))
            if value is None or value.kind != "instance":
                return None
            return Assignment(d.start_line, value.target, f"{where} {value.target}")
    return None


def _visible_fixture(tables: Tables, requester: Def,
                     candidates: list[tuple[Def, Assignment | None]]) -> Assignment | None:
    """The fixture pytest would pass to ``requester``: a fixture method of its class (or
    of an enclosing class, or of a base of either), then its file's, then the nearest
    conftest.py's, else the only fixture of that name a plugin module (neither a conftest
    nor a test module) defines: a parameter of a test names some fixture, and a plugin's
    (pytester's, a project's own pytest plugin) are visible wherever the plugin is active.
    A fixture method of another class is not visible."""
    path, directory = requester.path, posixpath.dirname(requester.path)
    classes = _classes_around(tables, requester)
    ranked: list[tuple[tuple[int, int], Assignment | None]] = []
    plugins = []
    for d, assigned in candidates:
        name = posixpath.basename(d.path)
        if _is_class(tables, d.parent):
            if d.parent in classes:
                ranked.append(((0, 0), assigned))
        elif d.path == path:
            ranked.append(((0, 1), assigned))
        elif name == "conftest.py":
            home = posixpath.dirname(d.path)
            if home == "" or directory == home or directory.startswith(home + "/"):
                ranked.append(((1, -len(home)), assigned))  # the deepest first
        elif not _TEST_MODULE.fullmatch(name):
            plugins.append(assigned)
    if not ranked and len(plugins) == 1 and len(candidates) == 1:
        return plugins[0]
    return min(ranked, key=lambda r: r[0])[1] if ranked else None


def _classes_around(tables: Tables, d: Def) -> set[str]:
    """The classes around ``d`` and their bases: whose fixture methods ``d`` can request."""
    around: set[str] = set()
    cls = enclosing_class(tables, d.parent)
    while cls is not None:
        around.update(mro(tables, cls))
        cls = enclosing_class(tables, tables.definitions[cls].parent)
    return around


def _is_class(tables: Tables, qualified_name: str | None) -> bool:
    d = tables.definitions.get(qualified_name or "")
    return d is not None and d.kind in CLASS_KINDS


def _sorted(variables: Mapping[Key, list[Assignment]]) -> dict[Key, tuple[Assignment, ...]]:
    return {key: tuple(sorted(held, key=lambda a: a.line)) for key, held in variables.items()}


def _agreed(attributes: Mapping[Key, list[Assignment]]) -> dict[Key, Assignment]:
    """Attributes every assignment of which (``None`` aside) gives the same class."""
    agreed = {}
    for key, held in attributes.items():
        classes = {(a.cls, a.iterable) for a in held}
        if len(classes) == 1 and None not in {a.cls for a in held}:
            agreed[key] = min(held, key=lambda a: a.line)
    return agreed
