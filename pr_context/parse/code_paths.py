"""The module path that prefixes qualified names, derived from a file's path.

Rules, by language (paths are repository-relative with ``/``; the result is dotted):

- **python**: drop ``.py``/``.pyi``, a leading ``src/`` or ``lib/``, and a trailing
  ``__init__``: ``src/shop/client.py`` → ``shop.client``, ``pkg/__init__.py`` → ``pkg``.
- **javascript, typescript, tsx**: drop the extension (and ``.d`` of ``.d.ts``) and a
  trailing ``index``; nothing else, because imports name files by relative path:
  ``src/util/index.ts`` → ``src.util``, ``web/App.tsx`` → ``web.App``.
- **go**: the package directory, ``internal/store/store.go`` → ``internal.store``; a file
  at the repository root uses its ``package`` name.
- **java**: the ``package`` declaration, ``com.acme.shop``; without one, the directory.
- **rust**: drop ``.rs`` and the last ``src`` directory; ``lib.rs``, ``main.rs`` and
  ``mod.rs`` name their directory: ``src/geometry/shapes.rs`` → ``geometry.shapes``,
  ``src/lib.rs`` → ``""``, ``crates/core/src/net/mod.rs`` → ``crates.core.net``.

An empty module path means names are qualified by their enclosing definitions only.
"""

from __future__ import annotations

import posixpath
from pathlib import PurePosixPath

__all__ = ["absolute_module", "module_path"]

_PYTHON_ROOTS = frozenset({"src", "lib"})
_RUST_DIRECTORY_FILES = frozenset({"lib", "main", "mod"})


def module_path(path: str, language: str, package: str | None = None) -> str:
    """The dotted module path for ``path``; ``package`` is Go's or Java's declared package."""
    pure = PurePosixPath(path)
    if language == "python":
        return _python_module(pure)
    if language in {"javascript", "typescript", "tsx"}:
        return _ecma_module(pure)
    if language == "go":
        return ".".join(pure.parent.parts) or (package or "")
    if language == "java":
        return package or ".".join(pure.parent.parts)
    if language == "rust":
        return _rust_module(pure)
    return ".".join(pure.with_suffix("").parts)


def _python_module(pure: PurePosixPath) -> str:
    parts = list(pure.with_suffix("").parts)
    if len(parts) > 1 and parts[0] in _PYTHON_ROOTS:
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _ecma_module(pure: PurePosixPath) -> str:
    stem = pure.with_suffix("")
    if stem.suffix == ".d":
        stem = stem.with_suffix("")
    parts = list(stem.parts)
    if len(parts) > 1 and parts[-1] == "index":
        parts.pop()
    return ".".join(parts)


def _rust_module(pure: PurePosixPath) -> str:
    parts = list(pure.with_suffix("").parts)
    directories = parts[:-1]
    if "src" in directories:
        del parts[len(directories) - 1 - directories[::-1].index("src")]
    if parts and parts[-1] in _RUST_DIRECTORY_FILES:
        parts.pop()
    return ".".join(parts)


def absolute_module(path: str, module: str, level: int, language: str) -> str:
    """The dotted module an import in ``path`` names, relative forms resolved.

    ``from ..x import y`` in pkg/a/b.py is ``pkg.x``; ``'./util'`` in src/a.ts is
    ``src.util``; Rust ``a::b`` is ``a.b``.
    """
    if language == "python" and level > 0:
        package = module_path(path, "python").split(".")
        if not path.endswith("__init__.py"):
            package = package[:-1]
        package = package[: len(package) - (level - 1)] if level > 1 else package
        return ".".join([*package, *([module] if module else [])])
    if module.startswith("."):
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), module))
        return module_path(joined + ".ts", "typescript")
    return module.replace("/", ".").replace("::", ".").strip(".")
