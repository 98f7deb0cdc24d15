"""The symbol graph kept in its index, so a later process reads it instead of building it.

Building the graph of an index (binding types, resolving every site) costs seconds on a
large repository, and a review needs the graph of its base revision, whose index the
action keeps from run to run. :func:`store_graph` writes what :func:`build_graph` adds
to the index's own rows into the index file (the ``graph_*`` tables of migration m006):
the class bases, the bound types, each site's resolution and what the resolution
remembered of functions' return values. :func:`load_graph` reads them back into the
very graph a build would make, or builds the graph when they are missing or stale.

The facts are plain rows, never pickled objects: a forged index file can make answers
wrong but runs no code. They hold for the index content and the pr-context code they
were made from (``graph_marks``: a hash of the index's per-file digests and of this
package's source files); with any other content, or code, the graph is built again. An
update of the index deletes them with the paths it replaces.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import pr_context
from pr_context.collector import collector_paused
from pr_context.graph.callers import SymbolGraph, build_graph, edge, graph_names
from pr_context.graph.infer import Inferred
from pr_context.graph.tables import Assignment, Def, Site, Tables, read_tables
from pr_context.index.store import IndexStore, TableRows
from pr_context.progress import Progress, SilentProgress

__all__ = ["GRAPH_STAGE", "graph_rows", "load_graph", "store_graph", "stored_graph"]

_KEPT_STATES = ("resolved", "dynamic", "unbound")
_DEFINITION = "definition"  # a remembered value that is a definition (graph.typed)
GRAPH_STAGE = "resolving call sites"  # store_graph's progress stage


def store_graph(db: Path, progress: Progress | None = None) -> bool:
    """Build the graph of the index at ``db`` and store it there, unless it is stored and
    current. Returns whether it was built; ``progress`` hears of it as a stage (its call
    sites resolved): it is built whole, after any update, in seconds on a large index.

    :raises IndexFileError: the file cannot be read or written.
    """
    progress = progress or SilentProgress()
    with IndexStore.open_existing(db, writable=True) as store:
        inputs = _inputs(store)
        if _stored_inputs(store) == inputs:
            return False
        with collector_paused():  # millions of objects, all alive until written
            tables = read_tables(store)
            progress.start(GRAPH_STAGE, len(tables.sites))
            rows = graph_rows(build_graph(tables))
        store.replace_graph({**rows, "graph_marks": {"inputs": [inputs]}})
        progress.advance(len(tables.sites))
        progress.finish()
        return True


def load_graph(store: IndexStore, tables: Tables | None = None) -> SymbolGraph:
    """The graph of ``store`` (whose tables are ``tables`` when already read): its
    stored facts when current, else built from its rows."""
    tables = tables if tables is not None else read_tables(store)
    if _stored_inputs(store) == _inputs(store):
        return stored_graph(tables, {t: store.query(_SELECT[t]) for t in _SELECT})
    return build_graph(tables)


def graph_rows(graph: SymbolGraph) -> dict[str, TableRows]:
    """The rows of the ``graph_*`` tables that, with the index's own rows, make ``graph``."""
    t = graph.tables
    return {
        "graph_sites": _columns(_site_rows(graph), ("site", "state", "target", "reason",
                                                    "self_class")),
        "graph_bindings": _columns(_binding_rows(t), ("mapping", "ordinal", "scope", "name",
                                                      "line", "cls", "how", "iterable")),
        "graph_returns": _columns(
            ((n, f, line, value) for n, (f, line, value) in enumerate(
                (f, line, value) for f, values in t.returns.items() for line, value in values)),
            ("ordinal", "function", "line", "value")),
        "graph_names": _columns(_name_rows(t), ("mapping", "ordinal", "owner", "name",
                                                "target")),
        "graph_memo": _columns(_memo_rows(t.returned), ("ordinal", "function", "owner",
                                                        "kind", "target", "how", "bound")),
    }


