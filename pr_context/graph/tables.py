"""The rows the symbol graph is built from, read once from an index.

Only :func:`read_tables` touches the index; everything else in ``pr_context.graph``
works on the :class:`Tables` it returns.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby
from operator import itemgetter
from typing import Any

from pr_context.graph import declared
from pr_context.graph.class_lines import class_level_lines
from pr_context.index.store import IndexStore
from pr_context.models import Import, SyntaxUse
from pr_context.parse.code_paths import module_path

__all__ = [
    "CLASS_KINDS", "Assignment", "BasesMemo", "Def", "GraphRows", "Site", "Tables",
    "group_sites", "read_rows", "read_tables", "tables_from_rows",
]

# Definition kinds that own methods and can have bases.
CLASS_KINDS = frozenset({"class", "struct", "interface", "trait", "enum"})
# Languages whose module path follows from the file path alone (see code_paths).
_PATH_MODULES = frozenset({"python", "javascript", "typescript", "tsx", "rust"})
# Reference kinds that can call or name a definition: type uses name classes, interfaces
# and structs; doc mentions are prose.
_SITE_KINDS = ("call", "instantiation", "attribute", "type")
# Chunk kinds whose text is the source lines start_line..end_line (a part after the first
# repeats the signature lines before them); class headers elide their members.
_SOURCE_CHUNKS = ("definition", "definition_part", "module")
_LINE_LANGUAGES = "'python', 'java', 'typescript', 'tsx', 'javascript', 'go', 'rust'"
Rows = Sequence[tuple[Any, ...]]
# `    name = ...`, `    name: T`: a class-level field in a class header (multiline mode).
_FIELD = re.compile(r"^[ \t]+([A-Za-z_]\w*)[ \t]*(?::|=(?!=))", re.MULTILINE)


@dataclass(frozen=True)
class Def:
    """One definition row, with the language of its file."""

    path: str
    language: str
    name: str
    qualified_name: str
    kind: str
    signature: str
    parent: str | None
    start_line: int = 0  # 1-based, decorators included
    end_line: int = 0


@dataclass(frozen=True)
class Site:
    """One reference that may call or name a definition: a call, an instantiation, an
    attribute use or a type use."""

    path: str
    language: str
    name: str
    kind: str
    receiver: str | None
    line: int
    column: int
    enclosing: str | None


def group_sites(sites: Iterable[Site], key: Callable[[Site], str]) -> dict[str, list[Site]]:
    """``sites`` by ``key`` (their path, their name), each group in the sites' order."""
    grouped: dict[str, list[Site]] = defaultdict(list)
    for site in sites:
        grouped[key(site)].append(site)
    return dict(grouped)


@dataclass
class BasesMemo:
    """What graph.names derives from one ``bases`` mapping (each class's bases in order, and
    the method a class's instances use), remembered: tables made from others by
    ``replace`` share it, and it empties itself when asked about other bases."""

    bases: Mapping[str, tuple[str, ...]] | None = None
    mros: dict[str, tuple[str, ...]] = field(default_factory=dict)
    methods: dict[tuple[str, str], str | None] = field(default_factory=dict)

    def of(self, bases: Mapping[str, tuple[str, ...]]) -> BasesMemo:
        if self.bases is not bases:
            self.bases, self.mros, self.methods = bases, {}, {}
        return self


