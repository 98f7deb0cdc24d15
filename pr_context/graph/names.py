"""Name binding: what a name or dotted name denotes in one file.

A *target* is a dotted name: the qualified name of a definition, a module of the index,
or something outside the index (``os.path``, ``fmt``, a variable). Imports bind names to
targets; :func:`resolve_dotted` follows re-exports (``__init__.py``, ``index.ts``
barrels, ``pub use``) and class bases until it reaches a definition or module.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from pr_context.graph.tables import CLASS_KINDS, Tables
from pr_context.models import Import
from pr_context.parse.code_paths import module_path

__all__ = [
    "Binding", "bind_name", "class_bases", "enclosing_class", "import_target",
    "imported_targets", "is_enum", "mro", "outside_bases", "resolve_dotted", "resolve_in",
]

# Re-export chains and base-class walks longer than this are cycles or generated code.
MAX_HOPS = 8
_ECMA = frozenset({"javascript", "typescript", "tsx"})
_FUNCTION_KINDS = frozenset({"function", "method"})
_GO_VERSION = re.compile(r"v\d+")
_GENERIC = re.compile(r"<[^<>]*>|\[[^\[\]]*\]")
_IDENTIFIER_PATH = re.compile(r"[A-Za-z_$][\w$]*(?:\.[A-Za-z_$][\w$]*)*")
_HERITAGE = frozenset({"extends", "implements"})
# The standard library's enum classes: a class derived from one holds its members.
_ENUM_BASES = frozenset({"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum"})


@dataclass(frozen=True)
class Binding:
    """What a name is bound to in a file, and a clause saying how, for reasons."""

    target: str
    how: str


def bind_name(tables: Tables, path: str, enclosing: str | None, name: str) -> Binding | None:
    """The binding of ``name`` at a site in ``path``: enclosing scopes, imports, module.

    None when nothing in the file binds it (a local variable, a builtin, a dynamic name).
    """
    return _bind_scope(tables, enclosing, name) or _file_binding(tables, path, name)


def _file_binding(tables: Tables, path: str, name: str) -> Binding | None:
    """What the file's imports or module scope bind ``name`` to (memoised per file)."""
    key = (path, name)
    memo = tables.file_bindings
    if key not in memo:
        memo[key] = (_bind_import(tables, path, name) or _bind_module(tables, path, name)
                     or _bind_star(tables, path, name))
    found: Binding | None = memo[key]
    return found


def resolve_dotted(tables: Tables, dotted: str, hops: int = 0) -> str | None:
    """The definition or module of the index that ``dotted`` denotes, or None."""
    if dotted in tables.definitions or dotted in tables.modules:
        return dotted
    if hops > MAX_HOPS or "." not in dotted:
        return None
    owner = resolve_dotted(tables, dotted.rpartition(".")[0], hops + 1)
    return None if owner is None else _member(tables, owner, dotted.rpartition(".")[2], hops)


def resolve_in(tables: Tables, path: str, enclosing: str | None, dotted: str) -> str | None:
    """What ``dotted`` (``Money``, ``db.Store``) denotes where ``path``'s ``enclosing``
    binds its first name: a definition or module of the index, or None."""
    head, _, rest = dotted.partition(".")
    binding = bind_name(tables, path, enclosing, head)
    if binding is None:
        return None
    return resolve_dotted(tables, ".".join(p for p in (binding.target, rest) if p))


def mro(tables: Tables, cls: str) -> tuple[str, ...]:
    """``cls`` then its bases in the index, depth first, left to right, each once."""
    memo = tables.by_bases.of(tables.bases).mros
    found = memo.get(cls)
    if found is None:
        found = memo[cls] = tuple(_mro(tables.bases, cls))
    return found


