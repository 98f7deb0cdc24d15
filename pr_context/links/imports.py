"""Who imports a file, directly or through others: the import closure (pure).

Where the call graph cannot see how code is reached (a name looked up at run time, a
plugin registry, code run at import), the files whose import runs it are still known:
``import a.b.c`` runs ``a/__init__``, ``a/b/__init__`` and ``a/b/c``, and whatever they
import, so a test that imports any of those may execute it. Files of one Go or Java
package count as importing each other.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from pr_context.graph.tables import Tables
from pr_context.parse.code_paths import absolute_module

__all__ = ["ImportGraph", "import_graph"]

# Languages whose files of one package see each other without importing: a Go test file
# in the package's directory, a Java test class in the same package.
_PACKAGE_SCOPED = frozenset({"go", "java"})


@dataclass(frozen=True)
class ImportGraph:
    """path -> the files whose import statements run it (its direct importers)."""

    importers: Mapping[str, frozenset[str]]

    def closure(self, paths: Iterable[str]) -> dict[str, tuple[str, ...]]:
        """Every file importing one of ``paths`` transitively, with one import chain
        (nearest first: the file itself, then what it imports, down to the start)."""
        found: dict[str, tuple[str, ...]] = {}
        queue: deque[tuple[str, tuple[str, ...]]] = deque((p, (p,)) for p in paths)
        seen = {p for p, _ in queue}
        while queue:
            path, chain = queue.popleft()
            for importer in sorted(self.importers.get(path, ())):
                if importer not in seen:
                    seen.add(importer)
                    found[importer] = (importer, *chain)
                    queue.append((importer, (importer, *chain)))
        return found


def import_graph(tables: Tables) -> ImportGraph:
    """The reverse import graph of every file of ``tables``."""
    importers: dict[str, set[str]] = {}
    for path, imports in tables.imports.items():
        language = tables.file_language.get(path, "")
        for imp in imports:
            module = absolute_module(path, imp.module, imp.level, language)
            for target in _files_run(tables.modules, module, imp.name, language == "python"):
                if target != path:
                    importers.setdefault(target, set()).add(path)
    for files in tables.modules.values():  # a Go or Java package shares one scope
        if len(files) > 1 and tables.file_language.get(files[0]) in _PACKAGE_SCOPED:
            for path in files:
                importers.setdefault(path, set()).update(f for f in files if f != path)
    return ImportGraph({p: frozenset(i) for p, i in importers.items()})


def _files_run(modules: Mapping[str, tuple[str, ...]], module: str, name: str | None,
               packages: bool) -> set[str]:
    """Files an import of ``module`` (``from module import name``) runs: the module, in
    Python its parent packages, and, when ``name`` is a submodule, that too."""
    parts = module.split(".") if module else []
    found: set[str] = set(modules.get(module, ())) if module else set()
    for i in range(1, len(parts) if packages else 0):
        found.update(modules.get(".".join(parts[:i]), ()))
    if name and name != "*":
        found.update(modules.get(f"{module}.{name}" if module else name, ()))
    return found
