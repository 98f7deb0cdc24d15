"""What a Python name or expression holds, where the source makes it evident.

:func:`infer` reads an expression (``pm.hook.get(1)``, ``self.root``, ``C()``,
``make_client()``) left to right. A name is a local whose class is known
(:func:`variable_class`), ``self``/``cls`` of the enclosing class, a module-level name
every assignment of which agrees (in the file, or imported from it), or what an import
or definition binds. ``.attr`` is a module member, a class's method or nested class, an
instance's ``self.attr`` (every assignment of which agrees), its property's return
annotation, or, for an attribute the class never sets, its ``__getattr__``'s return
annotation. ``(...)`` instantiates a class or gives what a function's return annotation
names. Anything else is unknown: nothing is guessed from names, and nothing is inferred
through untyped calls, containers, operators or branches.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

from pr_context.graph.annotations import annotated_type, parameter_names, return_annotation
from pr_context.graph.expressions import (
    alternatives,
    call_parts,
    closing_bracket,
    comprehension_source,
)
from pr_context.graph.names import (
    MAX_HOPS,
    bind_name,
    enclosing_class,
    method_in,
    mro,
    resolve_dotted,
)
from pr_context.graph.tables import CLASS_KINDS, Assignment, Def, Tables

__all__ = ["Inferred", "infer", "is_inferable", "is_local", "variable_class"]

FUNCTION_KINDS = frozenset({"function", "method"})
# A chain longer than this is generated code or a fluent builder nobody annotates.
_MAX_TRAILERS = 12
# Expressions _chain remembers: more than a large repository's distinct ones.
_CHAINS = 1 << 17
_NAME = re.compile(r"[A-Za-z_]\w*")
_AWAIT = re.compile(r"\s*await\s+")
_DECORATOR = re.compile(r"@(?:[\w.]+\.)?(\w+)\s*(?:\(.*\))?\s*(?:#.*)?")
_PROPERTIES = frozenset({"property", "cached_property"})
# Decorators that keep a function's return annotation true of what calling it returns.
# Any other (``@overload``: one of several signatures; ``@contextmanager``,
# ``@click.command``: a wrapper object) leaves the call's value unknown.
_TRANSPARENT = frozenset({
    "staticmethod", "classmethod", "abstractmethod", "override", "final", "cache",
    "lru_cache", "wraps", "no_type_check",
})
_SELF_TYPES = frozenset({"Self", "typing.Self", "typing_extensions.Self", "t.Self"})
_CLOSING = {"(": ")", "[": "]", "{": "}"}
# Calls whose value the standard library defines by their arguments: ``cast(T, v)`` is a
# T; a copy holds what its original does.
_CASTS = frozenset({"typing.cast", "typing_extensions.cast"})
_COPIES = frozenset({"copy.copy", "copy.deepcopy"})
_DEFINED_CALL_NAMES = frozenset(f.rpartition(".")[2] for f in _CASTS | _COPIES)
_DEFINED_CALL_OPENINGS = tuple(f"{name}(" for name in _DEFINED_CALL_NAMES)
Kind = Literal["instance", "iterable", "class", "function", "module"]


@dataclass(frozen=True)
class Inferred:
    """What an expression holds: an instance of ``target`` (``iterable``: items that are),
    the class, function or module ``target`` itself."""

    kind: Kind
    target: str
    how: str  # a clause for reasons: "assigned C(...) on line 4", "a new C"
    owner: str | None = None  # the instance's class a method is bound to (for ``-> Self``)


def infer(tables: Tables, path: str, scope: Def | None, line: int,
          text: str) -> Inferred | None:
    """What ``text``, an expression on ``line`` of ``path`` inside ``scope`` (None: at
    module level), evidently holds."""
    text = text.strip()
    if text.startswith("(") and closing_bracket(text, 0) == len(text) - 1:
        return infer(tables, path, scope, line, text[1:-1])
    branches = alternatives(text)
    if branches is not None:
        return _agreeing(tables, path, scope, line, branches)
    call = call_parts(text, _DEFINED_CALL_NAMES) if "(" in text and any(
        opening in text for opening in _DEFINED_CALL_OPENINGS) else None  # spares most
    if call is not None and (known := _defined_call(tables, path, scope, line, *call)):
        return known
    chain = _chain(text)
    if chain is None:
        return None
    head, trailers = chain
    value = _name(tables, path, scope, line, head)
    for trailer in trailers:
        if value is None:
            return None
        if trailer == "()":
            value = _called(tables, value)
        elif trailer.startswith("."):
            value = _member(tables, value, trailer[1:])
        else:
            return None  # subscripts: what an item or slice holds is not evident
    return value


def is_inferable(text: str) -> bool:
    """Whether :func:`infer` could ever tell what ``text`` holds, once names are known:
    a chain of names, attributes and calls, or operands that all are (``x = a + b``,
    ``x = []`` or a string never are, and are not inferred again and again)."""
    text = text.strip()
    if text.startswith("(") and closing_bracket(text, 0) == len(text) - 1:
        return is_inferable(text[1:-1])
    branches = alternatives(text)
    if branches is not None:
        return all(b.strip() == "None" or is_inferable(b) for b in branches)
    return _chain(text) is not None


def _agreeing(tables: Tables, path: str, scope: Def | None, line: int,
              branches: list[str]) -> Inferred | None:
    """``a if c else b``, ``a or b``: what every operand (``None`` aside) holds, if they
    agree."""
    values = [infer(tables, path, scope, line, b) for b in branches if b.strip() != "None"]
    first = values[0] if values else None
    if first is None or any(v is None or (v.kind, v.target) != (first.kind, first.target)
                            for v in values):
        return None
    return Inferred(first.kind, first.target, f"either operand, {first.how}")


def _defined_call(tables: Tables, path: str, scope: Def | None, line: int, callee: str,
                  arguments: list[str]) -> Inferred | None:
    """``typing.cast(T, v)`` (a T) and ``copy.copy(v)``/``copy.deepcopy(v)`` (what v
    holds), through the file's imports; None for any other call."""
    enclosing = scope.qualified_name if scope else None
    head, _, rest = callee.partition(".")
    binding = bind_name(tables, path, enclosing, head)
    if binding is None or is_local(tables, enclosing, head) or not arguments:
        return None
    function = ".".join(p for p in (binding.target, rest) if p)
    if function in _CASTS and len(arguments) == 2:
        named = annotated_type(tables, path, enclosing, arguments[0])
        if named is None:
            return None
        return Inferred("iterable" if named.iterable else "instance", named.cls,
                        f"cast to {arguments[0]}")
    original = infer(tables, path, scope, line, arguments[0]) if function in _COPIES else None
    return None if original is None else Inferred(
        original.kind, original.target, f"a copy of {arguments[0]}, {original.how}")


