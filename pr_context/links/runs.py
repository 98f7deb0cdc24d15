"""What runs a definition besides the call sites the graph resolves to it, and whether
anything can run it at all: the facts the walk to the tests (:mod:`.reach`) asks of a
definition before it follows its callers.

- ``@size.setter`` over a property's setter names the property object in the class body;
  it runs nothing (:meth:`RunSites.running` drops it).
- A Python property is read, not called: its reads on objects of unknown class, in files
  that can name its class, are same-name candidates, as ``x.m()`` is for a method
  (:meth:`RunSites.property_reads`); a property named like a method of Python's built-in
  types (``values``) is left to the objects of its class.
- A production method overriding a standard-library class's method is called by that
  library (:meth:`RunSites.library_calls`).
- A function, method or property that no site anywhere names, and that no decorator but
  Python's own descriptors and caches wraps, can only run through a lookup by a computed
  name; a module's ``__getattr__`` whose served names nothing reads, likewise
  (:meth:`RunSites.unreferenced`).

Pure: reads the graph and the roles it is given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pr_context.graph import Caller, SymbolGraph
from pr_context.graph.callers import (
    BUILTIN_METHOD_NAMES,
    DYNAMIC_CONFIDENCE,
    can_name,
    is_accessor_decorator,
)
from pr_context.graph.library import overrides_library
from pr_context.graph.module_getattr import is_module_getattr, served_by
from pr_context.graph.syntax import is_dunder
from pr_context.graph.tables import Def, Site, Tables, group_sites

__all__ = ["RunSites", "decorator_text"]

_SUPPORT_ROLES = frozenset({"test", "test_support"})
# `@name` or `@a.b(...)` at the start of a decorator line: the decorator's dotted name
_DECORATOR = re.compile(r"^\s*@\s*([\w.]+)", re.MULTILINE)
# Decorators that make a method a property: read as an attribute, not called by name.
_PROPERTY_DECORATORS = frozenset({"property", "cached_property", "setter", "getter",
                                  "deleter"})
# Python's descriptors, caches and typing markers: they wrap a function and register it
# nowhere, so a function they decorate runs only where something names it.
_PLAIN_DECORATORS = frozenset({
    "property", "setter", "getter", "deleter", "cached_property", "staticmethod",
    "classmethod", "abstractmethod", "overload", "override", "final", "cache", "lru_cache",
    "wraps", "deprecated"})
_DECORATOR_LINES = 20  # looked at above a `def`, at most


def decorator_text(tables: Tables, path: str, start_line: int) -> str:
    """The lines from a definition's first line (decorators included) to its ``def``."""
    lines = tables.lines.get(path, {})
    text = []
    for number in range(start_line, start_line + _DECORATOR_LINES):
        line = lines.get(number, "")
        if line.lstrip().startswith(("def ", "async def ")):
            break
        text.append(line)
    return "\n".join(text)


@dataclass
class RunSites:
    """The facts of one revision's graph, each built once on first use."""

    graph: SymbolGraph
    roles: Mapping[str, str]  # path -> role
    _site_names: frozenset[str] | None = None  # every name some site names
    _by_name: dict[str, list[Site]] | None = None  # name -> the sites naming it
    _resolved: frozenset[tuple[str, int, int]] | None = None  # (path, line, column)

    def running(self, qualified_name: str, callers: list[Caller]) -> list[Caller]:
        """The callers that run the definition: not ``@size.setter`` over a property's
        setter, which names the property object in the class body and reads nothing."""
        name = qualified_name.rsplit(".", 1)[-1]
        return [c for c in callers
                if not is_accessor_decorator(self.graph.tables, c.path, c.line, name)]

    def property_reads(self, qualified_name: str) -> list[Caller]:
        """For a Python property: reads of its name on an object of unknown class, in
        files that can name its class (import it, a subclass or its module), as same-name
        candidates. The graph resolves the reads on objects of evident class."""
        d = self.graph.tables.definitions.get(qualified_name)
        if d is None or d.parent is None or not self.read_by_name(d):
            return []
        resolved, owner = self._resolved_sites(), d.parent
        return [Caller(site.path, site.line, site.column, site.enclosing, "lexical",
                       DYNAMIC_CONFIDENCE, f"{site.receiver}.{d.name}: class of "
                       f"{site.receiver} unknown; reads the property {d.name}",
                       candidate="dynamic", sole=False, kind="attribute")
                for site in self._sites_by_name().get(d.name, ())
                if site.receiver is not None and site.kind == "attribute"
                and (site.path, site.line, site.column) not in resolved
                and can_name(self.graph, site.path, owner)]

    def read_by_name(self, d: Def) -> bool:
        """A Python property whose reads on unknown objects are its candidate callers:
        not one named like a method of Python's built-in types (``values``, ``items``),
        which that many reads name (objects of its class stand for its readers)."""
        return d.language == "python" and d.kind == "method" and d.parent is not None \
            and d.name not in BUILTIN_METHOD_NAMES and self.is_property(d)

    def is_property(self, d: Def) -> bool:
        return any(name.rsplit(".", 1)[-1] in _PROPERTY_DECORATORS
                   for name in self._decorator_names(d))

    def library_calls(self, d: Def) -> bool:
        """A production method overriding a standard-library class's (a test class's
        ``setUp`` is the test framework's business, not a library's)."""
        return self.roles.get(d.path) not in _SUPPORT_ROLES \
            and overrides_library(self.graph.tables, d)

    def unreferenced(self, d: Def) -> bool:
        """Whether nothing can run a Python function or method (its callers being none)
        but a lookup by a computed name: no site anywhere names it (a call, a read, an
        attribute of any object), it is no dunder (syntax and the interpreter call those)
        nor a standard-library override, and no decorator but Python's own descriptors
        and caches (which register nothing) wraps it; or it is a module's
        ``__getattr__`` serving names (its callers, the reads of those, being none)."""
        if d.language != "python" or d.kind not in ("function", "method"):
            return False
        if is_module_getattr(d):
            return bool(served_by(self.graph.tables, d))
        if is_dunder(d.name) or self.library_calls(d):
            return False
        return not self.named_somewhere(d.name) and all(
            name.rsplit(".", 1)[-1] in _PLAIN_DECORATORS for name in self._decorator_names(d))

    def named_somewhere(self, name: str) -> bool:
        """Whether some site of the index (a call, a read, an attribute of any object, a
        type use) names ``name``; ``@name.setter`` over a property's setter does not."""
        if self._site_names is None:
            tables = self.graph.tables
            self._site_names = frozenset(
                site.name for site in tables.sites if site.receiver is not None
                or not is_accessor_decorator(tables, site.path, site.line, site.name))
        return name in self._site_names

    def _decorator_names(self, d: Def) -> list[str]:
        return _DECORATOR.findall(decorator_text(self.graph.tables, d.path, d.start_line))

    def _sites_by_name(self) -> dict[str, list[Site]]:
        if self._by_name is None:
            self._by_name = group_sites(self.graph.tables.sites, lambda site: site.name)
        return self._by_name

    def _resolved_sites(self) -> frozenset[tuple[str, int, int]]:
        if self._resolved is None:
            self._resolved = frozenset((e.site.path, e.site.line, e.site.column)
                                       for edges in self.graph.edges.values()
                                       for e in edges)
        return self._resolved
