"""Which tests reach a changed symbol through the call graph, and by how many calls.

A breadth-first walk from the symbol up its callers (:func:`pr_context.graph.callers_of`:
resolved calls, instantiations and attribute uses, plus the same-name candidates a
dynamic call, an override or an unbound name may be), through production functions,
test helpers and pytest fixtures, until it meets test functions:

- a caller inside a test function reaches that test (a leaf: nothing calls tests);
- a caller in any other function (production code, a helper, a fixture) is walked on;
  a fixture also reaches the tests and fixtures that take it as a parameter within its
  scope (its own file, or a conftest's directory), every test in scope when it is
  ``autouse``;
- a caller at module level (or in a class body) runs when its file is imported: a test
  file's whole module; for production code, the readers of the module-level variable it
  fills (``DEFAULTS = [Renderer()]``) or the methods reading the class attribute
  (``_regex = Memoizer()``, read as ``self._regex``; with none, wherever the class is
  used: its base class or metaclass reads it, as a schema's declared fields), walked on,
  or else whoever imports the file (:attr:`Reach.imported`, left to the import closure);
- a type use (an annotation) runs nothing and is not walked; in a test function, next to
  the symbol, it still says what the test holds;
- a method that its class looks up on ``self`` by a name built at run time
  (``getattr(self, f"_compare_{op}")``) is walked from the method doing the lookup, as a
  same-name candidate.

A dunder's callers include the syntax that runs it on an operand of evident class
(:mod:`pr_context.graph.syntax`: ``1 in box`` calls ``Box.__contains__``); a property's,
the reads of its name on objects of unknown class in files that can name its class, as
same-name candidates. A method called without its name, a dunder (``__eq__``,
``__iter__``: by syntax), an override of a standard-library method (``logging`` calls
``Formatter.format``), a property named like a built-in type's method (``values``:
too many reads name it), or a method nothing calls by name (looked up at run time), is
also reached from wherever its class, or a subclass, is instantiated; such a test says
which of those methods it is not seen using (:attr:`Reached.unused`). A property or
method whose name no site anywhere names is not: nothing runs it but a lookup by a
computed name, and a walk that finds nothing says so (:attr:`Reach.unreferenced`).
Pure: reads the graph, the :class:`LinkIndex` and the text it is given.
"""

from __future__ import annotations

import ast
import posixpath
import re
from collections import defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath

from pr_context.graph import Caller, SymbolGraph, callers_of
from pr_context.graph.names import method_in, mro
from pr_context.graph.readers import readers_of
from pr_context.graph.syntax import SyntaxCallers, is_dunder
from pr_context.graph.tables import CLASS_KINDS, Def, Site, group_sites
from pr_context.links.evidence import LinkIndex, TestDef
from pr_context.links.runs import RunSites, decorator_text
from pr_context.variables import (
    ModuleVariable,
    module_mutations,
    module_variables,
    parsed_python,
)

__all__ = ["MAX_WALK", "Reach", "Reached", "Reacher", "is_test", "node_id", "test_function"]

# Definitions walked per symbol: past this the symbol is reached from nearly everywhere
# (a core helper of the library), and the walk stops as "wide" (see Reach.wide).
MAX_WALK = 5_000
_TEST_ROLE = "test"
_SUPPORT_ROLES = frozenset({"test", "test_support"})
_INSTANTIATING = frozenset({"call", "instantiation"})
_FIXTURE_DECORATOR = re.compile(r"@(?:pytest\.)?fixture\b")
_AUTOUSE = re.compile(r"\bautouse\s*=\s*True\b")
# getattr(self, "name"), getattr(self, f"prefix_{x}"), getattr(self, "prefix_" + x)
_LOOKUP = re.compile(r"\bgetattr\(\s*(?:self|cls|type\(self\))\s*,\s*f?(?P<q>[\"'])"
                     r"(?P<name>[A-Za-z_]\w*)(?P<end>.)")
# A name looked up at run time may be this method or a sibling sharing the prefix.
_LOOKUP_SHARE = 0.5
# Constructors run where their class is instantiated: the graph's callers say so already.
_CONSTRUCTORS = frozenset({"__init__", "__new__", "__post_init__"})
# Type aliases built from type aliases, followed this deep (each level one variable).
_ALIAS_DEPTH = 8