def _mro(bases: Mapping[str, tuple[str, ...]], cls: str) -> Iterator[str]:
    seen: set[str] = set()
    stack = [cls]
    while stack and len(seen) <= MAX_HOPS * 4:
        current = stack.pop()
        if current not in seen:
            seen.add(current)
            yield current
            stack.extend(reversed(bases.get(current, ())))


def method_in(tables: Tables, cls: str, name: str) -> str | None:
    """The method ``name`` that instances of ``cls`` use: its own or the nearest base's."""
    memo = tables.by_bases.of(tables.bases).methods
    key = (cls, name)
    if key not in memo:
        memo[key] = next((f"{c}.{name}" for c in mro(tables, cls)
                          if f"{c}.{name}" in tables.definitions), None)
    return memo[key]


def enclosing_class(tables: Tables, enclosing: str | None) -> str | None:
    """The innermost class around a site whose innermost definition is ``enclosing``."""
    current = tables.definitions.get(enclosing or "")
    while current is not None:
        if current.kind in CLASS_KINDS:
            return current.qualified_name
        current = tables.definitions.get(current.parent or "")
    return None


def class_bases(tables: Tables, cls: str) -> tuple[str, ...]:
    """The bases of ``cls`` named in its signature that resolve to index classes."""
    d = tables.definitions[cls]
    found = []
    for text in _base_names(d.signature, d.language):
        target = resolve_in(tables, d.path, d.parent, text)
        if target and target != cls and target in tables.definitions:
            found.append(target)
    return tuple(found)


def is_enum(tables: Tables, cls: str) -> bool:
    """Whether the Python class ``cls`` derives, through index classes, from an enum class
    outside the index (``enum.Enum``, ``IntEnum``, ``StrEnum``, ``Flag``, ...)."""
    for current in mro(tables, cls):
        d = tables.definitions.get(current)
        if d is None or d.language != "python":
            continue
        for text in _base_names(d.signature, "python"):
            if text.rpartition(".")[2] in _ENUM_BASES and resolve_in(
                    tables, d.path, d.parent, text) not in tables.definitions:
                return True
    return False


def outside_bases(tables: Tables, cls: str) -> list[str]:
    """The dotted names (``logging.Formatter``) of the Python bases of ``cls`` that name
    no index class, as the class's file imports them: library classes."""
    d = tables.definitions[cls]
    if d.language != "python":
        return []
    found = []
    for text in _base_names(d.signature, d.language):
        if resolve_in(tables, d.path, d.parent, text) in tables.definitions:
            continue
        head, _, rest = text.partition(".")
        binding = bind_name(tables, d.path, d.parent, head)
        if binding is not None:
            found.append(f"{binding.target}.{rest}" if rest else binding.target)
    return found


def _base_names(signature: str, language: str) -> list[str]:
    """Dotted base names in a class signature: ``class C(a.B, M)``, ``extends B implements I``."""
    text = signature
    while _GENERIC.search(text):
        text = _GENERIC.sub("", text)
    if language == "python":
        inside = text.partition("(")[2].rpartition(")")[0]
        return [p.strip() for p in inside.split(",") if p.strip() and "=" not in p
                and _IDENTIFIER_PATH.fullmatch(p.strip())]
    if language in _ECMA or language == "java":
        words = text.split()
        start = next((i for i, w in enumerate(words) if w in _HERITAGE), len(words))
        return [w for w in _IDENTIFIER_PATH.findall(" ".join(words[start:]))
                if w not in _HERITAGE]
    return []


def _member(tables: Tables, owner: str, name: str, hops: int) -> str | None:
    if owner in tables.modules:
        return _export(tables, owner, name, hops + 1)
    d = tables.definitions.get(owner)
    return method_in(tables, owner, name) if d and d.kind in CLASS_KINDS else None


