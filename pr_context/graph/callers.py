"""The symbol graph and the callers of one definition."""

from __future__ import annotations

import io
import re
from collections import defaultdict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Literal, TypeVar

from pr_context.graph.declared_library import declared_library_class, derives_from
from pr_context.graph.module_getattr import is_module_getattr, served_by, served_reads
from pr_context.graph.names import class_bases, imported_targets, mro, resolve_dotted
from pr_context.graph.resolve import resolve_site
from pr_context.graph.tables import CLASS_KINDS, Def, Site, Tables
from pr_context.graph.types import bind_types

__all__ = [
    "BUILTIN_METHOD_NAMES", "DYNAMIC_CONFIDENCE", "Caller", "SymbolGraph", "build_graph",
    "callers_of", "can_name", "edge", "graph_names", "is_accessor_decorator",
]

# Confidence scale, 0..1: how sure we are that the site can call the definition.
# 1.0: resolved through imports, scopes, self/super or bases (it names this definition).
GRAPH_CONFIDENCE = 1.0
# self.m() in a base class, resolved to the base's m, at run time dispatches to a subclass
# override whenever self is an instance of that subclass: likely, but not certain.
OVERRIDE_CONFIDENCE = 0.6
# obj.m() with obj's class unknown: shared evenly among the index's methods named m, so a
# method name defined once gets 0.5 and one of ten same-named methods 0.05.
DYNAMIC_CONFIDENCE = 0.5
# A bare f() that nothing in its file binds (star import of an outside module, globals
# injected at run time): shared evenly among definitions named f.
UNBOUND_CONFIDENCE = 0.3
# Constructors are named by their class: calling or instantiating the class calls them.
_CONSTRUCTORS = frozenset({"__init__", "constructor"})
_INSTANTIATING = frozenset({"call", "instantiation"})
# Sites whose name alone, unresolved, may be a same-name candidate: a type name nothing
# binds (a generic parameter, a library type) is no evidence of a use.
_CANDIDATE_KINDS = frozenset({"call", "instantiation"})
# obj.items() with obj's class unknown is, far more often than not, a dict's: the methods
# of Python's built-in types give no same-name candidates (a resolved call still counts).
BUILTIN_METHOD_NAMES = frozenset(
    name for kind in (dict, list, set, frozenset, str, bytes, bytearray, tuple, int, float,
                      complex, object, memoryview, range, slice, type(iter(())))
    for name in dir(kind)) | frozenset(dir(io.IOBase)) | frozenset(dir(io.TextIOBase))
_ECMASCRIPT = frozenset({"javascript", "typescript", "tsx"})
# `@name.setter` over a property's setter (or getter, deleter)
_ACCESSOR_DECORATOR = re.compile(r"\s*@\s*(\w+)\.(?:setter|getter|deleter)\b")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Caller:
    """A site that calls (or may call) a definition, with how it was found."""

    path: str
    line: int
    column: int
    enclosing: str | None  # qualified name of the calling definition; None: module level
    how: Literal["graph", "lexical"]  # resolved, or only a same-name candidate
    confidence: float  # see GRAPH_CONFIDENCE .. UNBOUND_CONFIDENCE
    reason: str  # one line a reviewer can check
    # how a lexical candidate arose: self.m() that may dispatch to this override, obj.m()
    # on an unknown class, or a bare name nothing binds; None for a resolved site
    candidate: Literal["override", "dynamic", "unbound"] | None = None
    sole: bool = True  # no other definition of the name could be the target
    # what the site does: call, instantiation, attribute, type; read (a module variable)
    kind: str = "call"


@dataclass(frozen=True)
class _Edge:
    site: Site
    reason: str
    self_class: str | None


@dataclass(frozen=True)
class SymbolGraph:
    """Every call site of an index, resolved once; made by :func:`build_graph` (or read
    back by :func:`pr_context.graph.stored.load_graph`)."""

    tables: Tables
    edges: Mapping[str, tuple[_Edge, ...]]  # definition -> sites resolved to it
    dynamic: Mapping[str, tuple[Site, ...]]  # method name -> calls on unknown receivers
    unbound: Mapping[str, tuple[Site, ...]]  # name -> bare calls nothing binds
    names: Mapping[str, tuple[str, ...]]  # name -> definitions with that name
    # path -> what its imports can name (graph.names.imported_targets) and the bases of
    # the classes among them, filled on use
    visible: dict[str, frozenset[str]] = field(default_factory=dict, compare=False)