@dataclass(frozen=True)
class Reached:
    """A test that reaches the symbol: ``hops`` calls away (1: it calls it itself)."""

    path: str
    test: TestDef | None  # None: the test file's module level (the whole file)
    hops: int
    confidence: float  # the product of the calls' confidences along the path
    via: tuple[str, ...]  # short names between the test and the symbol, the test's first
    line: int  # the site in the test file
    # "call"; "fixture" (takes a fixture that reaches it); "setup" (its class's setUp or a
    # framework hook reaches it); "module" (the file's import or a hook runs it: whole file)
    how: str
    candidate: bool = False  # some step is only a same-name candidate
    verb: str = "call"  # what the test's own site does: call, instantiation, attribute, read
    through: str | None = None  # the class of a method called without its name, whose
    # objects the path goes through (weaker: the test may not call it)
    state: str | None = None  # a variable holding what the symbol made at import, which
    # the path reads (weaker: the test uses the result, the symbol ran before it)
    # methods called without their name on the way (through objects) that the test does
    # not use: by syntax on an operand, or by name on a receiver, of unknown class (the
    # weakest link: nothing says the test calls it on the objects it holds)
    unused: tuple[str, ...] = ()


@dataclass(frozen=True)
class Reach:
    """Everything one walk found."""

    tests: tuple[Reached, ...]
    imported: frozenset[str] = frozenset()  # production files running it at import
    wide: bool = False  # stopped after MAX_WALK definitions
    walked: int = 0
    # nothing names it (no call, read or use of its name anywhere, no decorator that
    # registers it): an empty walk is the whole truth, not a gap in what the graph sees
    unreferenced: bool = False


@dataclass(frozen=True)
class _Step:
    name: str  # qualified name of a definition to walk up from
    hops: int
    confidence: float
    via: tuple[str, ...]
    candidate: bool
    through: str | None = None  # the class whose objects a method called without its
    # name was reached through (see _objects_of)
    state: str | None = None  # the variable holding what the symbol made at import
    unused: tuple[str, ...] = ()  # see Reached.unused