def variable_class(tables: Tables, scope: str | None, name: str,
                   line: int) -> Assignment | None:
    """What ``name`` holds at ``line`` in ``scope`` or an enclosing function, if known."""
    current = tables.definitions.get(scope or "")
    if current is None or current.kind not in FUNCTION_KINDS:
        return None
    held = [a for a in tables.variables.get((current.qualified_name, name), ())
            if a.line < line]
    if held or (current.qualified_name, name) in tables.variables:
        return held[-1] if held and held[-1].cls else None
    # A closure runs after its function has bound the name: every binding must agree.
    outer = tables.definitions.get(current.parent or "")
    while outer is not None and outer.kind in FUNCTION_KINDS:
        every = tables.variables.get((outer.qualified_name, name), ())
        if every:
            same = len({(a.cls, a.iterable) for a in every}) == 1
            return every[0] if same and every[0].cls else None
        outer = tables.definitions.get(outer.parent or "")
    return None


def is_local(tables: Tables, scope: str | None, name: str) -> bool:
    """Whether ``name`` is a parameter or assigned local of ``scope`` or a function around it.

    Such a name hides a module-level definition of the same name (a pytest fixture's
    parameter names the fixture function, but holds its value).
    """
    current = tables.definitions.get(scope or "")
    while current is not None and current.kind in FUNCTION_KINDS:
        if (current.qualified_name, name) in tables.variables or name in parameter_names(
                current.signature):
            return True
        current = tables.definitions.get(current.parent or "")
    return False


@lru_cache(maxsize=_CHAINS)
def _chain(text: str) -> tuple[str, tuple[str, ...]] | None:
    """``a.b(x).c`` as ("a", (".b", "()", ".c")); None for anything else.

    A call left open at the end of the line (its arguments go on below) counts as a call.
    Remembered: the graph and the syntax of dunder calls read the same texts many times.
    """
    found = _chain_parts(_AWAIT.sub("", text, count=1).strip())
    return (found[0], tuple(found[1])) if found else None