@dataclass(frozen=True)
class Tables:
    """Definitions, modules, imports and call sites of one index."""

    definitions: Mapping[str, Def]  # qualified name -> first definition with that name
    modules: Mapping[str, tuple[str, ...]]  # dotted module -> its files
    file_module: Mapping[str, str]  # path -> dotted module
    file_language: Mapping[str, str]
    imports: Mapping[str, tuple[Import, ...]]  # path -> imports in source order
    sites: tuple[Site, ...]
    bases: Mapping[str, tuple[str, ...]] = field(default_factory=dict)  # class -> bases
    # source lines of Python (its type inference) and typed languages (local declarations)
    lines: Mapping[str, Mapping[int, str]] = field(default_factory=dict)
    # (scope, name) -> what a local name holds, in line order; filled by build_graph
    variables: Mapping[tuple[str, str], tuple[Assignment, ...]] = field(default_factory=dict)
    # (class, attribute) -> class of what every ``self.attribute = ...`` in it assigns
    attributes: Mapping[tuple[str, str], Assignment] = field(default_factory=dict)
    # (path, name) -> class of what every module-level ``name = ...`` of the file assigns
    globals: Mapping[tuple[str, str], Assignment] = field(default_factory=dict)
    # (path, name) -> the definition a module-level ``name = Other`` makes it another name
    # of (``URL = Url``), when every assignment of the name agrees; filled by build_graph
    aliases: Mapping[tuple[str, str], str] = field(default_factory=dict)
    # class -> data attributes it sets: names assigned in its body or to ``self.name``
    members: Mapping[str, frozenset[str]] = field(default_factory=dict)
    # class -> field -> declared type (Java, TypeScript, Go, Rust)
    field_types: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    # later definitions of a qualified name ``definitions`` holds (overloads, redefinitions)
    shadowed: tuple[Def, ...] = ()
    # Python function -> (line, value) of each ``return value`` in its own body; a
    # generator has none (what calling it gives is a generator); filled by build_graph
    returns: Mapping[str, tuple[tuple[int, str], ...]] = field(default_factory=dict)
    # (function, bound class) -> what a call returns, inferred from ``returns``: a memo
    # for graph.infer, emptied whenever the names the values depend on change
    returned: dict[tuple[str, str | None], Any] = field(default_factory=dict, compare=False)
    # path -> where syntax calls dunder methods (pr_context.parse.code_syntax), as the
    # index stored them; None: tables made without them (graph.syntax parses the text)
    syntax: Mapping[str, tuple[SyntaxUse, ...]] | None = None
    # (path, name) -> what imports and module scope bind it to: a memo for graph.names,
    # filled as names are looked up (the same few names are looked up thousands of times)
    file_bindings: dict[tuple[str, str], Any] = field(default_factory=dict, compare=False)
    # path -> name -> the first of its imports binding that name (graph.names), on use
    import_names: dict[str, dict[str, Import]] = field(default_factory=dict, compare=False)
    # path -> the absolute module of each of its imports (graph.readers), filled on use
    import_sources: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    # (path, scope, its kind, line, name) -> what the name holds there (graph.infer), for
    # tables whose bindings are final (None: still being bound, nothing remembered): a
    # call's receiver and the callee its syntax use names share the first name
    named: dict[tuple[str, str | None, str | None, int, str], Any] | None = field(
        default=None, compare=False)
    # mro and method_in answers for ``bases`` (graph.names): asked ~190k times per graph
    by_bases: BasesMemo = field(default_factory=BasesMemo, compare=False)


@dataclass(frozen=True)
class Assignment:
    """From ``line`` on, a name holds an instance of ``cls`` (None: of something unknown),
    or with ``iterable``, something whose items are instances of ``cls``."""

    line: int
    cls: str | None
    how: str  # a clause for reasons: "annotated as C", "assigned C(...) on line 4"
    iterable: bool = False


@dataclass(frozen=True)
class GraphRows:
    """The rows of an index that :func:`tables_from_rows` makes tables of, each kind in
    the order of its query (by path, then ordinal), with the index's per-file digests."""

    digests: Mapping[str, str]  # path -> digest of all its rows (file_digests)
    files: Rows
    defs: Rows
    imports: Rows
    sites: Rows
    chunks: Rows
    headers: Rows
    syntax: Rows

    def tables(self, same: tuple[Tables, frozenset[str]] | None = None) -> Tables:
        """The tables of these rows; ``same``: (tables of other rows, the paths whose
        rows differ there), whose sites and syntax uses of the other paths are taken."""
        return tables_from_rows(self.files, self.defs, self.imports, self.sites,
                                self.chunks, self.headers, self.syntax, same)

    def differing(self, other: GraphRows) -> frozenset[str]:
        """The paths whose rows differ here and in ``other`` (either may lack them)."""
        return frozenset(p for p in {*self.digests, *other.digests}
                         if self.digests.get(p) != other.digests.get(p))