def build_graph(tables: Tables) -> SymbolGraph:
    """Resolve class bases, then every site of ``tables``."""
    classes = [q for q, d in tables.definitions.items() if d.kind in CLASS_KINDS]
    bases = {cls: class_bases(tables, cls) for cls in classes}
    tables = bind_types(replace(tables, bases={c: b for c, b in bases.items() if b}))
    tables = replace(tables, named={})  # bound: what names hold no longer changes
    edges: dict[str, list[_Edge]] = defaultdict(list)
    dynamic: dict[str, list[Site]] = defaultdict(list)
    unbound: dict[str, list[Site]] = defaultdict(list)
    for site in tables.sites:
        found = resolve_site(tables, site)
        if found.state == "resolved" and found.target:
            edges[found.target].append(_Edge(site, found.reason, found.self_class))
        elif found.state == "dynamic" and site.kind in _CANDIDATE_KINDS:
            dynamic[site.name].append(site)
        elif found.state == "unbound" and site.kind in _CANDIDATE_KINDS:
            unbound[site.name].append(site)
    return SymbolGraph(tables, _freeze(edges), _freeze(dynamic), _freeze(unbound),
                       graph_names(tables))


def edge(site: Site, reason: str, self_class: str | None) -> _Edge:
    """A site resolved to a definition (for graphs read back by graph.stored)."""
    return _Edge(site, reason, self_class)


def graph_names(tables: Tables) -> dict[str, tuple[str, ...]]:
    """name -> the definitions of ``tables`` with that name (:attr:`SymbolGraph.names`)."""
    return _freeze(_by_name(tables))


def callers_of(graph: SymbolGraph, qualified_name: str) -> list[Caller]:
    """Sites that call ``qualified_name``, graph first, sorted by (how, path, line).

    A site is listed once, under its strongest evidence. An unknown name has no callers.
    """
    d = graph.tables.definitions.get(qualified_name)
    if d is None:
        return []
    found: dict[tuple[str, int, int], Caller] = {}
    for caller in _all_callers(graph, qualified_name):
        key = (caller.path, caller.line, caller.column)
        if key not in found or found[key].confidence < caller.confidence:
            found[key] = caller
    return sorted(found.values(), key=lambda c: (c.how, c.path, c.line, c.column))


def _all_callers(graph: SymbolGraph, qualified_name: str) -> Iterator[Caller]:
    # A type's own members naming it (a Go method's receiver, a Rust impl's return type)
    # are the type, not its users.
    own = qualified_name + "."
    yield from (_caller(e.site, "graph", GRAPH_CONFIDENCE, e.reason)
                for e in graph.edges.get(qualified_name, ())
                if e.site.kind != "type" or not _inside(e.site.enclosing, qualified_name, own))
    yield from _constructor_callers(graph, qualified_name)
    yield from _served_callers(graph, qualified_name)
    yield from _override_callers(graph, qualified_name)
    yield from _lexical_callers(graph, qualified_name)


def is_accessor_decorator(tables: Tables, path: str, line: int, name: str) -> bool:
    """Whether ``path``'s ``line`` is ``@name.setter`` (``.getter``, ``.deleter``) over a
    property's other accessor: it names the property object in the class body (a caller
    to update when the property is renamed), it reads no instance's value (it runs
    nothing)."""
    found = _ACCESSOR_DECORATOR.match(tables.lines.get(path, {}).get(line, ""))
    return found is not None and found.group(1) == name


def _constructor_callers(graph: SymbolGraph, qualified_name: str) -> Iterator[Caller]:
    d = graph.tables.definitions[qualified_name]
    cls = graph.tables.definitions.get(d.parent or "")
    if cls is None or cls.kind not in CLASS_KINDS or (
            d.name not in _CONSTRUCTORS and d.name != cls.name):
        return
    for edge in graph.edges.get(cls.qualified_name, ()):
        if edge.site.kind in _INSTANTIATING:
            yield _caller(edge.site, "graph", GRAPH_CONFIDENCE,
                          f"{edge.reason}, which runs its constructor")


def _served_callers(graph: SymbolGraph, qualified_name: str) -> Iterator[Caller]:
    """A module's ``__getattr__`` runs where a name it serves is read from the module."""
    d = graph.tables.definitions[qualified_name]
    if not is_module_getattr(d):
        return
    module = graph.tables.file_module.get(d.path, "")
    for site in served_reads(graph.tables, d, served_by(graph.tables, d)):
        yield _caller(site, "graph", GRAPH_CONFIDENCE,
                      f"reads {site.name} from {module}, which its __getattr__ serves")


def _override_callers(graph: SymbolGraph, qualified_name: str) -> Iterator[Caller]:
    """``self.m()`` in a base class may dispatch to this override of ``m``."""
    d = graph.tables.definitions[qualified_name]
    if d.kind != "method" or d.parent is None:
        return
    # self in class C can be an instance of d.parent when C is d.parent or one of its bases
    overriding = set(mro(graph.tables, d.parent))
    for base in list(mro(graph.tables, d.parent))[1:]:
        for edge in graph.edges.get(f"{base}.{d.name}", ()):
            if edge.self_class in overriding:
                yield replace(_caller(edge.site, "lexical", OVERRIDE_CONFIDENCE,
                                      f"{edge.reason}; may dispatch to the override in "
                                      f"{d.parent}"), candidate="override", sole=False)