def _chain_parts(text: str) -> tuple[str, list[str]] | None:
    head = _NAME.match(text)
    if head is None:
        return None
    trailers: list[str] = []
    i = head.end()
    while i < len(text) and len(trailers) <= _MAX_TRAILERS:
        char = text[i]
        if char == ".":
            name = _NAME.match(text, i + 1)
            if name is None:
                return None
            trailers.append("." + name.group())
            i = name.end()
        elif char in _CLOSING:
            end = closing_bracket(text, i)
            trailers.append("()" if char == "(" else "[]")
            if end is None:
                return (head.group(), trailers) if char == "(" else None
            i = end + 1
        else:
            rest = text[i:].strip()
            return (head.group(), trailers) if not rest or rest.startswith("#") else None
    return (head.group(), trailers) if i >= len(text) else None


def _name(tables: Tables, path: str, scope: Def | None, line: int,
          name: str) -> Inferred | None:
    memo = tables.named
    if memo is None:
        return _name_held(tables, path, scope, line, name)
    key = (path, scope.qualified_name if scope else None, scope.kind if scope else None,
           line, name)
    if key not in memo:
        memo[key] = _name_held(tables, path, scope, line, name)
    found: Inferred | None = memo[key]
    return found


def _name_held(tables: Tables, path: str, scope: Def | None, line: int,
               name: str) -> Inferred | None:
    enclosing = scope.qualified_name if scope else None
    held = variable_class(tables, enclosing, name, line)
    if held is not None and held.cls:
        return _held(held, held.how)
    if is_local(tables, enclosing, name):
        return None
    cls = enclosing_class(tables, enclosing)
    in_method = cls is not None and scope is not None and scope.kind in FUNCTION_KINDS
    if name == "self" and in_method and cls:
        return Inferred("instance", cls, f"self in {cls}")
    if name == "cls" and in_method and cls:
        return Inferred("class", cls, f"cls in {cls}")
    source = comprehension_source(tables.lines.get(path, {}).get(line, ""), name)
    if source is not None:
        items = infer(tables, path, scope, line, source)
        return Inferred("instance", items.target, f"an item of {source}") if (
            items is not None and items.kind == "iterable") else None
    held = tables.globals.get((path, name))
    if held is not None and held.cls:
        return _held(held, f"{name} {held.how}")
    binding = bind_name(tables, path, enclosing, name)
    if binding is None:
        return None
    target = resolve_dotted(tables, binding.target)
    return (_named(tables, target, binding.how) if target
            else _global(tables, binding.target, binding.how))


def _held(held: Assignment, how: str) -> Inferred:
    return Inferred("iterable" if held.iterable else "instance", held.cls or "", how)


def _global(tables: Tables, dotted: str, how: str, hops: int = 0) -> Inferred | None:
    """A module-level name of the index (``from app import registry``), through re-exports."""
    module, _, name = dotted.rpartition(".")
    for path in tables.modules.get(module, ()):
        held = tables.globals.get((path, name))
        if held is not None and held.cls:
            return _held(held, f"{dotted}, {held.how}")
        binding = bind_name(tables, path, None, name)
        if binding and binding.target != dotted and hops < MAX_HOPS:
            return _global(tables, binding.target, how, hops + 1)
    return None


def _named(tables: Tables, target: str, how: str) -> Inferred | None:
    """A definition or module of the index, as a value."""
    if target in tables.modules and target not in tables.definitions:
        return Inferred("module", target, how)
    d = tables.definitions.get(target)
    if d is None:
        return None
    if d.kind in CLASS_KINDS:
        return Inferred("class", target, how)
    return Inferred("function", target, how) if d.kind in FUNCTION_KINDS else None


def _member(tables: Tables, value: Inferred, name: str) -> Inferred | None:
    if value.kind == "module":
        dotted = f"{value.target}.{name}"
        target = resolve_dotted(tables, dotted)
        return _named(tables, target, dotted) if target else _global(tables, dotted, dotted)
    if value.kind == "class":
        method = method_in(tables, value.target, name)
        return _named(tables, method, method) if method else _instance_attribute(
            tables, value.target, name)
    if value.kind != "instance":
        return None
    return (_instance_attribute(tables, value.target, name)
            or _instance_method(tables, value.target, name)
            or _dynamic_attribute(tables, value.target, name))


def _instance_attribute(tables: Tables, cls: str, name: str) -> Inferred | None:
    """``obj.attr`` (or ``Class.attr``) where every assignment of the attribute in the
    class (or a base) agrees: ``self.attr = ...``, the class body's ``attr = ...`` or
    ``attr: C``, an enum's members."""
    for c in mro(tables, cls):
        held = tables.attributes.get((c, name))
        if held is not None and held.cls:
            kind: Kind = "iterable" if held.iterable else "instance"
            return Inferred(kind, held.cls, f"{c}.{name}, {held.how}")
    return None


