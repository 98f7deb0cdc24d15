"""The rows the symbol graph is built from, read once from an index.

Only :func:`read_tables` touches the index; everything else in ``pr_context.graph``
works on the :class:`Tables` it returns.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pr_context.index.store import IndexStore
from pr_context.models import Import
from pr_context.parse.code_paths import module_path

__all__ = ["CLASS_KINDS", "Def", "Site", "Tables", "read_tables", "tables_from_rows"]

# Definition kinds that own methods and can have bases.
CLASS_KINDS = frozenset({"class", "struct", "interface", "trait", "enum"})
# Languages whose module path follows from the file path alone (see code_paths).
_PATH_MODULES = frozenset({"python", "javascript", "typescript", "tsx", "rust"})
# Reference kinds that can call or name a callable; type uses and doc mentions cannot.
_SITE_KINDS = ("call", "instantiation", "attribute")
Rows = Sequence[tuple[Any, ...]]


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


@dataclass(frozen=True)
class Site:
    """One reference that may call something: a call, instantiation or attribute use."""

    path: str
    language: str
    name: str
    kind: str
    receiver: str | None
    line: int
    column: int
    enclosing: str | None


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


def read_tables(store: IndexStore) -> Tables:
    """Read the rows of ``store`` that name, import or call definitions."""
    files = store.query("SELECT path, language FROM files WHERE language IS NOT NULL "
                        "AND status = 'indexed' ORDER BY path")
    defs = store.query("SELECT path, name, qualified_name, kind, signature, parent "
                       "FROM definitions ORDER BY path, ordinal")
    imports = store.query("SELECT path, module, name, alias, level, line FROM imports "
                          "ORDER BY path, ordinal")
    kinds = ", ".join(f"'{kind}'" for kind in _SITE_KINDS)
    sites = store.query("SELECT path, name, kind, receiver, line, col, enclosing FROM refs "
                        f"WHERE kind IN ({kinds}) ORDER BY path, ordinal")
    return tables_from_rows(files, defs, imports, sites)


def tables_from_rows(files: Rows, defs: Rows, imports: Rows, sites: Rows) -> Tables:
    """Tables from raw rows, in the column order :func:`read_tables` selects."""
    language: dict[str, str] = dict(files)
    definitions: dict[str, Def] = {}
    for path, name, qualified, kind, signature, parent in defs:
        if path in language:
            definitions.setdefault(qualified, Def(path, language[path], name, qualified, kind,
                                                  signature, parent))
    file_module = _file_modules(language, definitions)
    modules: dict[str, list[str]] = defaultdict(list)
    for path, module in file_module.items():
        modules[module].append(path)
    by_path: dict[str, list[Import]] = defaultdict(list)
    for path, *imported in imports:
        by_path[path].append(Import(*imported))
    return Tables(definitions, {m: tuple(p) for m, p in modules.items()}, file_module,
                  language, {p: tuple(i) for p, i in by_path.items()},
                  tuple(Site(row[0], language[row[0]], *row[1:]) for row in sites
                        if row[0] in language))


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