def _lexical_callers(graph: SymbolGraph, qualified_name: str) -> Iterator[Caller]:
    """Same-name candidates: calls on receivers of unknown class and bare names nothing
    binds, in files of the definition's language family (JavaScript's ``console.warn()``
    never calls a Python method)."""
    d = graph.tables.definitions[qualified_name]
    family = _family(d.language)
    same_name = [q for q in graph.names.get(d.name, ())
                 if _family(graph.tables.definitions[q].language) == family]
    if d.kind == "method" and not (d.language == "python" and d.name in BUILTIN_METHOD_NAMES):
        methods = [q for q in same_name if graph.tables.definitions[q].kind == "method"]
        share = DYNAMIC_CONFIDENCE / max(len(methods), 1)
        for site in graph.dynamic.get(d.name, ()):
            if _family(site.language) == family and not _likelier_homonym(
                    graph, site, d, methods) and not _declared_otherwise(graph, site, d):
                yield replace(_caller(site, "lexical", share,
                                      _candidate_reason(site, len(methods))),
                              candidate="dynamic", sole=len(methods) <= 1)
    bare = [q for q in same_name if graph.tables.definitions[q].kind != "method"]
    if d.kind != "method" or d.language == "java":
        homonyms = len(same_name if d.language == "java" else bare)
        share = UNBOUND_CONFIDENCE / max(homonyms, 1)
        for site in graph.unbound.get(d.name, ()):
            if _family(site.language) == family:
                yield replace(_caller(
                    site, "lexical", share,
                    f"{d.name}() is not bound in {site.path}; same-name candidate"),
                    candidate="unbound", sole=homonyms <= 1)


def _declared_otherwise(graph: SymbolGraph, site: Site, d: Def) -> bool:
    """Whether the receiver is declared as a library class (``log: logging.Logger``)
    that ``d``'s class does not derive from: the call is that class's method or an
    override of it in a subclass, not ``d``."""
    if d.parent is None:
        return False
    declared = declared_library_class(graph.tables, site)
    return declared is not None and not derives_from(graph.tables, d.parent, declared)


def _likelier_homonym(graph: SymbolGraph, site: Site, d: Def, methods: list[str]) -> bool:
    """Whether, in Python, the calling file can name the class of another method of this
    name but not ``d``'s (nor a class related to it by inheritance): ``rep._to_json()``
    in a file that imports the reports, not the subtests, calls the reports' method."""
    if d.language != "python" or len(methods) <= 1 or d.parent is None:
        return False
    tables, own = graph.tables, d.parent
    if can_name(graph, site.path, own):
        return False
    related = set(mro(tables, own))
    others = {tables.definitions[m].parent for m in methods if m != d.qualified_name}
    return any(other and other not in related and own not in set(mro(tables, other))
               and can_name(graph, site.path, other) for other in others)


def can_name(graph: SymbolGraph, path: str, cls: str) -> bool:
    """Whether ``path`` defines or imports ``cls``, a subclass of it, its module or a
    package above it."""
    if path not in graph.visible:
        graph.visible[path] = _with_bases(graph.tables, imported_targets(graph.tables, path))
    module = graph.tables.file_module.get(graph.tables.definitions[cls].path, "")
    return any(name == target or name.startswith(target + ".")
               for target in graph.visible[path] if target for name in (cls, module))


def _with_bases(tables: Tables, targets: frozenset[str]) -> frozenset[str]:
    """``targets`` and the index bases of the classes among them: an instance of an
    imported ``TestReport`` has the methods of its base ``BaseReport``."""
    classes = (resolve_dotted(tables, t) for t in targets)
    return targets | {base for cls in classes if cls and _is_class(tables, cls)
                      for base in mro(tables, cls)}


def _is_class(tables: Tables, qualified_name: str) -> bool:
    d = tables.definitions.get(qualified_name)
    return d is not None and d.kind in CLASS_KINDS


def _family(language: str) -> str:
    return "ecmascript" if language in _ECMASCRIPT else language


def _candidate_reason(site: Site, count: int) -> str:
    of = "the only method" if count == 1 else f"one of {count} methods"
    return (f"{site.receiver}.{site.name}(): class of {site.receiver} unknown; "
            f"{of} named {site.name}")


def _caller(site: Site, how: Literal["graph", "lexical"], confidence: float,
            reason: str) -> Caller:
    return Caller(site.path, site.line, site.column, site.enclosing, how,
                  round(confidence, 3), reason, kind=site.kind)


def _inside(enclosing: str | None, qualified_name: str, prefix: str) -> bool:
    return enclosing is not None and (enclosing == qualified_name
                                      or enclosing.startswith(prefix))


def _by_name(tables: Tables) -> dict[str, list[str]]:
    names: dict[str, list[str]] = defaultdict(list)
    for qualified, d in tables.definitions.items():
        names[d.name].append(qualified)
    return names


def _freeze(mapping: Mapping[str, list[_T]]) -> dict[str, tuple[_T, ...]]:
    return {key: tuple(values) for key, values in mapping.items()}