def stored_graph(tables: Tables, rows: Mapping[str, list[tuple[Any, ...]]]) -> SymbolGraph:
    """The graph :func:`build_graph` makes of ``tables``, from the rows of
    :func:`graph_rows` (as ``_SELECT`` reads them) instead of resolving anything."""
    names = _names(rows["graph_names"])
    variables, attributes, globals_ = _bindings(rows["graph_bindings"])
    bound = replace(
        tables, bases={c: tuple(b) for c, b in names["bases"].items()},
        members={c: frozenset(filter(None, m)) for c, m in names["members"].items()},
        aliases={(p, n): target for (p, n), target in names["aliases"].items()},
        returns=_returns(rows["graph_returns"]), file_bindings={}, variables=variables,
        attributes=attributes, globals=globals_)
    bound = replace(bound, returned=_memo(rows["graph_memo"], bound.definitions), named={})
    return _resolved(bound, rows["graph_sites"])


# -- writing --------------------------------------------------------------------------------


def _site_rows(graph: SymbolGraph) -> Iterator[tuple[Any, ...]]:
    """(site index, state, target, reason, self class) of every site the graph keeps, in
    site order."""
    index = {id(site): n for n, site in enumerate(graph.tables.sites)}
    found: list[tuple[int, str, str | None, str, str | None]] = [
        (index[id(e.site)], "resolved", target, e.reason, e.self_class)
        for target, edges in graph.edges.items() for e in edges]
    found += [(index[id(site)], state, None, "", None)
              for state, by_name in (("dynamic", graph.dynamic), ("unbound", graph.unbound))
              for sites in by_name.values() for site in sites]
    return iter(sorted(found, key=lambda row: row[0]))


def _binding_rows(tables: Tables) -> Iterator[tuple[Any, ...]]:
    held: Iterable[tuple[str, tuple[str, str], Iterable[Assignment]]] = (
        *(("variables", key, values) for key, values in tables.variables.items()),
        *(("attributes", key, (value,)) for key, value in tables.attributes.items()),
        *(("globals", key, (value,)) for key, value in tables.globals.items()))
    ordinal = 0
    for mapping, (scope, name), values in held:
        for a in values:
            yield mapping, ordinal, scope, name, a.line, a.cls, a.how, a.iterable
            ordinal += 1


def _name_rows(tables: Tables) -> Iterator[tuple[Any, ...]]:
    """Class bases, class members (a class with none: one row without a name), and
    module-level aliases, each in its mapping's order."""
    rows: list[tuple[str, str, str | None, str | None]] = [
        ("bases", cls, None, base) for cls, bases in tables.bases.items() for base in bases]
    rows += [("members", cls, None, member) for cls, members in tables.members.items()
             for member in _or_none(sorted(members))]
    rows += [("aliases", path, name, target) for (path, name), target in
             tables.aliases.items()]
    return ((mapping, n, owner, name, target)
            for n, (mapping, owner, name, target) in enumerate(rows))


def _or_none(items: list[str]) -> list[str | None]:
    return [*items] or [None]


def _memo_rows(memo: Mapping[tuple[str, str | None], Any]) -> Iterator[tuple[Any, ...]]:
    """What resolving remembered of functions' return values (graph.infer, graph.typed):
    an :class:`Inferred`, a definition or nothing; answered again by evaluation order
    in a recursion, so it is kept as it was, not worked out anew."""
    for n, ((function, owner), value) in enumerate(memo.items()):
        if isinstance(value, Inferred):
            yield n, function, owner, value.kind, value.target, value.how, value.owner
        elif isinstance(value, Def):
            yield n, function, owner, _DEFINITION, value.qualified_name, None, None
        else:
            yield n, function, owner, None, None, None, None


def _columns(rows: Iterable[tuple[Any, ...]], names: tuple[str, ...]) -> TableRows:
    columns: TableRows = {name: [] for name in names}
    for row in rows:
        for name, value in zip(names, row, strict=True):
            columns[name].append(value)
    return columns


# -- reading --------------------------------------------------------------------------------