# The queries of GraphRows, in field order; {where} narrows them to some paths.
_KINDS = ", ".join(f"'{kind}'" for kind in _SITE_KINDS)
_CHUNK_KINDS = ", ".join(f"'{kind}'" for kind in _SOURCE_CHUNKS)
_QUERIES = (
    "SELECT path, language FROM files WHERE language IS NOT NULL AND status = 'indexed' "
    "{where} ORDER BY path",
    "SELECT path, name, qualified_name, kind, signature, parent, start_line, end_line "
    "FROM definitions WHERE true {where} ORDER BY path, ordinal",
    "SELECT path, module, name, alias, level, line FROM imports WHERE true {where} "
    "ORDER BY path, ordinal",
    "SELECT path, name, kind, receiver, line, col, enclosing FROM refs "
    f"WHERE kind IN ({_KINDS}) {{where}} ORDER BY path, ordinal",
    "SELECT c.path, c.start_line, c.end_line, c.text, c.symbol FROM chunks c JOIN files f "
    f"ON f.path = c.path WHERE f.language IN ({_LINE_LANGUAGES}) AND c.kind IN "
    f"({_CHUNK_KINDS}) {{where}} ORDER BY c.path, c.ordinal",
    "SELECT c.symbol, c.text, f.language, c.path, c.start_line, c.end_line FROM chunks c "
    f"JOIN files f ON f.path = c.path WHERE f.language IN ({_LINE_LANGUAGES}) "
    "AND c.kind = 'class_header' {where} ORDER BY c.path, c.ordinal",
    "SELECT path, line, col, operand, names, syntax, callee FROM syntax_uses WHERE true "
    "{where} ORDER BY path, ordinal",
)
# Where each kind of row holds its path (headers lead with the class).
_PATH_COLUMNS = (0, 0, 0, 0, 0, 3, 0)


def read_tables(store: IndexStore) -> Tables:
    """Read the rows of ``store`` that name, import or call definitions."""
    return read_rows(store).tables()


def read_rows(store: IndexStore, over: GraphRows | None = None) -> GraphRows:
    """The rows :func:`read_tables` reads from ``store``; given ``over``, the rows of
    another index (a pull request's base), only the paths whose rows differ are read
    and the rest are taken from ``over``: the same rows, in the same order."""
    digests = dict(store.query("SELECT path, digest FROM file_digests"))
    if over is None:
        return GraphRows(digests, *(store.query(q.format(where="")) for q in _QUERIES))
    changed = sorted(GraphRows(digests, *[()] * 7).differing(over))
    fresh = (store.query(q.format(where=f"AND {'c.' if 'c.path' in q else ''}path IN "
                                        "(SELECT unnest(?::VARCHAR[]))"), [changed])
             for q in _QUERIES)
    kept = [over.files, over.defs, over.imports, over.sites, over.chunks, over.headers,
            over.syntax]
    return GraphRows(digests, *(_patched(rows, new, frozenset(changed), column)
                                for rows, new, column in zip(kept, fresh, _PATH_COLUMNS,
                                                             strict=True)))


def _patched(rows: Rows, new: Rows, paths: frozenset[str], column: int) -> Rows:
    """``rows`` with the rows of ``paths`` replaced by ``new``, in path order (the sort is
    stable: each path's rows keep their order)."""
    merged = [row for row in rows if row[column] not in paths] + list(new)
    merged.sort(key=lambda row: row[column])
    return merged


def tables_from_rows(files: Rows, defs: Rows, imports: Rows, sites: Rows,
                     chunks: Rows = (), headers: Rows = (), syntax: Rows | None = None,
                     same: tuple[Tables, frozenset[str]] | None = None) -> Tables:
    """Tables from raw rows, in the column order :func:`read_tables` selects (``syntax``
    None: made without the syntax uses). With ``same`` (tables of other rows, and the
    paths whose rows differ there), the sites and syntax uses of every other path are
    those tables' objects, not made again (their rows are equal)."""
    language: dict[str, str] = dict(files)
    definitions: dict[str, Def] = {}
    shadowed: list[Def] = []
    for path, name, qualified, kind, signature, parent, *span in defs:
        if path in language:
            d = Def(path, language[path], name, qualified, kind, signature, parent, *span)
            if definitions.setdefault(qualified, d) is not d:
                shadowed.append(d)
    file_module = _file_modules(language, definitions)
    modules: dict[str, list[str]] = defaultdict(list)
    for path, module in file_module.items():
        modules[module].append(path)
    by_path: dict[str, list[Import]] = defaultdict(list)
    for path, *imported in imports:
        by_path[path].append(Import(*imported))
    return Tables(definitions, {m: tuple(p) for m, p in modules.items()}, file_module,
                  language, {p: tuple(i) for p, i in by_path.items()},
                  _sites(sites, language, same),
                  lines=_source_lines(chunks, headers, [*definitions.values(), *shadowed]),
                  members=_class_fields(headers), shadowed=tuple(shadowed),
                  field_types=_field_types(headers),
                  syntax=_syntax_uses(syntax, language, same) if syntax is not None else None)