@dataclass
class Reacher:
    """Walks callers for every symbol of one revision, each definition's callers once."""

    graph: SymbolGraph
    index: LinkIndex
    _callers: dict[str, list[Caller]] = field(default_factory=dict)
    _tests: dict[str, dict[str, TestDef]] = field(default_factory=dict)
    _test_of: dict[tuple[str, str | None], TestDef | None] = field(default_factory=dict)
    _subclasses: dict[str, list[str]] | None = None
    _by_parent: dict[str, list[Def]] | None = None
    # path -> its text at this revision, to follow module-level variables (None: not)
    read_text: Callable[[str], str | None] | None = None
    _file_variables: dict[str, list[ModuleVariable]] = field(default_factory=dict)
    _variable_names: set[str] = field(default_factory=set)
    _texts: dict[str, list[str]] = field(default_factory=dict)
    _class_names: dict[str, dict[int, str]] = field(default_factory=dict)
    _annotation_names: dict[str, frozenset[tuple[int, int]]] = field(default_factory=dict)
    _lookup_cache: dict[str, list[tuple[str, str, bool]]] = field(default_factory=dict)
    # (path, line, enclosing class) -> methods reading the class attribute assigned there:
    # every symbol's walk meets the same class bodies, and each answer scans their lines
    _attribute_cache: dict[tuple[str, int, str], list[str]] = field(default_factory=dict)
    _syntax: SyntaxCallers | None = None  # the syntax calling dunder methods
    _used: dict[str, dict[str | None, set[str]]] = field(default_factory=dict)
    _sites: dict[str, list[Site]] | None = None
    _run_sites: RunSites | None = None  # what runs a definition besides its callers

    def reach(self, qualified_name: str, first: list[Caller] | None = None) -> Reach:
        """The tests reaching ``qualified_name``; ``first`` replaces its own callers
        (the readers of a module-level variable). A method whose callers lead to no test
        is reached through its class's objects instead."""
        start = _Step(qualified_name, 0, 1.0, (), False)
        found = self._walk([start], start, first)
        if not found.tests and not found.imported and first is None \
                and self._unreferenced(qualified_name):
            return replace(found, unreferenced=True)
        if not found.tests and not found.wide:
            classes = self._objects_of(start, dead_end=True)
            if classes:
                again = self._walk(classes, None, None)
                return Reach(again.tests, found.imported | again.imported, again.wide,
                             found.walked + again.walked)
        return found

    def _walk(self, starts: list[_Step], start: _Step | None,
              first: list[Caller] | None) -> Reach:
        queue = deque(starts)
        seen = {s.name for s in queue}
        found: dict[tuple[str, str | None, str], Reached] = {}
        imported: set[str] = set()
        walked = 0
        while queue:
            step = queue.popleft()
            walked += 1
            if walked > MAX_WALK:
                return Reach(tuple(found.values()), frozenset(imported), True, walked)
            callers = first if first is not None and step is start else self.callers(step.name)
            users = [*self._fixture_users(step), *self._lookups(step),
                     *self._objects_of(step, dead_end=False), *self._class_values(step)]
            if not callers and not users:
                users = list(self._run_by_framework(step))
            for item in [*self._from_callers(step, callers, imported), *users]:
                if isinstance(item, Reached):
                    _keep(found, item)
                elif item.name not in seen:
                    seen.add(item.name)
                    queue.append(item)
        return Reach(tuple(found.values()), frozenset(imported), False, walked)

    def callers(self, qualified_name: str) -> list[Caller]:
        """The sites that run it: its callers (not ``@name.setter``); for a module-level
        variable met on the way, its readers; for a dunder method, also the syntax that
        calls it on an operand of evident class."""
        if qualified_name not in self._callers:
            self._callers[qualified_name] = (
                self.runtime_reads(self._readers(qualified_name))
                if qualified_name in self._variable_names and self.read_text is not None
                else [*self._runs().running(qualified_name,
                                            callers_of(self.graph, qualified_name)),
                      *self._syntax_callers(qualified_name),
                      *self._runs().property_reads(qualified_name)])
        return self._callers[qualified_name]

    def _unreferenced(self, qualified_name: str) -> bool:
        d = self.graph.tables.definitions.get(qualified_name)
        return d is not None and not self.callers(qualified_name) \
            and self._runs().unreferenced(d)

    def named_somewhere(self, name: str) -> bool:
        """Whether some site of the index names ``name`` (see :class:`RunSites`)."""
        return self._runs().named_somewhere(name)

    def _runs(self) -> RunSites:
        if self._run_sites is None:
            self._run_sites = RunSites(self.graph, self.index.roles)
        return self._run_sites

    def _syntax_callers(self, qualified_name: str) -> tuple[Caller, ...]:
        d = self.graph.tables.definitions.get(qualified_name)
        if d is None or d.language != "python" or not is_dunder(d.name):
            return ()
        return self._syntax_index().of(qualified_name)

    def _unused_after(self, step: _Step, path: str, scope: str | None) -> tuple[str, ...]:
        """``step``'s methods called without their name that the test ``scope`` (its
        nested functions included; None: the whole file) of ``path`` does not use."""
        if not step.unused:
            return ()
        used = self._names_used(path)
        within = [names for owner, names in used.items()
                  if scope is None or owner == scope
                  or (owner or "").startswith(scope + ".")]
        return tuple(n for n in step.unused if not any(n in names for names in within))

    def _names_used(self, path: str) -> dict[str | None, set[str]]:
        """innermost definition -> the method names its code may call on an object of
        unknown class: by syntax (``x in y``: ``__contains__``), or by name on a receiver
        (``y.index(1)``, ``y.body``)."""
        if path not in self._used:
            used: dict[str | None, set[str]] = defaultdict(set)
            for scope, names in self._syntax_index().names_in(path).items():
                used[scope].update(names)
            for site in self._sites_by_path().get(path, ()):
                if site.receiver is not None:
                    used[site.enclosing].add(site.name)
            self._used[path] = dict(used)
        return self._used[path]

    def _syntax_index(self) -> SyntaxCallers:
        if self._syntax is None:  # every file parsed once, on the first question
            self._syntax = SyntaxCallers(self.graph.tables, self._source)
        return self._syntax

    def _sites_by_path(self) -> dict[str, list[Site]]:
        if self._sites is None:
            self._sites = group_sites(self.graph.tables.sites, lambda site: site.path)
        return self._sites

    def _source(self, path: str) -> str | None:
        """A file's text: read at this revision, else its lines the graph holds."""
        if self.read_text is not None:
            return self.read_text(path)
        lines = self.graph.tables.lines.get(path)
        if not lines:
            return None
        return "\n".join(lines.get(n, "") for n in range(1, max(lines) + 1))

    def _readers(self, variable: str) -> list[Caller]:
        """Every read of a module-level variable, annotations included."""
        if self.read_text is None:
            return []
        return readers_of(self.graph.tables, variable, self.read_text)

    def runtime_reads(self, readers: list[Caller]) -> list[Caller]:
        """The reads of a variable that run with the code around them: not those in an
        annotation (``def f(x: Alias)``), which a type alias has and nothing runs."""
        return [r for r in readers if (r.line, r.column) not in self._annotations(r.path)]

    def read_only_as_type(self, readers: list[Caller], depth: int = _ALIAS_DEPTH) -> bool:
        """Whether a variable with these readers is a type alias nothing runs: read, and
        only in annotations or in other module-level variables read only so (``Processor =
        Callable[..., ReturnValue]``, itself read only in annotations) or read by nothing
        (no site names them). A variable nothing is seen reading is not: its readers may
        be out of sight."""
        if not readers or depth < 0:
            return False
        for read in self.runtime_reads(readers):
            held = self._variables_at(read)
            if not held or not all(self._read_by_nothing(v) or self.read_only_as_type(
                    self._readers(v), depth - 1) for v in held):
                return False
        return True

    def _read_by_nothing(self, variable: str) -> bool:
        return not self._readers(variable) and not self.named_somewhere(
            variable.rsplit(".", 1)[-1])

    def _annotations(self, path: str) -> frozenset[tuple[int, int]]:
        """(line, column) of every name and attribute inside an annotation of ``path``."""
        if path not in self._annotation_names:
            text = self.read_text(path) if self.read_text is not None else None
            tree = parsed_python(text) if text is not None else None
            found: set[tuple[int, int]] = set()
            for node in ast.walk(tree) if tree is not None else ():
                for annotation in _annotations_of(node):
                    found.update((n.lineno, n.col_offset) for n in ast.walk(annotation)
                                 if isinstance(n, ast.Name | ast.Attribute))
            self._annotation_names[path] = frozenset(found)
        return self._annotation_names[path]

    def _variables_at(self, caller: Caller) -> list[str]:
        """Module-level variables of a Python file whose assignment holds ``caller``'s line
        (``DEFAULTS = [Renderer()]``): None of them when the text cannot be read."""
        if self.read_text is None or self.graph.tables.file_language.get(caller.path) \
                != "python" or caller.enclosing is not None:
            return []
        if caller.path not in self._file_variables:
            text = self.read_text(caller.path)
            found = module_variables(text) if text is not None else None
            # LOOPS["auto"] = LOOPS["stat"]: what it reads goes on in the variable it changes
            changed = module_mutations(text) if text is not None else {}
            self._file_variables[caller.path] = [
                *(found or {}).values(),
                *(ModuleVariable(n, min(lines), max(lines), lines, "")
                  for n, lines in changed.items())]
        module = self.graph.tables.file_module.get(caller.path, "")
        names = list(dict.fromkeys(f"{module}.{v.name}" if module else v.name
                                   for v in self._file_variables[caller.path]
                                   if caller.line in v.lines))
        self._variable_names.update(names)
        return names

    def test_function(self, path: str, enclosing: str | None) -> TestDef | None:
        """The test function (or method) whose body holds ``enclosing``, if any."""
        key = (path, enclosing)  # every walk meets the same callers in the same tests
        if key not in self._test_of:
            if path not in self._tests:
                self._tests[path] = {d.qualified_name: d
                                     for d in self.index.test_defs.get(path, ())}
            self._test_of[key] = _enclosing_test(self._tests[path], enclosing)
        return self._test_of[key]

    # -- one step -------------------------------------------------------------------------

    def _from_callers(self, step: _Step, callers: list[Caller],
                      imported: set[str]) -> Iterator[Reached | _Step]:
        for caller in callers:
            role = self.index.roles.get(caller.path)
            test = self.test_function(caller.path, caller.enclosing) \
                if role == _TEST_ROLE else None
            if caller.kind == "type" and (test is None or step.hops):
                continue  # an annotation runs nothing; a test's own one says what it holds
            hops, confidence = step.hops + 1, round(step.confidence * caller.confidence, 4)
            candidate = step.candidate or caller.how != "graph"
            if test is not None:
                yield Reached(caller.path, test, hops, confidence, step.via, caller.line,
                              "call", candidate, caller.kind, step.through, step.state,
                              self._unused_after(step, caller.path, test.qualified_name))
            elif self._at_import(caller):
                if role == _TEST_ROLE:
                    yield Reached(caller.path, None, hops, confidence, step.via, caller.line,
                                  "module", candidate, through=step.through,
                                  state=step.state, unused=self._unused_after(
                                      step, caller.path, None))
                    continue
                held = self._variables_at(caller) or self._attribute_users(caller)
                if not held:
                    imported.add(caller.path)
                for name in held:  # what it made at import lives on in a variable
                    short = name.rsplit(".", 1)[-1]
                    yield _Step(name, hops, confidence, (short, *step.via), candidate,
                                step.through or self._class_through(caller, name),
                                step.state or short, step.unused)
            elif caller.enclosing:
                short = caller.enclosing.rsplit(".", 1)[-1]
                yield _Step(caller.enclosing, hops, confidence, (short, *step.via), candidate,
                            step.through, step.state, step.unused)

    def _attribute_users(self, caller: Caller) -> list[str]:
        """Methods of the class (or a subclass) whose body ``caller`` sits in that read the
        class attribute assigned on its line (``_regex = Memoizer()``: ``self._regex``)."""
        cls = caller.enclosing
        if cls is None or self.graph.tables.file_language.get(caller.path) != "python":
            return []
        key = (caller.path, caller.line, cls)
        if key not in self._attribute_cache:
            self._attribute_cache[key] = self._attribute_readers(caller.path, caller.line, cls)
        return self._attribute_cache[key]

    def _attribute_readers(self, path: str, line: int, cls: str) -> list[str]:
        name = self._class_assignments(path).get(line)
        if name is None:
            return []
        read = re.compile(rf"\b(?:self|cls|{re.escape(cls.rsplit('.', 1)[-1])})\."
                          rf"{re.escape(name)}\b")
        owners = [cls, *self._subclasses_of(cls)]
        users = [d.qualified_name for owner in owners for d in self._members(owner)
                 if any(read.search(self._line(d.path, n))
                        for n in range(d.start_line, d.end_line + 1))]
        # Read by no method of its own: its class's machinery (a base class, a metaclass:
        # a schema's declared fields, a model's columns) uses it wherever the class is.
        return users or [c for c in owners if c in self.graph.tables.definitions]

    def _class_through(self, caller: Caller, name: str) -> str | None:
        """The class, when the walk goes on from the class of a class attribute itself."""
        return name.rsplit(".", 1)[-1] if name == caller.enclosing else None

    def _class_assignments(self, path: str) -> dict[int, str]:
        """line -> the name a class-body assignment spanning it assigns (``FUNCS = {...}``
        over several lines), from the file parsed with Python's own parser."""
        if path not in self._class_names:
            found: dict[int, str] = {}
            text = self.read_text(path) if self.read_text is not None else None
            tree = parsed_python(text) if text is not None else None
            for node in ast.walk(tree) if tree is not None else ():
                if isinstance(node, ast.ClassDef):
                    for stmt in node.body:
                        target = _assigned_name(stmt)
                        if target is not None:
                            found.update(dict.fromkeys(
                                range(stmt.lineno, (stmt.end_lineno or stmt.lineno) + 1),
                                target))
            self._class_names[path] = found
        return self._class_names[path]

    def _line(self, path: str, number: int) -> str:
        """Line ``number`` of ``path``: from the graph's source lines, else the file."""
        found = self.graph.tables.lines.get(path, {}).get(number)
        if found is not None:
            return found
        if path not in self._texts:
            text = self.read_text(path) if self.read_text is not None else None
            self._texts[path] = text.splitlines() if text is not None else []
        lines = self._texts[path]
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def _at_import(self, caller: Caller) -> bool:
        """Module level, or a class body: it runs when the file is imported."""
        if caller.enclosing is None:
            return True
        d = self.graph.tables.definitions.get(caller.enclosing)
        return d is not None and d.kind in CLASS_KINDS

    def _fixture_users(self, step: _Step) -> Iterator[Reached | _Step]:
        """Tests and fixtures that take the fixture ``step.name`` as a parameter, and every
        test in scope for an autouse fixture on a call path: one that reaches the symbol
        only through what it made at import (resetting a configuration that holds it) or
        through objects of its class runs it for no test but those asking for its value."""
        d = self.graph.tables.definitions.get(step.name)
        if d is None or self.index.roles.get(d.path) not in _SUPPORT_ROLES \
                or not self._is_fixture(d.path, d.start_line):
            return
        autouse = self._autouse(d.path, d.start_line)
        scope = _fixture_scope(d.path)
        for path, defs in self.index.test_defs.items():
            if not (path == d.path or (scope is not None and _within(path, scope))):
                continue
            for other in defs:
                if other.qualified_name == d.qualified_name or other.kind not in (
                        "function", "method"):
                    continue
                spreads = autouse and step.state is None and step.through is None
                if not (spreads or d.name in other.parameters):
                    continue
                if is_test(other) and self.index.roles.get(path) == _TEST_ROLE:
                    yield Reached(path, other, step.hops + 1, step.confidence, step.via,
                                  other.start_line, "fixture", step.candidate,
                                  through=step.through, state=step.state,
                                  unused=self._unused_after(step, path, other.qualified_name))
                elif d.name in other.parameters and self._is_fixture(path, other.start_line):
                    yield _Step(other.qualified_name, step.hops + 1, step.confidence,
                                (other.name, *step.via), step.candidate, step.through,
                                step.state, step.unused)

    def _run_by_framework(self, step: _Step) -> Iterator[Reached]:
        """A function of a test file or conftest that nothing calls runs only through the
        test framework (``setUp``, ``setup_method``, a hook, a fixture named in a string):
        its class's tests, or every test of its file or, for a conftest, of its directory."""
        d = self.graph.tables.definitions.get(step.name)
        if d is None or step.hops == 0 or self.index.roles.get(d.path) not in _SUPPORT_ROLES \
                or self._autouse(d.path, d.start_line):  # its tests: see _fixture_users
            return
        parent = self.graph.tables.definitions.get(d.parent or "")
        if parent is not None and parent.kind in CLASS_KINDS:
            members = [t for t in self.index.test_defs.get(d.path, ())
                       if t.parent == parent.qualified_name and is_test(t)]
            yield from (Reached(d.path, t, step.hops + 1, step.confidence, step.via,
                                t.start_line, "setup", step.candidate, through=step.through,
                                state=step.state,
                                unused=self._unused_after(step, d.path, t.qualified_name))
                        for t in members)
            return
        scope = _fixture_scope(d.path)
        paths = [d.path] if scope is None else [
            p for p in self.index.test_defs if _within(p, scope)]
        yield from (Reached(p, None, step.hops + 1, step.confidence, step.via, 1, "module",
                            step.candidate, through=step.through, state=step.state,
                            unused=self._unused_after(step, p, None))
                    for p in paths if self.index.roles.get(p) == _TEST_ROLE)

    def _decorators(self, path: str, start_line: int) -> str:
        return decorator_text(self.graph.tables, path, start_line)

    def _is_fixture(self, path: str, start_line: int) -> bool:
        return bool(_FIXTURE_DECORATOR.search(self._decorators(path, start_line)))

    def _autouse(self, path: str, start_line: int) -> bool:
        return bool(_AUTOUSE.search(self._decorators(path, start_line)))

    # -- names looked up at run time ------------------------------------------------------

    def _lookups(self, step: _Step) -> Iterator[_Step]:
        """Methods that fetch ``step``'s method from ``self`` by a name built at run time,
        ``getattr(self, f"_compare_{op}")`` for ``_compare_less_than``: same-name
        candidates, walked like calls."""
        d = self.graph.tables.definitions.get(step.name)
        if d is None or d.kind != "method" or d.parent is None or d.language != "python":
            return
        classes = {*mro(self.graph.tables, d.parent), *self._subclasses_of(d.parent)}
        for cls in sorted(classes):
            for method, prefix, exact in self._lookup_sites(cls):
                if method != d.qualified_name and (
                        d.name == prefix if exact else d.name.startswith(prefix)):
                    short = method.rsplit(".", 1)[-1]
                    yield _Step(method, step.hops + 1, round(step.confidence * _LOOKUP_SHARE, 4),
                                (short, *step.via), True, step.through, step.state,
                                step.unused)

    def _lookup_sites(self, cls: str) -> list[tuple[str, str, bool]]:
        """(method, name or prefix looked up on self, whether the whole name) in ``cls``."""
        if cls not in self._lookup_cache:
            found = []
            for d in self._members(cls):
                lines = self.graph.tables.lines.get(d.path, {})
                text = "\n".join(lines.get(n, "") for n in range(d.start_line, d.end_line + 1))
                found += [(d.qualified_name, m.group("name"), m.group("end") == m.group("q"))
                          for m in _LOOKUP.finditer(text) if m.group("name")]
            self._lookup_cache[cls] = found
        return self._lookup_cache[cls]

    def _members(self, cls: str) -> list[Def]:
        if self._by_parent is None:
            grouped: dict[str, list[Def]] = {}
            for d in self.graph.tables.definitions.values():
                if d.parent is not None and d.kind == "method":
                    grouped.setdefault(d.parent, []).append(d)
            self._by_parent = grouped
        return self._by_parent.get(cls, [])

    # -- dunders and properties -----------------------------------------------------------

    def _class_values(self, step: _Step) -> list[_Step]:
        """A constructor runs wherever its class is called, also as a value passed around
        (``convert(data, Marker)``), and wherever a subclass that inherits it is (``class
        Bad(Schema)`` in a test, then ``Bad()``): walked on from those classes' own uses."""
        d = self.graph.tables.definitions.get(step.name)
        if d is None or d.name not in _CONSTRUCTORS or d.parent is None \
                or d.parent not in self.graph.tables.definitions:
            return []
        inheriting = [c for c in self._subclasses_of(d.parent)
                      if method_in(self.graph.tables, c, d.name) == d.qualified_name]
        return [_Step(c, step.hops, step.confidence, step.via, step.candidate, step.through,
                      step.state, step.unused)
                for c in [d.parent, *inheriting] if c in self.graph.tables.definitions]

    def _objects_of(self, step: _Step, dead_end: bool) -> list[_Step]:
        """The class (and its subclasses) of a method called without its name: by syntax
        (a dunder: ``x in s`` runs ``__contains__``), by the standard library (an
        override of ``logging.Formatter.format``), as an attribute (a property), or,
        when its callers lead to no test (``dead_end``), in some way the graph cannot
        see. Walked on from wherever those classes are instantiated."""
        d = self.graph.tables.definitions.get(step.name)
        if d is None or d.kind != "method" or d.parent is None or d.name in _CONSTRUCTORS:
            return []
        # Python or the standard library call these by a name no site of the index writes;
        # most properties' reads are their callers (_property_reads), the rest's objects
        runs = self._runs()
        unseen = is_dunder(d.name) or runs.library_calls(d)
        read = not runs.read_by_name(d) and runs.is_property(d)
        if not (dead_end or unseen or read) or not (unseen or self.named_somewhere(d.name)):
            return []  # a property nothing reads, a method nothing names: nothing runs it
        classes = [d.parent, *self._subclasses_of(d.parent)]
        short = d.parent.rsplit(".", 1)[-1]
        unused = tuple(dict.fromkeys((*step.unused, d.name)))
        return [_Step(c, step.hops, step.confidence, (c.rsplit(".", 1)[-1], *step.via),
                      step.candidate, step.through or short, step.state, unused)
                for c in classes if c in self.graph.tables.definitions]

    def _subclasses_of(self, cls: str) -> list[str]:
        if self._subclasses is None:
            below: dict[str, list[str]] = {}
            for sub, bases in self.graph.tables.bases.items():
                for base in bases:
                    below.setdefault(base, []).append(sub)
            self._subclasses = below
        found, queue = [], list(self._subclasses.get(cls, ()))
        while queue:
            sub = queue.pop()
            if sub not in found:
                found.append(sub)
                queue.extend(self._subclasses.get(sub, ()))
        return found