def _export(tables: Tables, module: str, name: str, hops: int) -> str | None:
    """What ``module`` exports as ``name``: its own definition, a submodule, a re-export,
    another name for a definition (``URL = Url``)."""
    own = f"{module}.{name}" if module else name
    if own in tables.definitions or own in tables.modules:
        return own
    if name == "default":
        return _default_export(tables, module)
    if hops > MAX_HOPS:
        return None
    for path in tables.modules.get(module, ()):
        alias = tables.aliases.get((path, name))
        if alias:
            return resolve_dotted(tables, alias, hops + 1)
        binding = _bind_import(tables, path, name) or _bind_star(tables, path, name, hops)
        target = binding and resolve_dotted(tables, binding.target, hops + 1)
        if target:
            return target
    return None


def _default_export(tables: Tables, module: str) -> str | None:
    files = set(tables.modules.get(module, ()))
    return next((d.qualified_name for d in tables.definitions.values() if d.path in files
                 and d.signature.startswith("export default")), None)


def _bind_scope(tables: Tables, enclosing: str | None, name: str) -> Binding | None:
    """A function nested in an enclosing function, or (Java) a method of the class.

    In a Python class body (a site whose innermost definition is the class: a field's
    value, a method's decorator), the class's own methods and nested classes bind too;
    its bases' do not, and a method body sees none of them.
    """
    current = tables.definitions.get(enclosing or "")
    if current is not None and current.kind in CLASS_KINDS and current.language == "python":
        qualified = f"{current.qualified_name}.{name}"
        if qualified in tables.definitions:
            return Binding(qualified, f"defined in the class body of {current.qualified_name}")
    while current is not None:
        qualified = f"{current.qualified_name}.{name}"
        if current.kind in _FUNCTION_KINDS and qualified in tables.definitions:
            return Binding(qualified, f"defined in the enclosing {current.qualified_name}")
        if current.kind in CLASS_KINDS and current.language == "java":
            method = method_in(tables, current.qualified_name, name)
            if method and name != current.name:  # `new C()` inside C names the class
                return Binding(method, f"a method of the enclosing {current.qualified_name}")
        current = tables.definitions.get(current.parent or "")
    return None


def imported_targets(tables: Tables, path: str) -> frozenset[str]:
    """The dotted targets ``path``'s imports bind (modules and names, a * import's module),
    and its own module: what the file can name."""
    language = tables.file_language[path]
    return frozenset([tables.file_module[path], *(
        _import_target(tables, path, language, imp) for imp in tables.imports.get(path, ()))])


def import_target(tables: Tables, path: str, imp: Import) -> str:
    """The dotted target one import of ``path`` binds (for * imports, the module)."""
    return _import_target(tables, path, tables.file_language[path], imp)


def _bind_import(tables: Tables, path: str, name: str) -> Binding | None:
    language = tables.file_language[path]
    imp = _imports_by_name(tables, path, language).get(name)
    if imp is None:
        return None
    target = _import_target(tables, path, language, imp)
    shown = imp.module if language != "python" else "." * imp.level + imp.module
    verb = "imported from" if imp.name not in {None, "*"} else "import of"
    return Binding(target, f"{verb} {shown or '.'} (line {imp.line})")


def _imports_by_name(tables: Tables, path: str, language: str) -> dict[str, Import]:
    """name -> the first import of ``path`` that binds it, made once per file: names
    are looked up in a file's imports again and again (re-exports, ``*`` imports)."""
    found = tables.import_names.get(path)
    if found is None:
        found = {}
        for imp in tables.imports.get(path, ()):
            bound = _bound_name(imp, language)
            if bound is not None:
                found.setdefault(bound, imp)
        tables.import_names[path] = found
    return found


def _bind_module(tables: Tables, path: str, name: str) -> Binding | None:
    module = tables.file_module[path]
    qualified = f"{module}.{name}" if module else name
    d = tables.definitions.get(qualified)
    if d is not None and d.parent is None:
        where = "the same module" if d.path == path else f"the same package {module}"
        return Binding(qualified, f"defined in {where}")
    if tables.file_language[path] == "rust" and qualified in tables.modules:
        return Binding(qualified, f"child module {qualified}")
    alias = tables.aliases.get((path, name))
    return Binding(alias, f"assigned {alias} in the same module") if alias else None