def _sites(rows: Rows, language: Mapping[str, str],
           same: tuple[Tables, frozenset[str]] | None) -> tuple[Site, ...]:
    """The sites of the indexed files (with ``same``, ``rows`` are in path order)."""
    if same is None:
        return tuple(Site(row[0], language[row[0]], *row[1:]) for row in rows
                     if row[0] in language)
    kept: dict[str, list[Site]] = defaultdict(list)
    for site in same[0].sites:
        kept[site.path].append(site)
    found: list[Site] = []
    for path, group in groupby(rows, key=itemgetter(0)):
        if path not in language:
            continue
        if path in same[1] or path not in kept:
            found += (Site(path, language[path], *row[1:]) for row in group)
        else:
            found += kept[path]
    return tuple(found)


def _syntax_uses(rows: Rows, language: Mapping[str, str],
                 same: tuple[Tables, frozenset[str]] | None = None
                 ) -> dict[str, tuple[SyntaxUse, ...]]:
    """path -> its syntax uses, in source order, for the indexed files (with ``same``,
    ``rows`` are in path order, as read_rows reads them)."""
    if same is None:
        found: dict[str, list[SyntaxUse]] = defaultdict(list)
        for path, line, column, operand, names, syntax, callee in rows:
            if path in language:
                found[path].append(SyntaxUse(line, column, operand, tuple(names), syntax,
                                             callee))
        return {path: tuple(uses) for path, uses in found.items()}
    kept, differing = same[0].syntax or {}, same[1]
    return {path: kept[path] if path in kept and path not in differing else tuple(
                SyntaxUse(line, column, operand, tuple(names), syntax, callee)
                for _, line, column, operand, names, syntax, callee in group)
            for path, group in groupby(rows, key=itemgetter(0)) if path in language}


def _source_lines(chunks: Rows, headers: Rows, definitions: Sequence[Def]
                  ) -> dict[str, dict[int, str]]:
    """path -> line number -> text, from chunks whose text is their lines verbatim, and
    the class-level lines of Python class headers (attributes, fields, enum members)."""
    lines: dict[str, dict[int, str]] = defaultdict(dict)
    for path, start, end, text, _symbol in chunks:
        # A later part repeats the signature first: its own lines are the last ones.
        own = text.split("\n")[-(end - start + 1):]
        lines[path].update(zip(range(start, end + 1), own, strict=False))
    for path, rows in class_level_lines(lines, chunks, headers, definitions).items():
        for number, text in rows.items():
            lines[path].setdefault(number, text)
    return dict(lines)


def _class_fields(headers: Rows) -> dict[str, frozenset[str]]:
    """class -> names its header (its body without method bodies) assigns or annotates.

    Lines of docstrings and nested classes may add names: a superset only keeps
    ``__getattr__`` from answering for a name the class may set.
    """
    fields: dict[str, set[str]] = defaultdict(set)
    for symbol, text, language, *_span in headers:
        if language == "python":
            fields[symbol].update(_FIELD.findall(text))
    return {symbol: frozenset(names) for symbol, names in fields.items()}


def _field_types(headers: Rows) -> dict[str, dict[str, str]]:
    """class -> field -> declared type text, for the typed languages' class and struct
    headers (an ``impl`` block's header adds nothing: it declares no fields)."""
    types: dict[str, dict[str, str]] = defaultdict(dict)
    for symbol, text, language, *_span in headers:
        if language != "python":
            for name, type_name in declared.field_types(text, language).items():
                types[symbol].setdefault(name, type_name)
    return dict(types)


def _file_modules(language: Mapping[str, str], definitions: Mapping[str, Def]
                  ) -> dict[str, str]:
    """path -> module: by path rules, or (Go, Java packages) from a top-level definition."""
    modules = {path: module_path(path, lang) for path, lang in language.items()
               if lang in _PATH_MODULES}
    for d in definitions.values():
        if d.path not in modules and d.parent is None and d.qualified_name.endswith(
                "." + d.name):
            modules[d.path] = d.qualified_name[: -len(d.name) - 1]
    for path, lang in language.items():
        modules.setdefault(path, module_path(path, lang))
    return modules