def _annotations_of(node: ast.AST) -> list[ast.expr]:
    """The type expressions a node owns, which nothing runs: parameters, return, ``x: T``,
    and the types given to ``typing``'s run-time helpers (``cast(T, x)``,
    ``TypeVar("T", bound=B)``, ``NewType("N", T)``), which return a value without using
    the type."""
    if isinstance(node, ast.arg):
        return [node.annotation] if node.annotation is not None else []
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return [node.returns] if node.returns is not None else []
    if isinstance(node, ast.AnnAssign):
        return [node.annotation]
    if isinstance(node, ast.Call):
        return _typing_call_types(node)
    return []


def _typing_call_types(call: ast.Call) -> list[ast.expr]:
    func = call.func
    name = func.id if isinstance(func, ast.Name) else (
        func.attr if isinstance(func, ast.Attribute) else "")
    if name == "cast":
        return call.args[:1]
    if name in ("TypeVar", "NewType"):
        return [*call.args[1:], *(k.value for k in call.keywords if k.arg == "bound")]
    return []


def _assigned_name(stmt: ast.stmt) -> str | None:
    """The one name an assignment statement binds (``x = ...``, ``x: T = ...``)."""
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 \
            and isinstance(stmt.targets[0], ast.Name):
        return stmt.targets[0].id
    if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
        return stmt.target.id
    return None