def _bind_star(tables: Tables, path: str, name: str, hops: int = 0) -> Binding | None:
    language = tables.file_language[path]
    for imp in tables.imports.get(path, ()):
        if _is_star(imp, language):
            module = _import_target(tables, path, language, imp)
            target = _export(tables, module, name, hops + 1)
            if target:
                return Binding(target, f"from a * import of {imp.module} (line {imp.line})")
    return None


def _bound_name(imp: Import, language: str) -> str | None:
    """The name an import binds in its file; None for * imports and side effects."""
    if language == "go":
        if imp.alias in {"_", "."}:
            return None
        parts = imp.module.split("/")
        return imp.alias or (parts[-2] if len(parts) > 1 and _GO_VERSION.fullmatch(
            parts[-1]) else parts[-1])
    if imp.name == "*":
        return imp.alias if language in _ECMA else None
    if imp.name is None:
        if language in _ECMA:
            return imp.alias
        if language == "rust":
            return imp.alias or imp.module.rpartition("::")[2]
        return imp.alias or imp.module.split(".")[0]
    return imp.alias or imp.name


def _is_star(imp: Import, language: str) -> bool:
    if language == "go":
        return imp.alias == "."
    return imp.name == "*" and (imp.alias is None or language not in _ECMA)


def _import_target(tables: Tables, path: str, language: str, imp: Import) -> str:
    """The dotted target an import binds (or, for * imports, the module it reads)."""
    module = _absolute_module(tables, path, language, imp)
    if imp.name in {None, "*"}:
        if language == "python" and imp.alias is None and imp.name is None:
            return module.split(".")[0]  # `import a.b` binds `a`
        return module
    return f"{module}.{imp.name}" if module else imp.name or ""


def _absolute_module(tables: Tables, path: str, language: str, imp: Import) -> str:
    """``from ..x import y`` in pkg/a/b.py is pkg.x; ``'./util'`` in src/a.ts is src.util."""
    if language == "python":
        return _python_module(path, imp.module, imp.level)
    if language in _ECMA and imp.module.startswith("."):
        joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), imp.module))
        return module_path(joined + ".ts", "typescript")
    if language == "go":
        return _go_package(tables, imp.module)
    if language == "rust":
        return _rust_module(tables, path, imp.module)
    return imp.module.replace("/", ".").strip(".")


def _python_module(path: str, module: str, level: int) -> str:
    if level == 0:
        return module
    package = module_path(path, "python").split(".")
    if not path.endswith("__init__.py"):
        package = package[:-1]
    package = package[: len(package) - (level - 1)]
    return ".".join(p for p in [*package, module] if p)


def _go_package(tables: Tables, import_path: str) -> str:
    """The index module (package directory) an import path names, or the path itself."""
    matches = [m for m in tables.modules if m and (
        import_path == m.replace(".", "/") or import_path.endswith("/" + m.replace(".", "/")))]
    return max(matches, key=len) if matches else import_path


def _rust_module(tables: Tables, path: str, module: str) -> str:
    """``crate::a::b``, ``self::a``, ``super::a`` as a dotted module of the index."""
    parts = module.split("::")
    here = tables.file_module[path].split(".") if tables.file_module[path] else []
    if parts[0] == "crate":
        directories = path.split("/")[:-1]
        root = "/".join(directories[: len(directories) - directories[::-1].index("src")]) \
            if "src" in directories else ""
        here, parts = module_path(posixpath.join(root, "lib.rs"), "rust").split("."), parts[1:]
    elif parts[0] == "self":
        parts = parts[1:]
    elif parts[0] == "super":
        here, parts = here[:-1], parts[1:]
    else:
        return ".".join(parts)
    return ".".join(p for p in [*here, *parts] if p)