def _instance_method(tables: Tables, cls: str, name: str) -> Inferred | None:
    """A bound method, a nested class, or what a property's return annotation names."""
    method = method_in(tables, cls, name)
    d = tables.definitions.get(method or "")
    if d is None or method is None:
        return None
    if d.kind in CLASS_KINDS:
        return Inferred("class", method, method)
    bound = Inferred("function", method, method, owner=cls)
    return _returned(tables, bound, f"what the property {method} returns") if _is_property(
        tables, d) else bound


def _dynamic_attribute(tables: Tables, cls: str, name: str) -> Inferred | None:
    """An attribute no class in ``cls``'s bases sets: ``__getattr__`` supplies it."""
    if name.startswith("__") or any(name in tables.members.get(c, ()) for c in mro(tables, cls)):
        return None
    getter = method_in(tables, cls, "__getattr__")
    if getter is None:
        return None
    return _returned(tables, Inferred("function", getter, getter, owner=cls),
                     f"what {getter} returns for .{name}")


def _called(tables: Tables, value: Inferred) -> Inferred | None:
    if value.kind == "class":
        return Inferred("instance", value.target, f"a new {value.target}")
    if value.kind == "function":
        return _returned(tables, value, f"what {value.target}() returns")
    return None


def _returned(tables: Tables, function: Inferred, how: str) -> Inferred | None:
    """What ``function``'s return annotation names (``Self``: the bound instance's class),
    unless a decorator may change what a call returns."""
    d = tables.definitions[function.target]
    if not set(_decorators(tables, d)) <= _TRANSPARENT | _PROPERTIES:
        return None
    annotation = return_annotation(d.signature)
    if annotation is None and d.language == "python":
        return _returned_values(tables, function, how)
    if annotation and annotation.strip("'\"") in _SELF_TYPES and function.owner:
        return Inferred("instance", function.owner, f"{how}, a {function.owner} (Self)")
    named = annotated_type(tables, d.path, d.qualified_name, annotation)
    if named is None:
        return None
    kind: Kind = "iterable" if named.iterable else "instance"
    shown = f"items of {named.cls}" if named.iterable else f"a {named.cls}"
    return Inferred(kind, named.cls, f"{how}, {shown}")


def _returned_values(tables: Tables, function: Inferred, how: str) -> Inferred | None:
    """What an unannotated function returns, when every ``return value`` of its own body
    evidently holds the same class (``return None`` aside; ``return self``: the bound
    instance's). A generator, or a function returning nothing, gives nothing."""
    key = (function.target, function.owner)
    if key in tables.returned:
        found: Inferred | None = tables.returned[key]
        return found
    tables.returned[key] = None  # a recursive call returns what the other returns do
    found = _agreed_returns(tables, function, how)
    tables.returned[key] = found  # set even when None: graph.reads sees the end
    return found


def _agreed_returns(tables: Tables, function: Inferred, how: str) -> Inferred | None:
    d = tables.definitions[function.target]
    values = set()
    for line, text in tables.returns.get(d.qualified_name, ()):
        value = (Inferred("instance", function.owner, "self")
                 if function.owner and text.split("#")[0].strip() == "self"
                 else infer(tables, d.path, d, line, text))
        if value is None or value.kind not in {"instance", "iterable"}:
            return None
        values.add((value.kind, value.target, line))
    if len({(kind, target) for kind, target, _ in values}) != 1:
        return None
    kind, target, line = min(values, key=lambda v: v[2])
    shown = f"items of {target}" if kind == "iterable" else f"a {target}"
    return Inferred(kind, target, f"{how}, {shown} (returned on line {line})")


def _is_property(tables: Tables, d: Def) -> bool:
    return any(name in _PROPERTIES for name in _decorators(tables, d))


def _decorators(tables: Tables, d: Def) -> list[str]:
    """The last dotted part of each decorator above ``d``'s ``def`` (``wraps`` of
    ``@functools.wraps(f)``); a decorator that is not one name, possibly called, is "?"."""
    lines = tables.lines.get(d.path, {})
    found = []
    for number in range(d.start_line, d.end_line + 1):
        text = lines.get(number, "").strip()
        if not text.startswith("@"):
            break
        name = _DECORATOR.fullmatch(text)
        found.append(name.group(1) if name else "?")
    return found