def _keep(found: dict[tuple[str, str | None, str], Reached], item: Reached) -> None:
    """One Reached per test: the strongest path (fewest methods called without their name
    that nothing on the way uses, then a call path to the symbol itself before one
    through objects or import-time values), then the shortest, most confident."""
    key = (item.path, item.test.qualified_name if item.test else None, item.how)
    best = found.get(key)
    if best is None or _strength(item) < _strength(best):
        found[key] = item


def _strength(item: Reached) -> tuple[int, bool, int, float]:
    """Smaller is stronger."""
    weak = item.through is not None or item.state is not None
    return len(item.unused), weak, item.hops, -item.confidence


def _fixture_scope(path: str) -> str | None:
    """The directory a conftest's fixtures serve ("" for the root); None elsewhere."""
    if PurePosixPath(path).name != "conftest.py":
        return None
    return posixpath.dirname(path)


def _within(path: str, scope: str) -> bool:
    return not scope or path.startswith(scope + "/")


def test_function(index: LinkIndex, path: str, enclosing: str | None) -> TestDef | None:
    """The test function (or method) of ``path`` whose body holds ``enclosing``, if any."""
    return _enclosing_test({d.qualified_name: d for d in index.test_defs.get(path, ())},
                           enclosing)


def _enclosing_test(defs: dict[str, TestDef], enclosing: str | None) -> TestDef | None:
    """The outermost test function around ``enclosing``: a function named like a test
    inside another function (``def test_app(request)`` in a test) is not one pytest runs."""
    current = defs.get(enclosing or "")
    found = None
    while current is not None:
        parent = defs.get(current.parent or "")
        if is_test(current) and (parent is None or parent.kind not in ("function", "method")):
            found = current
        current = parent
    return found


def is_test(d: TestDef) -> bool:
    """A test function or method by pytest's (and JavaScript's ``it``) naming."""
    if d.kind not in ("function", "method"):
        return False
    return bool(re.match(r"(?i)test", d.name)) or d.name.startswith(("it", "should"))


def node_id(test: TestDef) -> str:
    """``path::Class::name`` for a method, ``path::name`` for a function."""
    parent = test.parent.rsplit(".", 1)[-1] if test.parent and test.kind == "method" else None
    return "::".join(p for p in (test.path, parent, test.name) if p)