_SELECT = {
    "graph_sites": "SELECT site, state, target, reason, self_class FROM graph_sites "
                   "ORDER BY site",
    "graph_bindings": "SELECT mapping, scope, name, line, cls, how, iterable "
                      "FROM graph_bindings ORDER BY mapping, ordinal",
    "graph_returns": "SELECT function, line, value FROM graph_returns ORDER BY ordinal",
    "graph_names": "SELECT mapping, owner, name, target FROM graph_names "
                   "ORDER BY mapping, ordinal",
    "graph_memo": "SELECT function, owner, kind, target, how, bound FROM graph_memo "
                  "ORDER BY ordinal",
}


def _names(rows: Iterable[tuple[Any, ...]]) -> dict[str, dict[Any, Any]]:
    found: dict[str, dict[Any, Any]] = {"bases": {}, "members": {}, "aliases": {}}
    for mapping, owner, name, target in rows:
        if mapping == "aliases":
            found[mapping][(owner, name)] = target
        else:
            found[mapping].setdefault(owner, []).append(target)
    return found


_Bound = dict[tuple[str, str], Assignment]


def _bindings(rows: Iterable[tuple[Any, ...]]
              ) -> tuple[dict[tuple[str, str], tuple[Assignment, ...]], _Bound, _Bound]:
    """The tables' variables, attributes and globals."""
    variables: dict[tuple[str, str], list[Assignment]] = defaultdict(list)
    single: dict[str, _Bound] = {"attributes": {}, "globals": {}}
    for mapping, scope, name, line, cls, how, iterable in rows:
        held = Assignment(line, cls, how, iterable)
        if mapping == "variables":
            variables[(scope, name)].append(held)
        else:
            single[mapping][(scope, name)] = held
    return ({k: tuple(v) for k, v in variables.items()}, single["attributes"],
            single["globals"])


def _returns(rows: Iterable[tuple[Any, ...]]) -> dict[str, tuple[tuple[int, str], ...]]:
    found: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for function, line, value in rows:
        found[function].append((line, value))
    return {f: tuple(values) for f, values in found.items()}


def _memo(rows: Iterable[tuple[Any, ...]], definitions: Mapping[str, Def]
          ) -> dict[tuple[str, str | None], Any]:
    memo: dict[tuple[str, str | None], Any] = {}
    for function, owner, kind, target, how, bound in rows:
        memo[(function, owner)] = (None if kind is None else definitions.get(target)
                                   if kind == _DEFINITION else
                                   Inferred(kind, target, how, bound))
    return memo


def _resolved(tables: Tables, rows: Iterable[tuple[Any, ...]]) -> SymbolGraph:
    sites: tuple[Site, ...] = tables.sites
    edges: dict[str, list[Any]] = defaultdict(list)
    by_state: dict[str, dict[str, list[Site]]] = {"dynamic": defaultdict(list),
                                                  "unbound": defaultdict(list)}
    for index, state, target, reason, self_class in rows:
        site = sites[index]
        if state == "resolved":
            edges[target].append(edge(site, reason, self_class))
        else:
            by_state[state][site.name].append(site)
    return SymbolGraph(tables, _frozen(edges), _frozen(by_state["dynamic"]),
                       _frozen(by_state["unbound"]), graph_names(tables))


def _frozen(mapping: Mapping[str, list[Any]]) -> dict[str, tuple[Any, ...]]:
    return {key: tuple(values) for key, values in mapping.items()}


# -- validity -------------------------------------------------------------------------------


def _stored_inputs(store: IndexStore) -> str | None:
    rows = store.query("SELECT inputs FROM graph_marks")
    return str(rows[0][0]) if len(rows) == 1 else None


def _inputs(store: IndexStore) -> str:
    """What stored facts must have been made from: this index content, this code."""
    return hashlib.sha256(f"{store.paths_digest()}\n{code_digest()}".encode()).hexdigest()


@lru_cache(maxsize=1)
def code_digest() -> str:
    """A hash of every Python source file of the pr_context package: facts made by other
    code are never read (a graph rule that changed would otherwise go unnoticed)."""
    root = Path(pr_context.__file__).parent
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()
